"""Fixtures for runtime tests: an ``Agi`` on a temporary project, wired to the fake server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer

MakeAgi = Callable[..., Agi]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    (folder / ".agi").mkdir(parents=True)
    return folder


@pytest.fixture
def agi_env(tmp_path: Path, fake_llm: FakeLLMServer, backend_env: dict[str, str]) -> dict[str, str]:
    """Provider keys and base URLs that point every provider at the fake server, and the
    test's store backend (every runtime test runs on SQLite and on PostgreSQL)."""
    return {
        **backend_env,
        "HOME": str(tmp_path / "home"),
        "OPENAI_API_KEY": "sk-test-openai-secret-0001",
        "OPENAI_BASE_URL": fake_llm.openai_base_url,
        "ANTHROPIC_API_KEY": "sk-test-anthropic-secret-0002",
        "ANTHROPIC_BASE_URL": fake_llm.anthropic_base_url,
        "AGI_FAKE_LLM_URL": fake_llm.openai_base_url,
        "AGI_REVIEW_MODE": "auto",  # (see tests/conftest.py)
    }


@pytest.fixture
def make_agi(project: Path, agi_env: dict[str, str]) -> Iterator[MakeAgi]:
    """Build an ``Agi`` on the test project (fast retries); closed after the test."""
    made: list[Agi] = []

    def make(**kwargs: Any) -> Agi:
        config = {"retry_backoff": [0.01, 0.01, 0.01], **kwargs.pop("config", {})}
        agi = Agi(project, env=agi_env, config=config, **kwargs)
        made.append(agi)
        return agi

    yield make
    for agi in made:
        agi.close()
