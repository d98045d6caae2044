"""A run stores the provider's response id as soon as the stream names it (seed 001 §9.5)."""

from __future__ import annotations

import time

import pytest

from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.runtime.conftest import MakeAgi

MODELS = ["openai:gpt-5-mini", "openai-chat:gpt-4o-mini", "anthropic:claude-haiku-4-5"]


@pytest.mark.parametrize("model", MODELS)
def test_a_run_stores_its_response_id_while_the_answer_streams(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, model: str
) -> None:
    agi = make_agi()
    session = agi.new_session(model=model)
    words = [f"w{i} " for i in range(12)]
    fake_llm.enqueue(Turn(chunks=words, response_id="resp_held_0001", fault=Fault(hold_after=4)))
    run = agi.submit("hello", session=session.id)
    deadline = time.monotonic() + 30
    stored = None
    while stored is None and time.monotonic() < deadline:  # the stream is held at its 4th event
        stored = agi.run(run.id).provider_response_id
        time.sleep(0.02)
    assert stored == "resp_held_0001"
    assert agi.run(run.id).status == "running", "known before the answer ends"
    fake_llm.release()
    final = [e for e in agi.follow(run.id) if e["type"] == "run.final"]
    assert final, "the run ends once released"
    done = agi.run(run.id)
    assert done.status == "succeeded"
    assert done.provider_response_id == "resp_held_0001"
    assert agi.result(run.id).text == "".join(words)
