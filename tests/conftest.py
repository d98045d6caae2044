"""Shared pytest setup. Fixtures live in plugin modules so each area owns its own."""

pytest_plugins = ["agi_jupyter.testing.pytest_plugin", "tests.postgres_server"]
