"""How attempts end: partial answers kept, cancelled tool calls answered, provider-valid
history after a cancel on every wire API, release (graceful stop) and resume."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agi_jupyter.records import ToolCallPart, ToolResultPart
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn
from agi_jupyter.tools import ToolContext, tool
from tests.runtime.blocked_store import blocked_store
from tests.runtime.conftest import MakeAgi
from tests.runtime.test_runs import wait_until

MODELS = ["openai:gpt-5-mini", "openai-chat:gpt-4o-mini", "anthropic:claude-haiku-4-5"]


class WaitArgs(BaseModel):
    seconds: float
    label: str = ""


STARTED: list[str] = []
FINISHED: list[str] = []


CANCELLED: list[str] = []


@tool("test.wait", description="Wait, then say so.")
async def wait_tool(args: WaitArgs, ctx: ToolContext) -> str:
    STARTED.append(args.label)
    try:
        await asyncio.sleep(args.seconds)
    except asyncio.CancelledError:
        CANCELLED.append(args.label)
        raise
    FINISHED.append(args.label)
    return f"waited {args.label}"


# The store blocked by ``hold_tool`` (a context manager entered, exited by the test) and how.
BLOCK: list[Any] = []
HELD: list[Any] = []


@tool("test.hold", description="Block the store, then answer at length.")
async def hold_tool(args: WaitArgs, ctx: ToolContext) -> str:
    STARTED.append(args.label)
    held = BLOCK[0]()
    held.__enter__()
    HELD.append(held)
    FINISHED.append(args.label)
    return "held " * ctx.config.artifact_threshold  # (stored as an artifact: a write)


def _deltas_seen(agi: Any, run_id: str, count: int) -> threading.Event:
    """Set once ``count`` text deltas of the run were published."""
    seen = threading.Event()
    deltas: list[str] = []

    def listen(event: dict[str, Any]) -> None:
        if event.get("type") == "output.text.delta":
            deltas.append(event["delta"])
            if len(deltas) >= count:
                seen.set()

    agi.bus.subscribe_run(run_id, listen)
    return seen


# --- partial answers ----------------------------------------------------------------------------


def test_a_cancelled_run_keeps_the_answer_it_had_streamed(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    words = [f"w{i} " for i in range(200)]
    fake_llm.enqueue(Turn(chunks=words, fault=Fault(stall_between_events=0.02)))
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    run = agi.submit("talk slowly", session=session.id, start=False)
    seen = _deltas_seen(agi, run.id, 3)
    agi.loop.submit(agi._spawn(run.id))
    assert seen.wait(60)
    assert agi.cancel(run.id).status == "cancelled"

    (partial,) = [m for m in agi.store.list_messages(session.id) if m.role == "assistant"]
    assert partial.status == "error"
    assert partial.meta["partial"] is True
    assert "w0 w1" in partial.text
    assert "".join(words).startswith(partial.text)
    events = list(agi.follow(run.id))
    completed = [e for e in events if e["type"] == "message.completed"]
    assert completed[-1]["message"]["id"] == partial.id
    streamed = "".join(e["delta"] for e in events if e["type"] == "output.text.delta")
    assert streamed == partial.text  # what was shown is what is kept
    assert agi.history(session.id)[-1].text == partial.text  # the simple view shows it
    # ... and it is never sent back to a model
    fake_llm.enqueue(Turn(text="fresh answer"))
    assert agi.ask("again", session=session.id).text == "fresh answer"
    body = fake_llm.requests[-1].body or {}
    assert "w0 w1" not in str(body["messages"])


def test_a_failed_run_keeps_the_answer_it_had_streamed(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="half of an answer that never ends", fault=Fault(drop_after=4)))
    agi = make_agi(config={"max_attempts": 1})
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    result = agi.ask("go", session=session.id)
    assert result.run.status == "failed"
    (partial,) = [m for m in result.messages if m.role == "assistant"]
    assert (partial.status, partial.meta["partial"]) == ("error", True)
    assert partial.text
    assert "half of an answer that never ends".startswith(partial.text)


def test_a_retried_attempt_does_not_keep_the_partial_answer(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(text="first try that drops", fault=Fault(drop_after=4)), Turn(text="second try")
    )
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    result = agi.ask("go", session=session.id)
    assert (result.text, result.run.status, result.run.attempt) == ("second try", "succeeded", 2)
    answers = [(m.status, m.text) for m in result.messages if m.role == "assistant"]
    assert answers == [("complete", "second try")]


# --- history the providers accept ---------------------------------------------------------------


def _check_tool_pairs(protocol: str, body: dict[str, Any], call_id: str) -> None:
    """The call ``call_id`` is immediately followed by its result, on the wire."""
    if protocol == "chat":
        items = body["messages"]
        (at,) = [i for i, m in enumerate(items) if m.get("tool_calls")]
        assert items[at]["tool_calls"][0]["id"] == call_id
        assert items[at + 1]["role"] == "tool"
        assert items[at + 1]["tool_call_id"] == call_id
        assert items[at + 2]["role"] == "user"
    elif protocol == "responses":
        items = body["input"]
        (at,) = [i for i, m in enumerate(items) if m.get("type") == "function_call"]
        assert items[at]["call_id"] == call_id
        assert items[at + 1]["type"] == "function_call_output"
        assert items[at + 1]["call_id"] == call_id
    else:
        items = body["messages"]
        assert [m["role"] for m in items] == ["user", "assistant", "user"]
        (use,) = [b for b in items[1]["content"] if b["type"] == "tool_use"]
        assert use["id"] == call_id
        first, *rest = items[2]["content"]  # tool results first, then the new text
        assert (first["type"], first["tool_use_id"], first["is_error"]) == (
            "tool_result",
            call_id,
            True,
        )
        assert [b["type"] for b in rest] == ["text"]


@pytest.mark.parametrize("model", MODELS)
def test_the_request_after_a_cancelled_tool_call_is_valid(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, model: str
) -> None:
    STARTED.clear()
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("test_wait", {"seconds": 30, "label": "long"})]),
        Turn(text="fine, something else"),
    )
    agi = make_agi(tools=[wait_tool])
    session = agi.new_session(tools=["test.wait"], model=model)
    first = agi.submit("wait long", session=session.id)
    wait_until(lambda: STARTED == ["long"], timeout=60)
    assert agi.cancel(first.id).status == "cancelled"
    assert agi.ask("never mind", session=session.id).text == "fine, something else"

    request = fake_llm.requests[-1]
    (call,) = [
        p
        for m in agi.store.list_messages(session.id)
        for p in m.parts
        if isinstance(p, ToolCallPart)
    ]
    _check_tool_pairs(request.protocol, request.body or {}, call.tool_call_id)


def test_results_stored_out_of_order_are_sent_after_their_calls(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    STARTED.clear()
    FINISHED.clear()
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall("test_wait", {"seconds": 0.4, "label": "slow"}),
                FakeToolCall("test_wait", {"seconds": 0.0, "label": "quick"}),
            ]
        ),
        Turn(text="both"),
    )
    agi = make_agi(tools=[wait_tool])
    session = agi.new_session(tools=["test.wait"], model="openai-chat:gpt-4o-mini")
    assert agi.ask("go", session=session.id).text == "both"
    assert FINISHED == ["quick", "slow"]
    stored = [
        p.output
        for m in agi.store.list_messages(session.id)
        for p in m.parts
        if isinstance(p, ToolResultPart)
    ]
    assert stored == ["waited quick", "waited slow"]  # stored as they ended
    messages = (fake_llm.requests[-1].body or {})["messages"]
    sent = [(m["role"], m.get("content")) for m in messages[-3:]]
    assert sent == [("assistant", ""), ("tool", "waited slow"), ("tool", "waited quick")]


# --- release and resume --------------------------------------------------------------------------


def test_close_releases_a_running_run_and_the_next_process_resumes_it(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    STARTED.clear()
    FINISHED.clear()
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall("test_wait", {"seconds": 0.0, "label": "done before"}),
                FakeToolCall("test_wait", {"seconds": 30, "label": "cut short"}),
            ]
        ),
        Turn(text="resumed and finished"),
    )
    first = make_agi(tools=[wait_tool])
    session = first.new_session(tools=["test.wait"], model="openai-chat:gpt-4o-mini")
    run = first.submit("work", session=session.id)
    # The close may land between "done before" returning and its result being stored: the
    # result is stored all the same (aio.complete in the executor, and the turn waits for every
    # call before its ending: see the next test), never left "cancelled".
    wait_until(lambda: FINISHED == ["done before"] and len(STARTED) == 2, timeout=60)
    first.close()  # a graceful stop: the run goes back to the queue, not to "cancelled"

    second = make_agi(tools=[wait_tool])
    released = second.run(run.id)
    assert (released.status, released.owner, released.error) == ("queued", None, None)
    assert released.next_attempt_at is not None
    assert released.loop_state is not None
    assert released.loop_state.iteration == 1

    result = second.tick()
    # claimed as a due queued run: no staleness window to wait out, nothing to recover
    assert (result.executed, result.recovered) == (1, 0)
    done = second.run(run.id)
    assert (done.status, done.attempt) == ("succeeded", 2)
    assert STARTED == ["done before", "cut short"]  # no completed tool call ran again
    calls = {c.args["label"]: c.status for c in second.store.list_tool_calls(run_id=run.id)}
    assert calls == {"done before": "completed", "cut short": "cancelled"}
    assert len(fake_llm.requests) == 2  # the first model turn was not asked again
    finals = [e for e in second.store.list_run_events(run.id) if e.type == "run.final"]
    assert len(finals) == 1


def test_a_call_that_ran_keeps_its_result_when_a_sibling_is_cut_short_by_the_stop(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, backend: str
) -> None:
    """The stop cancels the turn's calls: "cut short" ends at once, while "held" has run and
    still stores its result (its large output waits for the store). The attempt's ending
    must wait for it: before, the first cancelled call ended the turn, the ending settled
    "held" as ``cancelled`` (its result lost: the fenced write came after the release)."""
    STARTED.clear()
    FINISHED.clear()
    CANCELLED.clear()
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall("test_hold", {"seconds": 0.0, "label": "held"}),
                FakeToolCall("test_wait", {"seconds": 30, "label": "cut short"}),
            ]
        ),
        Turn(text="resumed and finished"),
    )
    first = make_agi(tools=[wait_tool, hold_tool])
    BLOCK[:] = [blocked_store(first, project, backend)]
    session = first.new_session(tools=["test.wait", "test.hold"], model="openai-chat:gpt-4o-mini")
    run = first.submit("work", session=session.id)
    wait_until(lambda: FINISHED == ["held"] and len(STARTED) == 2, timeout=60)
    closing = threading.Thread(target=first.close)
    closing.start()
    wait_until(lambda: CANCELLED == ["cut short"], timeout=30)
    time.sleep(0.3)  # (time for an ending that does not wait to queue its writes first)
    HELD.pop().__exit__(None, None, None)
    closing.join(timeout=60)
    assert not closing.is_alive()

    second = make_agi(tools=[wait_tool, hold_tool])
    calls = {c.args["label"]: c.status for c in second.store.list_tool_calls(run_id=run.id)}
    assert calls == {"held": "completed", "cut short": "cancelled"}
    results = [
        p
        for m in second.store.list_messages(session.id)
        for p in m.parts
        if isinstance(p, ToolResultPart) and p.name == "test.hold"
    ]
    assert [r.status for r in results] == ["completed"]
    assert "stored as artifact" in results[0].output
    assert second.tick().executed == 1
    assert second.run(run.id).status == "succeeded"
    assert STARTED == ["held", "cut short"]  # the call that ran did not run again
