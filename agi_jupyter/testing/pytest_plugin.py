"""pytest fixtures for the fake LLM server (enable with ``pytest_plugins``).

``fake_llm``: a running ``FakeLLMServer``, reset (empty queue and log, default rule) before
each test. One server serves the whole session, so the fixture costs nothing per test.
The server module is imported only when a fixture is first used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from agi_jupyter.testing.server import FakeLLMServer


@pytest.fixture(scope="session")
def fake_llm_session() -> Iterator[FakeLLMServer]:
    """The session's fake LLM server; prefer ``fake_llm``, which resets it per test."""
    from agi_jupyter.testing.server import FakeLLMServer

    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def fake_llm(fake_llm_session: FakeLLMServer) -> Iterator[FakeLLMServer]:
    """A running fake LLM server with an empty queue and log and the default rule."""
    fake_llm_session.reset()
    yield fake_llm_session
    fake_llm_session.reset()
