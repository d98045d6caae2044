"""SDK adapter tests use the runtime tests' fixtures: a project, an env pointing every provider
at the fake LLM server, and ``make_agi``."""

from __future__ import annotations

from tests.runtime.conftest import MakeAgi, agi_env, make_agi, project

__all__ = ["MakeAgi", "agi_env", "make_agi", "project"]
