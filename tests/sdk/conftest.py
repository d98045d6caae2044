"""SDK adapter tests use the runtime tests' fixtures: a project, an env pointing every provider
at the fake LLM server, and ``make_agi``."""

from __future__ import annotations

import pytest

from tests.runtime.conftest import MakeAgi, agi_env, make_agi, project

__all__ = ["MakeAgi", "agi_env", "make_agi", "project"]


@pytest.fixture
def backend() -> str:
    """The SDK adapters reach the store through the same protocol calls the runtime tests run
    on both backends; their tests (real CLIs, slow) run on SQLite only."""
    return "sqlite"
