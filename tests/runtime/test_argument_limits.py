"""A model's tool call with arguments over the limit is refused, not run, and not stored whole
(issue 29.7: a 50 MB cell was stored ~8 times); the model is told why and goes on."""

from __future__ import annotations

import json

import pytest

from agi_jupyter.providers.base import MAX_TOOL_ARGUMENTS
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.runtime.conftest import MakeAgi

MODELS = ["openai:gpt-5-mini", "openai-chat:gpt-4o-mini", "anthropic:claude-haiku-4-5"]


@pytest.mark.parametrize("model", MODELS)
def test_a_tool_call_over_the_argument_limit_is_refused_and_not_stored(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, model: str
) -> None:
    agi = make_agi()
    session = agi.new_session(model=model, agent="build")
    big = {"path": "big.txt", "content": "x" * (MAX_TOOL_ARGUMENTS + 10)}
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_write", big, chunks=20)]), Turn(text="I will split it.")
    )
    result = agi.ask("write a big file", session=session.id)
    assert result.run.status == "succeeded"
    assert result.text == "I will split it."
    assert not (agi.project / "big.txt").exists()
    (call,) = agi.tool_calls(result.run.id)
    assert (call.status, call.args) == ("failed", {})
    assert "over the limit of 1,048,576" in str(call.result)
    told = json.dumps(fake_llm.requests[-1].body)
    assert "over the limit of 1,048,576" in told
    stored = json.dumps([m.parts for m in agi.messages(session.id)], default=str)
    assert len(stored) < 10_000, "the arguments are not in the history"
