"""The ``fake_llm`` fixture and the import weight of the package."""

from __future__ import annotations

import subprocess
import sys

import openai

from agi_jupyter.testing import FakeLLMServer, Turn


def test_fixture_leaves_state_behind(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    """State a test leaves: a queued turn, a default rule, a request (``starts_clean`` checks
    the next test sees none of it, whichever runs first)."""
    fake_llm.enqueue(Turn(text="left over"), Turn(text="also left"))
    fake_llm.default_rule = lambda protocol, body: Turn(text="custom")
    assert oai.responses.create(model="m", input="x").output_text == "left over"
    assert (fake_llm.pending_turns, len(fake_llm.requests)) == (1, 1)
    assert oai.responses.create(model="m", input="y").output_text == "also left"
    assert oai.responses.create(model="m", input="z").output_text == "custom"  # queue empty


def test_fixture_starts_clean(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    assert (fake_llm.pending_turns, fake_llm.requests) == (0, [])
    assert oai.responses.create(model="m", input="x").output_text.startswith("(offline fake")


def test_fixture_is_one_session_server(
    fake_llm: FakeLLMServer, fake_llm_session: FakeLLMServer
) -> None:
    assert fake_llm is fake_llm_session
    assert fake_llm.running


def test_package_import_is_light() -> None:
    code = (
        "import sys, agi_jupyter.testing, agi_jupyter.testing.pytest_plugin\n"
        "heavy = {'openai', 'anthropic', 'httpx', 'httpx2', 'pydantic'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
