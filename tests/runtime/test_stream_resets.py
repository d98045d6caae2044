"""A retried attempt is visible in the stream: ``output.text.reset`` before its first delta.

The fake server drops the first answer's stream half way (a retryable error); the run's next
attempt streams the turn again. A consumer that drops what each reset discards ends with
exactly the stored answer; ``final_only`` yields only the final attempt's text. Each wire API,
read by our HTTP reader and by the real openai/anthropic SDKs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.runtime.conftest import MakeAgi

MODELS = ["openai:gpt-5-mini", "openai-chat:gpt-4o-mini", "anthropic:claude-haiku-4-5"]
FIRST = " ".join(f"first{i}" for i in range(40))  # dropped after a few events
FINAL = "the final answer, streamed again from its start"


def _dropped_once(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text=FIRST, fault=Fault(drop_after=8)), Turn(text=FINAL))


def joined(events: list[dict[str, Any]]) -> str:
    """The text a consumer shows: deltas joined, what each reset discards dropped."""
    text = ""
    for event in events:
        if event["type"] == "output.text.delta":
            text += event["delta"]
        elif event["type"] == "output.text.reset":
            text = text[: len(text) - event["discarded_chars"]]
    return text


@pytest.mark.parametrize("wire", ["http", "sdk"])
@pytest.mark.parametrize("model", MODELS)
def test_a_consumer_that_drops_at_each_reset_ends_with_the_stored_answer(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, model: str, wire: str
) -> None:
    _dropped_once(fake_llm)
    agi = make_agi(config={"wire": wire})
    session = agi.new_session(model=model)
    events = list(agi.stream("go", session=session.id))
    types = [e["type"] for e in events]
    (reset,) = [e for e in events if e["type"] == "output.text.reset"]
    streamed = "".join(e["delta"] for e in events[: events.index(reset)] if "delta" in e)
    assert streamed
    assert FIRST.startswith(streamed)
    assert reset["discarded_chars"] == len(streamed)  # ...and is all taken back
    assert reset["attempt"] == 2
    # The reset comes after the retryable error, before the status and the next attempt.
    at = types.index("output.text.reset")
    assert types[at - 1] == "error"
    assert events[at - 1]["retryable"]
    assert types[at + 1] == "run.status"
    assert events[at + 1]["status"] == "queued"
    assert "output.text.delta" in types[at:]
    result = agi.result(events[-1]["run_id"])
    assert (result.run.status, result.run.attempt, result.text) == ("succeeded", 2, FINAL)
    assert joined(events) == result.text
    without = "".join(e["delta"] for e in events if e["type"] == "output.text.delta")
    assert without == streamed + FINAL  # what a consumer that ignores resets would show


def test_final_only_yields_only_the_final_attempts_text(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    _dropped_once(fake_llm)
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    events = list(agi.stream("go", session=session.id, final_only=True))
    types = [e["type"] for e in events]
    assert "output.text.reset" not in types
    assert "".join(e["delta"] for e in events if e["type"] == "output.text.delta") == FINAL
    assert next(e for e in events if e["type"] == "error")["retryable"]  # the retry still shows
    assert types[0] == "run.meta"
    assert types[-1] == "run.final"
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs)  # held events keep their order
    assert agi.result(events[-1]["run_id"]).text == FINAL


def test_astream_final_only_too(make_agi: MakeAgi, fake_llm: FakeLLMServer) -> None:
    _dropped_once(fake_llm)
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")

    async def collect() -> list[dict[str, Any]]:
        return [e async for e in agi.astream("go", session=session.id, final_only=True)]

    events = asyncio.run(collect())
    assert "".join(e["delta"] for e in events if e["type"] == "output.text.delta") == FINAL
    assert events[-1]["run"]["status"] == "succeeded"


def test_the_reset_is_stored_with_the_deltas_only(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    """A reader of the stored events sees a reset only when it also sees the deltas it
    discards (``persist_deltas``): without them it would take back text it never had."""
    _dropped_once(fake_llm)
    _dropped_once(fake_llm)
    kept = make_agi(config={"persist_deltas": True})
    run_id = kept.ask("go", session=kept.new_session(model="openai-chat:gpt-4o-mini").id).run_id
    stored = list(kept.follow(run_id))
    assert [e for e in stored if e["type"] == "output.text.reset"]
    assert joined(stored) == kept.result(run_id).text == FINAL
    kept.close()
    lean = make_agi(config={"persist_deltas": False})
    run_id = lean.ask("go", session=lean.new_session(model="openai-chat:gpt-4o-mini").id).run_id
    types = {e.type for e in lean.store.list_run_events(run_id)}
    assert "output.text.reset" not in types
    assert "output.text.delta" not in types


def test_an_attempt_that_takes_over_a_dead_owners_turn_takes_its_stored_deltas_back(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    """A process died mid-turn after storing deltas (``persist_deltas``) that a follower in
    another process showed; no ending sent a reset, so the attempt that takes over does."""
    fake_llm.enqueue(Turn(text=FINAL))
    agi = make_agi(config={"persist_deltas": True})
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    run = agi.submit("go", session=session.id, start=False)
    fence = agi.store.claim_run(run.id, agi.run(run.id).version, owner="dead-host:1:x")
    assert fence is not None
    shown = "half an answer"
    agi.store.append_run_events(
        run.id, [("output.text.delta", {"delta": shown})], seqs=[1], fence=fence
    )
    agi.store.update_run(run.id, heartbeat_at="2000-01-01T00:00:00.000Z", attempt=1)
    assert agi.tick().recovered == 1
    events = list(agi.follow(run.id))
    (reset,) = [e for e in events if e["type"] == "output.text.reset"]
    assert (reset["attempt"], reset["discarded_chars"]) == (2, len(shown))
    assert joined(events) == agi.result(run.id).text == FINAL


@pytest.mark.parametrize("wire", ["http", "sdk"])
def test_a_background_response_that_drops_is_resumed_with_no_reset(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, wire: str
) -> None:
    """Seed 001 §9.5 (issue 29.10): with ``background: true`` (a model's ``extra_body``), a
    dropped stream is read on from where it broke — one answer, no reset, no second attempt,
    the response paid for once."""
    fake_llm.enqueue(Turn(text=FIRST, fault=Fault(drop_after=8)))
    agi = make_agi(
        config={"wire": wire, "models": {"gpt-5-mini": {"extra_body": {"background": True}}}}
    )
    session = agi.new_session(model="openai:gpt-5-mini")
    events = list(agi.stream("go", session=session.id))
    types = [e["type"] for e in events]
    assert "output.text.reset" not in types
    assert "error" not in types
    assert joined(events) == FIRST
    (run,) = agi.runs(session.id).items
    assert (run.status, run.attempt) == ("succeeded", 1)
    assert agi.history(session.id)[-1].text == FIRST
    assert [r.method for r in fake_llm.requests] == ["POST", "GET"]
    assert fake_llm.requests[1].path.endswith(f"/responses/{run.provider_response_id}")
