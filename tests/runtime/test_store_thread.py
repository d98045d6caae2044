"""A store that blocks (SQLite's write lock held elsewhere, PostgreSQL's pool exhausted) does not
stall the runtime loop: the runtime's store calls wait on the store thread, not on the loop."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path

import pytest

from agi_jupyter.records import Session, ToolResultPart
from agi_jupyter.research import ResearchSettings
from agi_jupyter.runtime.agent_loop import AttemptResult
from agi_jupyter.sdk.base import (
    AssistantText,
    DisplayModel,
    SdkAdapter,
    SdkCapabilities,
    SdkRunParams,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnMeta,
)
from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.runtime.blocked_store import (
    DEADLINE,
    ENOUGH,
    assert_stored_as_streamed,
    blocked_store,
    stream_blocked,
)
from tests.runtime.conftest import MakeAgi
from tests.server.research_helpers import report_turn

ACP_AGENT = Path(__file__).parent.parent / "sdk" / "acp_agent.py"


def test_a_blocked_store_does_not_stall_the_runtime_loop(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, backend: str
) -> None:
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    chunks = [f"w{i} " for i in range(120)]
    fake_llm.enqueue(Turn(chunks=chunks, fault=Fault(stall_between_events=0.03)))

    seen = stream_blocked(agi, blocked_store(agi, project, backend), "go", session.id)

    # The loop kept going while the store was blocked: the other task ticked and the run's
    # deltas reached its stream.
    assert seen.beats > 0
    assert seen.deltas >= ENOUGH
    run_id = assert_stored_as_streamed(agi, seen.events)
    stored = agi.store.list_run_events(run_id)
    text = "".join(e.payload["delta"] for e in stored if e.type == "output.text.delta")
    assert text == "".join(chunks)


class PacedAdapter(SdkAdapter):
    """An SDK adapter that runs one of our tools, then streams its answer at a model's pace
    (``ScriptedAdapter`` of tests/sdk, paced): its history is written through
    ``CanonicalHistory`` like every adapter's but ``native``."""

    id = "paced"
    display_name = "Paced SDK"
    capabilities = SdkCapabilities(tool_events=True, full_history=True)

    def __init__(self, chunks: list[str]) -> None:
        self.chunks = chunks
        self.storing = threading.Event()  # the answer is streamed: history writes it now

    def resolve_display_model(self, session: Session) -> DisplayModel:
        return DisplayModel("paced", session.model)

    def check_available(self) -> None:
        """Nothing to install."""

    async def run(self, params: SdkRunParams) -> AttemptResult:
        call = ToolCallEvent(id="call_1", name="fs.read", arguments={"path": "notes.txt"})
        await params.on_history(call)
        outcome = await params.call_tool(call.id, call.name, call.arguments)
        await params.on_history(ToolResultEvent(id=call.id, name=call.name, output=outcome.output))
        for chunk in self.chunks:
            await params.on_history(AssistantText(text=chunk))
            await asyncio.sleep(0.03)
        self.storing.set()
        await params.on_history(TurnMeta(provider="paced", model="m", input_tokens=3))
        await params.on_history(TurnDone())
        await params.save_state({"thread": "t1"})
        return await params.result()


def test_a_blocked_store_does_not_stall_an_sdk_adapters_run(
    make_agi: MakeAgi, project: Path, backend: str
) -> None:
    """The same for an adapter other than ``native``: its history's writes (the tool call and
    its result, the answer, usage, the adapter's state) wait on the store thread while the
    loop goes on, and its stream keeps flowing."""
    (project / "notes.txt").write_text("hello from the notes\n")
    agi = make_agi()
    chunks = [f"w{i} " for i in range(60)]
    adapter = PacedAdapter(chunks)
    agi.sdk.adapters[adapter.id] = adapter
    session = agi.new_session(agent="plan", sdk="paced", model="fake:echo")
    block = blocked_store(agi, project, backend)

    seen = stream_blocked(agi, block, "what do the notes say?", session.id, storing=adapter.storing)

    # The answer streamed while the store was blocked, and the loop went on while its write
    # waited (the store was released then, not by the deadline).
    assert seen.deltas >= ENOUGH
    assert seen.storing >= 10
    assert not seen.by_deadline
    run_id = assert_stored_as_streamed(agi, seen.events)
    # The history is whole: the call and its result, the answer with its usage, the state.
    history = agi.history(session.id, view="full")
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    (result,) = history[2].parts
    assert isinstance(result, ToolResultPart)
    assert "hello from the notes" in result.output
    assert history[3].text == "".join(chunks)
    assert history[3].meta["usage"] == {"input_tokens": 3, "output_tokens": 0}
    (call,) = agi.store.list_tool_calls(run_id=run_id)
    assert (call.status, call.message_id) == ("completed", history[1].id)
    assert agi.session(session.id).metadata["sdk_state"]["paced"] == {"thread": "t1"}


@pytest.mark.slow  # starts the agent's process
def test_a_blocked_store_does_not_stall_an_acp_agents_run(
    make_agi: MakeAgi, project: Path, backend: str
) -> None:
    """A real ACP agent process (tests/sdk/acp_agent.py) streams its answer while the store
    is blocked; its reads, permission, file write, terminal and answer are all stored."""
    (project / "notes.txt").write_text("the first line\n")
    agent = {"command": sys.executable, "args": [str(ACP_AGENT)]}
    agi = make_agi(config={"acp": agent, "max_attempts": 1})
    session = agi.new_session(agent="build", sdk="acp")

    seen = stream_blocked(agi, blocked_store(agi, project, backend), "paced", session.id)

    assert seen.beats > 0
    assert seen.deltas >= ENOUGH
    run_id = assert_stored_as_streamed(agi, seen.events)
    answer = agi.history(session.id, view="full")[-1]
    assert answer.text == "".join(f"w{i} " for i in range(60)) + "Turn 1: the first line"
    assert sorted(c.name for c in agi.store.list_tool_calls(run_id=run_id)) == [
        "edit",
        "execute",
        "read",
    ]
    assert (project / "answer.txt").read_text() == "the first line\n"


def test_a_blocked_store_does_not_stall_the_loop_while_deep_research_polls(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, backend: str
) -> None:
    """A parked deep research run is polled from the runtime loop; the poll's claim and the
    run's completion wait on the store thread, not on the loop."""
    fake_llm.enqueue(report_turn("resp_blocked", delay=60))
    agi = make_agi(research=ResearchSettings(poll_interval=0.05))
    run = agi.research("Research tidal power")
    for _ in range(500):  # bounded: parked within seconds
        if agi.run(run.id).status == "waiting_webhook":
            break
        time.sleep(0.02)
    assert agi.run(run.id).status == "waiting_webhook"
    block = blocked_store(agi, project, backend)
    locked, enough, released = threading.Event(), threading.Event(), threading.Event()
    beats = {"while_blocked": 0}

    async def heartbeat() -> None:  # another task on the runtime loop
        while not released.is_set():
            await asyncio.sleep(0.01)
            if locked.is_set():
                beats["while_blocked"] += 1
                if beats["while_blocked"] >= 50:  # many polls were due meanwhile
                    enough.set()

    beating = agi.loop.submit(heartbeat())
    with block():
        locked.set()
        fake_llm.complete_background("resp_blocked")  # the next poll finds it finished
        enough.wait(DEADLINE)
        locked.clear()
    released.set()
    beating.result(10)

    assert beats["while_blocked"] >= 50
    statuses = [e["status"] for e in agi.follow(run.id) if e["type"] == "run.status"]
    assert statuses[-2:] == ["processing_webhook", "succeeded"]
    assert agi.result(run.id).text.startswith("# Tidal power")
