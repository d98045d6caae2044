"""Durable runs: concurrency of tools, gating, cancel, queue/interrupt, recovery, tick."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from agi_jupyter.errors import RunTerminal
from agi_jupyter.records import ToolResultPart
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from agi_jupyter.tools import ToolContext, tool
from tests.runtime.conftest import MakeAgi


class NapArgs(BaseModel):
    seconds: float
    label: str = ""


NAPS: list[tuple[str, float, float]] = []
NAP_STARTED = threading.Event()


@tool("test.nap", description="Sleep for a while, then say so.")
async def nap(args: NapArgs, ctx: ToolContext) -> str:
    NAP_STARTED.set()
    start = time.monotonic()
    await asyncio.sleep(args.seconds)
    NAPS.append((args.label, start, time.monotonic()))
    return f"slept {args.seconds}"


@tool("test.boom", description="Always fails.")
def boom(args: NapArgs) -> str:
    raise RuntimeError("kaboom")


def wait_until(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def tool_results(agi_messages: list[object]) -> list[ToolResultPart]:
    return [
        p for m in agi_messages for p in getattr(m, "parts", []) if isinstance(p, ToolResultPart)
    ]


def test_tool_calls_of_one_turn_run_concurrently(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    NAPS.clear()
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall("test_nap", {"seconds": 0.3, "label": "a"}),
                FakeToolCall("test_nap", {"seconds": 0.3, "label": "b"}),
            ]
        ),
        Turn(text="both done"),
    )
    agi = make_agi(tools=[nap])
    session = agi.new_session(tools=["test.nap"], model="openai-chat:gpt-4o-mini")
    result = agi.ask("nap twice", session=session.id)
    assert result.text == "both done"
    (a_label, a_start, a_end), (b_label, b_start, b_end) = sorted(NAPS)
    assert (a_label, b_label) == ("a", "b")
    assert a_start < b_end, "the two calls did not overlap"
    assert b_start < a_end, "the two calls did not overlap"


def test_tool_timeout_and_exception_come_back_to_the_model(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall("test_nap", {"seconds": 5}),
                FakeToolCall("test_boom", {"seconds": 0}),
            ]
        ),
        Turn(text="I saw both errors"),
    )
    agi = make_agi(tools=[nap, boom], config={"tool_timeout": 0.2})
    session = agi.new_session(tools=["test.*"], model="openai:gpt-5-mini")
    result = agi.ask("go", session=session.id)
    assert (result.text, result.run.status) == ("I saw both errors", "succeeded")
    # each result is stored when its call ends: the failure first, the timeout after it
    error, timeout = tool_results(result.messages)
    assert (error.name, timeout.name) == ("test.boom", "test.nap")
    assert timeout.is_error
    assert "timed out" in timeout.output
    assert error.is_error
    assert "kaboom" in error.output
    calls = {c.name: c for c in agi.store.list_tool_calls(run_id=result.run_id)}
    assert calls["test.nap"].status == "failed"
    assert calls["test.boom"].status == "failed"
    assert "kaboom" in json.dumps(fake_llm.requests[-1].body)


def test_agent_gating_and_path_escape_are_refused(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("shell_run", {"command": "echo hi"})]),
        Turn(text="refused"),
        Turn(tool_calls=[FakeToolCall("fs_read", {"path": "../outside.txt"})]),
        Turn(text="escaped"),
    )
    (project.parent / "outside.txt").write_text("secret outside the project")
    agi = make_agi()
    general = agi.new_session(agent="general", model="openai-chat:gpt-4o-mini")
    assert agi.tools("general") == []
    first = agi.ask("run a command", session=general.id)
    (refusal,) = tool_results(first.messages)
    assert refusal.is_error
    assert "shell.run" in refusal.output
    assert "general" in refusal.output
    (call,) = agi.store.list_tool_calls(run_id=first.run_id)
    assert call.status == "denied"
    # the stored result says so too, so a history read later shows the call as denied
    stored = tool_results(agi.history(general.id, view="full"))
    assert [r.status for r in stored] == ["denied"]
    plan = agi.new_session(agent="plan", model="openai-chat:gpt-4o-mini")
    second = agi.ask("read outside", session=plan.id)
    (escape,) = tool_results(second.messages)
    assert escape.is_error
    assert "secret outside" not in escape.output
    assert "outside the project" in escape.output.lower()


def test_consumer_leaving_early_does_not_stop_the_run(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="a long answer " * 50))
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    stream = agi.stream("talk", session=session.id)
    first = next(stream)
    stream.close()
    wait_until(lambda: agi.run(first["run_id"]).is_terminal)
    assert agi.run(first["run_id"]).status == "succeeded"
    assert agi.history(session.id)[-1].text == "a long answer " * 50


def test_cancel_during_a_tool_ends_the_run_cancelled(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    NAP_STARTED.clear()
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("test_nap", {"seconds": 30})]))
    agi = make_agi(tools=[nap])
    session = agi.new_session(tools=["test.nap"], model="openai-chat:gpt-4o-mini")
    run = agi.submit("nap long", session=session.id)
    assert NAP_STARTED.wait(10)
    cancelled = agi.cancel(run.id)
    assert cancelled.status == "cancelled"
    assert cancelled.error == {"code": "RUN_CANCELLED", "message": "the run was cancelled"}
    (call,) = agi.store.list_tool_calls(run_id=run.id)
    assert call.status == "cancelled"
    # the call is answered in the stored conversation, and shown cancelled live and reloaded
    (result,) = [m for m in agi.store.list_messages(session.id) if m.role == "tool"]
    (part,) = tool_results([result])
    assert (part.status, part.is_error) == ("cancelled", True)
    events = list(agi.follow(run.id))
    outputs = [e for e in events if e["type"] == "tool.call.output"]
    assert [(e["status"], e["ok"]) for e in outputs] == [("cancelled", False)]
    assert events[-1]["type"] == "run.final"
    assert events[-1]["run"]["status"] == "cancelled"
    with pytest.raises(RunTerminal):
        agi.cancel(run.id)


def test_queue_mode_runs_one_after_another(make_agi: MakeAgi, fake_llm: FakeLLMServer) -> None:
    NAP_STARTED.clear()
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("test_nap", {"seconds": 0.3})]),
        Turn(text="first done"),
        Turn(text="second done"),
    )
    agi = make_agi(tools=[nap])
    session = agi.new_session(tools=["test.nap"], model="openai-chat:gpt-4o-mini")
    first = agi.submit("first", session=session.id)
    assert NAP_STARTED.wait(10)
    second = agi.submit("second", session=session.id)
    assert agi.run(second.id).status == "queued"
    list(agi.follow(second.id))
    assert agi.run(first.id).status == "succeeded"
    assert agi.run(second.id).status == "succeeded"
    texts = [(m.role, m.text) for m in agi.history(session.id)]
    assert texts == [
        ("user", "first"),
        ("assistant", "first done"),
        ("user", "second"),
        ("assistant", "second done"),
    ]


def test_interrupt_mode_cancels_the_active_run(make_agi: MakeAgi, fake_llm: FakeLLMServer) -> None:
    NAP_STARTED.clear()
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("test_nap", {"seconds": 30})]),
        Turn(text="answer to the interruption"),
    )
    agi = make_agi(tools=[nap])
    session = agi.new_session(
        tools=["test.nap"], model="openai-chat:gpt-4o-mini", queue_mode="interrupt"
    )
    first = agi.submit("long", session=session.id)
    assert NAP_STARTED.wait(10)
    second = agi.ask("stop that, answer this", session=session.id)
    assert agi.run(first.id).status == "cancelled"
    assert second.text == "answer to the interruption"


def test_tick_recovers_a_run_whose_owner_died(make_agi: MakeAgi, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text="recovered answer"))
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    run = agi.submit("survive a crash", session=session.id, start=False)
    # Simulate a process that claimed the run, then died without a heartbeat.
    assert agi.store.claim_run(run.id, agi.run(run.id).version, owner="dead-host:1:x")
    agi.store.update_run(run.id, heartbeat_at="2000-01-01T00:00:00.000Z", attempt=1)
    result = agi.tick()
    assert (result.recovered, result.executed) == (1, 1)
    recovered = agi.run(run.id)
    assert (recovered.status, recovered.attempt) == ("succeeded", 2)
    assert agi.history(session.id)[-1].text == "recovered answer"


def test_tick_fails_a_dead_run_without_attempts_left(make_agi: MakeAgi) -> None:
    agi = make_agi(config={"max_attempts": 1})
    session = agi.new_session(model="fake:echo")
    run = agi.submit("x", session=session.id, start=False)
    assert agi.store.claim_run(run.id, agi.run(run.id).version, owner="dead-host:1:x")
    agi.store.update_run(run.id, heartbeat_at="2000-01-01T00:00:00.000Z", attempt=1)
    assert agi.tick().failed_stale == 1
    failed = agi.run(run.id)
    assert failed.status == "failed"
    assert failed.error is not None
    assert failed.error["code"] == "RUN_ABANDONED"


def test_tick_runs_background_runs_whose_time_has_come(make_agi: MakeAgi) -> None:
    agi = make_agi()
    session = agi.new_session(model="fake:echo")
    due = agi.submit("now", session=session.id, start=False, execution_mode="background")
    later = agi.submit("later", session=session.id, start=False, execution_mode="background")
    agi.store.update_run(later.id, next_attempt_at="2999-01-01T00:00:00.000Z")
    result = agi.tick()
    assert result.executed == 1
    assert agi.run(due.id).status == "succeeded"
    assert agi.run(later.id).status == "queued"


def test_interrupt_tolerates_a_run_that_ended_meanwhile(
    make_agi: MakeAgi, monkeypatch: pytest.MonkeyPatch
) -> None:
    agi = make_agi()
    session = agi.new_session(model="fake:echo", queue_mode="interrupt")
    agi.submit("queued, not started", session=session.id, start=False)

    def ended_meanwhile(run_id: str) -> None:
        raise RunTerminal(f"run {run_id} has already ended")

    monkeypatch.setattr(agi, "cancel", ended_meanwhile)
    result = agi.ask("new message", session=session.id)
    assert result.run.status == "succeeded"


def test_cancel_right_after_submit_ends_the_run(make_agi: MakeAgi) -> None:
    agi = make_agi()
    session = agi.new_session(model="fake:echo")
    for _ in range(5):  # the cancel may reach the loop before the run's task ever ran
        run = agi.submit("never mind", session=session.id)
        assert agi.cancel(run.id).status in ("cancelled", "succeeded")
        assert agi.run(run.id).is_terminal
