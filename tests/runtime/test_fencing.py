"""Fenced owners: an owner that lost its run (taken over while it was busy or stalled) writes
nothing more and calls no model; a live owner whose runtime loop is blocked keeps its run."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from pydantic import BaseModel

from agi_jupyter.app import Agi
from agi_jupyter.records import ToolResultPart
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from agi_jupyter.tools import ToolContext, tool
from tests.runtime.conftest import MakeAgi
from tests.runtime.test_runs import wait_until

GATE = threading.Event()
ENTERED = threading.Event()


class Args(BaseModel):
    seconds: float = 0.0


@tool("test.gate", description="Wait until the test opens the gate.")
async def gate(args: Args, ctx: ToolContext) -> str:
    ENTERED.set()
    while not GATE.is_set():  # noqa: ASYNC110 (set from the test thread)
        await asyncio.sleep(0.01)
    return "through the gate"


@tool("test.block", description="Block the runtime loop (a badly behaved tool).")
async def block(args: Args, ctx: ToolContext) -> str:
    ENTERED.set()
    time.sleep(args.seconds)  # noqa: ASYNC251 (blocking the loop is the point)
    return "unblocked"


def _take_over(agi: Agi, run_id: str, owner: str = "other-host:1:x") -> None:
    """What a tick in another process does to a run it believes abandoned."""
    run = agi.store.get_run(run_id)
    assert agi.store.update_run_if(run.id, run.version, status="queued", owner=None)
    assert agi.store.claim_run(run.id, run.version + 1, owner=owner) is not None


def _state(agi: Agi, run_id: str, session_id: str) -> tuple[Any, ...]:
    return (
        agi.store.list_messages(session_id),
        agi.store.list_tool_calls(run_id=run_id),
        agi.store.list_run_events(run_id),
        agi.store.get_session(session_id).input_tokens,
    )


def test_an_owner_that_lost_its_run_writes_nothing_more(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    GATE.clear()
    ENTERED.clear()
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("test_gate", {})]), Turn(text="too late"))
    agi = make_agi(tools=[gate])
    session = agi.new_session(tools=["test.gate"], model="openai-chat:gpt-4o-mini")
    run = agi.submit("go", session=session.id)
    assert ENTERED.wait(60)
    _take_over(agi, run.id)
    before = _state(agi, run.id, session.id)
    GATE.set()  # the old owner's tool ends now: its result must not be written
    wait_until(lambda: not agi.runs_manager.is_local(run.id), timeout=60)
    assert _state(agi, run.id, session.id) == before
    assert len(fake_llm.requests) == 1  # no model call after the loss
    taken = agi.run(run.id)
    assert (taken.status, taken.owner) == ("running", "other-host:1:x")
    results = [
        p
        for m in agi.store.list_messages(session.id)
        for p in m.parts
        if isinstance(p, ToolResultPart)
    ]
    assert results == []


def test_the_lease_keeper_stops_an_owner_that_lost_its_run_while_busy(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    GATE.clear()
    ENTERED.clear()
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("test_gate", {})]))
    agi = make_agi(tools=[gate], config={"stale_after": 1})
    session = agi.new_session(tools=["test.gate"], model="openai-chat:gpt-4o-mini")
    run = agi.submit("go", session=session.id)
    assert ENTERED.wait(60)
    _take_over(agi, run.id)
    before = _state(agi, run.id, session.id)
    # the tool never ends by itself: the next heartbeat finds the fence gone and stops it
    wait_until(lambda: not agi.runs_manager.is_local(run.id), timeout=60)
    GATE.set()
    assert _state(agi, run.id, session.id) == before


def test_a_blocked_runtime_loop_does_not_make_a_live_owner_look_dead(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    ENTERED.clear()
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("test_block", {"seconds": 3.0})]), Turn(text="done")
    )
    owner = make_agi(tools=[block], config={"stale_after": 1})
    ticker = make_agi(config={"stale_after": 1})  # another process, as far as runs go
    session = owner.new_session(tools=["test.block"], model="openai-chat:gpt-4o-mini")
    run = owner.submit("go", session=session.id)
    assert ENTERED.wait(60)
    recovered = 0
    deadline = time.monotonic() + 60
    while not owner.run(run.id).is_terminal:  # ticks while the owner's loop is blocked
        assert time.monotonic() < deadline
        recovered += ticker.tick().recovered
        time.sleep(0.2)
    assert recovered == 0
    done = owner.run(run.id)
    assert (done.status, done.attempt, done.owner) == ("succeeded", 1, owner.deps.owner)
    finals = [e for e in owner.store.list_run_events(run.id) if e.type == "run.final"]
    assert len(finals) == 1
