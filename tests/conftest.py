"""Shared pytest setup. Fixtures live in plugin modules so each area owns its own."""

import os

# The product's default review mode is ``ask`` (a build agent's shell, python, edit and
# notebook calls wait for a person). Tests written before approvals existed expect those calls
# to run: every process of the suite (in-process ``Agi``, CLI, servers, kernels, subprocesses)
# inherits ``auto``; tests of approvals create their sessions with ``review_mode="ask"``,
# which wins over the environment.
os.environ["AGI_REVIEW_MODE"] = "auto"

pytest_plugins = ["agi_jupyter.testing.pytest_plugin", "tests.postgres_server"]
