"""The claude adapter with the real ``claude-agent-sdk`` and its bundled CLI, through ``Agi``,
against the fake LLM server's Anthropic Messages route (127.0.0.1 only).

The CLI (2.1.330 in claude-agent-sdk 0.2.187) sends only ``POST /v1/messages?beta=true``
(streaming) with ``x-api-key``; our tools appear as ``mcp__agi__<name>``. Each run starts a
CLI (~0.5 s). CI installs the SDK (scripts/install.sh), so there a missing SDK is a failure;
locally these tests skip without it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from agi_jupyter.app import Agi
from agi_jupyter.records import ReasoningPart, Session, TextPart, ToolCallPart, ToolResultPart
from agi_jupyter.sdk.claude import ClaudeAdapter
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn
from tests.runtime.blocked_store import (
    ENOUGH,
    assert_stored_as_streamed,
    sqlite_write_lock,
    stream_blocked,
)
from tests.sdk.conftest import MakeAgi

MODEL = "claude-haiku-4-5"
KEY = "sk-test-anthropic-secret-0002"  # tests/runtime/conftest.py's agi_env
LONG = "one two three four five six seven eight nine ten"

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def claude_agi(make_agi: MakeAgi) -> Agi:
    if importlib.util.find_spec("claude_agent_sdk") is None:
        if os.environ.get("CI"):
            pytest.fail("claude-agent-sdk is not installed; CI installs it (scripts/install.sh)")
        pytest.skip("claude-agent-sdk is not installed")
    agi = make_agi()
    agi.sdk.adapters.setdefault("claude", ClaudeAdapter())
    return agi


def new_session(agi: Agi, **kwargs: Any) -> Session:
    return agi.new_session(sdk="claude", model=f"anthropic:{MODEL}", **kwargs)


def stored(agi: Agi, session_id: str) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in agi.store.list_messages(session_id)]


def model_requests(fake: FakeLLMServer) -> list[Any]:
    return [r for r in fake.requests if r.path.endswith("/messages")]


def request_text(request: Any) -> str:
    return json.dumps(request.body["messages"])


def claude_processes() -> list[psutil.Process]:
    """The bundled CLIs this test process started (and has not reaped)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if any("claude_agent_sdk" in part for part in child.cmdline()):
                found.append(child)
        except psutil.ZombieProcess:
            found.append(child)  # exited but never waited for: a leak too
        except psutil.NoSuchProcess:
            pass
    return found


def wait_until(condition: Any, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def events_until(events: Iterator[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    seen = []
    for event in events:
        seen.append(event)
        if event["type"] == kind:
            return seen
    raise AssertionError(f"no {kind} event")


def test_claude_plain_answer_streams_and_stores_meta(
    claude_agi: Agi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="Hello from Claude, streamed.", usage=(120, 8)))
    session = new_session(claude_agi)
    events = list(claude_agi.stream("say hello", session=session.id))

    deltas = [e["delta"] for e in events if e["type"] == "output.text.delta"]
    assert deltas, "streamed, not only the final text"
    assert "".join(deltas) == "Hello from Claude, streamed."
    assert events[-1]["type"] == "run.final"
    assert events[-1]["run"]["status"] == "succeeded"
    usage = next(e for e in events if e["type"] == "usage")
    assert (usage["input_tokens"], usage["output_tokens"]) == (120, 8)
    assert usage["cost_usd"] == pytest.approx(120 * 1e-6 + 8 * 5e-6)  # Haiku 4.5's price

    assert stored(claude_agi, session.id) == [
        ("user", "say hello"),
        ("assistant", "Hello from Claude, streamed."),
    ]
    answer = claude_agi.store.list_messages(session.id)[-1]
    assert answer.meta["provider"] == "anthropic"
    assert answer.meta["model"] == MODEL
    assert answer.meta["usage"] == {"input_tokens": 120, "output_tokens": 8}
    assert answer.meta["cost_usd"] == pytest.approx(usage["cost_usd"])
    assert answer.meta["sdk"] == "claude"
    state = claude_agi.store.get_session(session.id).metadata["sdk_state"]["claude"]
    assert answer.meta["claude"]["session_id"] == state["session_id"]
    run = claude_agi.store.get_run(events[-1]["run"]["id"])
    assert run.usage == {"input_tokens": 120, "output_tokens": 8}

    # What the CLI sent: our model, key and system prompt; no built-in tools; nothing else.
    (request,) = fake_llm.requests
    assert request.method == "POST"
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert "authorization" not in request.headers
    assert request.body["model"] == MODEL
    assert request.body["stream"] is True
    assert request.body["thinking"] == {"type": "disabled"}  # unless the session asks for it
    assert not request.body.get("tools")  # the general agent has no tools
    assert "say hello" in request_text(request)
    assert "Jupyter project" in json.dumps(request.body["system"])  # the agent's prompt
    # The key never reaches events or history.
    assert KEY not in json.dumps(events)
    assert KEY not in json.dumps([m.meta for m in claude_agi.store.list_messages(session.id)])
    assert (claude_agi.config.project / ".agi" / "claude").is_dir()


def test_claude_tool_loop_runs_our_tool_over_mcp(claude_agi: Agi, fake_llm: FakeLLMServer) -> None:
    (claude_agi.config.project / "notes.txt").write_text("the secret number is 42\n")
    fake_llm.enqueue(
        Turn(
            text="Reading.",
            reasoning="I should read the notes.",
            tool_calls=[FakeToolCall("mcp__agi__fs_read", {"path": "notes.txt"})],
        ),
        Turn(text="It says 42."),
    )
    session = new_session(claude_agi, agent="plan")
    events = list(claude_agi.stream("what is in notes.txt?", session=session.id))
    assert events[-1]["run"]["status"] == "succeeded"
    reasoning = [e["delta"] for e in events if e["type"] == "reasoning.delta"]
    assert "".join(reasoning) == "I should read the notes."

    started = next(e for e in events if e["type"] == "tool.call.started")
    assert started["name"] == "fs.read"
    output = next(e for e in events if e["type"] == "tool.call.output")
    assert output["ok"]
    assert "the secret number is 42" in output["output"]

    messages = claude_agi.store.list_messages(session.id)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    thinking, text, call = messages[1].parts
    assert isinstance(thinking, ReasoningPart)
    assert thinking.text == "I should read the notes."
    assert thinking.signature  # kept, so the thinking block can be sent back
    assert text == TextPart(text="Reading.")
    assert isinstance(call, ToolCallPart)
    assert (call.name, call.arguments) == ("fs.read", {"path": "notes.txt"})
    result = messages[2].parts[0]
    assert isinstance(result, ToolResultPart)
    assert result.tool_call_id == call.tool_call_id
    assert "the secret number is 42" in result.output
    assert messages[3].text == "It says 42."
    (row,) = claude_agi.store.list_tool_calls(run_id=events[-1]["run"]["id"])
    assert (row.tool_call_id, row.name, row.status, row.message_id) == (
        call.tool_call_id,
        "fs.read",
        "completed",
        messages[1].id,
    )
    assert row.tool_call_id.startswith("toolu_")  # the model's id reached our executor

    first, second = model_requests(fake_llm)
    offered = {tool["name"] for tool in first.body["tools"]}
    assert "mcp__agi__fs_read" in offered
    assert "the secret number is 42" in request_text(second)  # the file reached the model
    # The CLI's logs of the call stay in the project, not in the user's ~/.cache.
    assert list((claude_agi.config.project / ".agi" / "claude" / "cache").iterdir())


def test_claude_parallel_calls_get_their_own_ids(claude_agi: Agi, fake_llm: FakeLLMServer) -> None:
    """Read-only tools may run concurrently: each result lands on its own call."""
    project = claude_agi.config.project
    for name in ("a", "b", "c"):
        (project / f"{name}.txt").write_text(f"content of {name}\n")
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall("mcp__agi__fs_read", {"path": f"{name}.txt"}, id=f"toolu_{name}")
                for name in ("a", "b", "c")
            ]
        ),
        Turn(text="Read all three."),
    )
    session = new_session(claude_agi, agent="plan")
    events = list(claude_agi.stream("read a, b and c", session=session.id))
    assert events[-1]["run"]["status"] == "succeeded"
    rows = claude_agi.store.list_tool_calls(run_id=events[-1]["run"]["id"])
    assert {row.tool_call_id: row.args["path"] for row in rows} == {
        "toolu_a": "a.txt",
        "toolu_b": "b.txt",
        "toolu_c": "c.txt",
    }
    assert all(row.status == "completed" for row in rows)
    outputs = {e["tool_call_id"]: e["output"] for e in events if e["type"] == "tool.call.output"}
    assert {k: v.strip() for k, v in outputs.items()} == {
        "toolu_a": "content of a",
        "toolu_b": "content of b",
        "toolu_c": "content of c",
    }


def test_claude_offers_only_the_agents_tools(claude_agi: Agi, fake_llm: FakeLLMServer) -> None:
    """The plan agent has no shell: neither ours nor Claude's Bash can run a command."""
    project = claude_agi.config.project
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall("Bash", {"command": f"touch {project / 'pwned'}"}),
                FakeToolCall("mcp__agi__shell_run", {"command": f"touch {project / 'pwned2'}"}),
            ]
        ),
        Turn(text="I cannot run commands."),
    )
    session = new_session(claude_agi, agent="plan")
    events = list(claude_agi.stream("run touch", session=session.id))
    assert events[-1]["run"]["status"] == "succeeded"

    first, second = model_requests(fake_llm)
    offered = sorted(tool["name"] for tool in first.body["tools"])
    assert offered == [
        "mcp__agi__fs_list",
        "mcp__agi__fs_read",
        "mcp__agi__fs_search",
        "mcp__agi__notebook_read",
        "mcp__agi__sql_query",
        "mcp__agi__tasks",
    ]
    assert not (project / "pwned").exists()
    assert not (project / "pwned2").exists()
    results = [b for b in second.body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert len(results) == 2
    assert all(b.get("is_error") for b in results)
    started = [e["name"] for e in events if e["type"] == "tool.call.started"]
    assert started == ["Bash", "mcp__agi__shell_run"]  # as called: neither is one of ours
    outputs = [e for e in events if e["type"] == "tool.call.output"]
    assert [e["ok"] for e in outputs] == [False, False]


def test_claude_next_run_resumes_the_claude_session(
    claude_agi: Agi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="First answer."), Turn(text="Second answer."))
    session = new_session(claude_agi)
    first = claude_agi.ask("first question", session=session.id)
    state = claude_agi.store.get_session(session.id).metadata["sdk_state"]["claude"]
    second = claude_agi.ask("second question", session=session.id)
    assert (first.text, second.text) == ("First answer.", "Second answer.")
    after = claude_agi.store.get_session(session.id).metadata["sdk_state"]["claude"]
    assert after["session_id"] == state["session_id"]
    assert after["total_cost_usd"] > state["total_cost_usd"]

    # The CLI's second request carries the first exchange: it resumed the session.
    _, request = model_requests(fake_llm)
    roles = [m["role"] for m in request.body["messages"]]
    assert roles == ["user", "assistant", "user"]
    text = request_text(request)
    assert (
        text.index("first question") < text.index("First answer.") < text.index("second question")
    )
    # Each run costs its own answer, not the session's running total.
    messages = claude_agi.store.list_messages(session.id)
    usage = messages[-1].meta["usage"]
    own = usage["input_tokens"] * 1e-6 + usage["output_tokens"] * 5e-6
    assert messages[-1].meta["cost_usd"] == pytest.approx(own)


def test_claude_cancel_mid_stream_stops_the_cli(claude_agi: Agi, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text=LONG, fault=Fault(stall_between_events=0.3)))
    session = new_session(claude_agi)
    events = claude_agi.stream("count slowly", session=session.id)
    seen = events_until(events, "output.text.delta")
    run_id = seen[0]["run_id"]
    assert claude_processes()  # the CLI is running the turn

    started = time.monotonic()
    run = claude_agi.cancel(run_id)
    assert run.status == "cancelled"
    assert time.monotonic() - started < 10
    wait_until(lambda: not claude_processes(), timeout=10)
    rest = list(events)
    assert rest[-1]["run"]["status"] == "cancelled"
    # What streamed before the cancel stays in history.
    roles = [role for role, _ in stored(claude_agi, session.id)]
    assert roles[0] == "user"
    assert all(LONG.startswith(text) for role, text in stored(claude_agi, session.id)[1:])


def test_claude_message_queued_while_streaming_joins_the_run(
    claude_agi: Agi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(text=LONG, fault=Fault(stall_between_events=0.2)), Turn(text="Second answer.")
    )
    session = new_session(claude_agi)
    events = claude_agi.stream("first question", session=session.id)
    events_until(events, "output.text.delta")
    joined = claude_agi.ask("second question", session=session.id)
    rest = list(events)
    assert rest[-1]["run"]["status"] == "succeeded"
    assert joined.run.id == rest[-1]["run"]["id"]  # no second run: it went into this one
    assert len(claude_agi.store.list_runs(session_id=session.id).items) == 1
    assert stored(claude_agi, session.id) == [
        ("user", "first question"),
        ("assistant", LONG),
        ("user", "second question"),
        ("assistant", "Second answer."),
    ]
    _, second = model_requests(fake_llm)
    assert "second question" in request_text(second)


def test_claude_message_queued_during_a_tool_call_is_taken_into_the_turn(
    claude_agi: Agi, fake_llm: FakeLLMServer
) -> None:
    (claude_agi.config.project / "notes.txt").write_text("42\n")
    fake_llm.enqueue(
        Turn(
            text="Reading the file slowly.",
            tool_calls=[FakeToolCall("mcp__agi__fs_read", {"path": "notes.txt"})],
            fault=Fault(stall_between_events=0.2),
        ),
        Turn(text="It says 42, and hello."),
    )
    session = new_session(claude_agi, agent="plan")
    events = claude_agi.stream("read notes.txt", session=session.id)
    events_until(events, "output.text.delta")
    claude_agi.ask("also say hello", session=session.id)
    rest = list(events)
    assert rest[-1]["run"]["status"] == "succeeded"
    assert [role for role, _ in stored(claude_agi, session.id)] == [
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    assert stored(claude_agi, session.id)[3] == ("user", "also say hello")
    # The CLI delivered it next to the tool result, in the same turn.
    _, second = model_requests(fake_llm)
    last = json.dumps(second.body["messages"][-1])
    assert "tool_result" in last
    assert "also say hello" in last


def test_claude_interrupt_mode_stops_the_turn_and_answers_the_new_message(
    claude_agi: Agi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(text=LONG, fault=Fault(stall_between_events=0.3)), Turn(text="After the interrupt.")
    )
    session = new_session(claude_agi, queue_mode="interrupt")
    events = claude_agi.stream("count slowly", session=session.id)
    first_run = events_until(events, "output.text.delta")[0]["run_id"]
    started = time.monotonic()
    answer = claude_agi.ask("stop and answer this", session=session.id)
    assert time.monotonic() - started < 15
    assert answer.text == "After the interrupt."
    assert answer.run.id != first_run
    assert claude_agi.store.get_run(first_run).status == "cancelled"
    assert list(events)[-1]["run"]["status"] == "cancelled"

    history = stored(claude_agi, session.id)
    assert history[0] == ("user", "count slowly")
    assert history[-2:] == [("user", "stop and answer this"), ("assistant", "After the interrupt.")]
    # The new run resumed the Claude session: the interrupted exchange came along.
    _, second = model_requests(fake_llm)
    text = request_text(second)
    assert text.index("count slowly") < text.index("stop and answer this")
    wait_until(lambda: not claude_processes(), timeout=10)


def test_a_close_cancelled_again_midway_still_closes_the_client_whole(
    claude_agi: Agi, tmp_path: Any
) -> None:
    """A run cancelled again while its CLI is being closed (an interrupt then the run manager's
    cancel) still closes the client whole: the SDK's anyio shield does not hold off an asyncio
    ``task.cancel()``, and a ``disconnect`` cut short left its message stream open (a
    ``ResourceWarning`` when collected, a CI failure) and could leave the CLI running."""
    import asyncio

    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

    from agi_jupyter.sdk.claude.client import _stop

    async def scenario() -> Any:
        options = ClaudeAgentOptions(
            tools=[], setting_sources=[], env={"CLAUDE_CONFIG_DIR": str(tmp_path)}
        )
        client = ClaudeSDKClient(options)
        await client.connect()
        query = client._query
        assert query is not None
        assert claude_processes()
        closing = asyncio.ensure_future(_stop(client, interrupt=False))
        for _ in range(5):  # cancelled again and again while the close is under way
            await asyncio.sleep(0.01)
            closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        return query

    query = asyncio.run(scenario())
    assert query._message_receive._closed
    wait_until(lambda: not claude_processes(), timeout=10)


def test_claude_streams_while_the_store_is_blocked(
    claude_agi: Agi, fake_llm: FakeLLMServer, project: Path
) -> None:
    """The real CLI's answer reaches the stream while SQLite's write lock is held elsewhere:
    the adapter's history waits on the store thread, not on the runtime loop."""
    chunks = [f"w{i} " for i in range(120)]
    fake_llm.enqueue(Turn(chunks=chunks, fault=Fault(stall_between_events=0.03)))
    session = new_session(claude_agi)

    seen = stream_blocked(claude_agi, lambda: sqlite_write_lock(project), "go", session.id)

    assert seen.beats > 0
    assert seen.deltas >= ENOUGH
    assert_stored_as_streamed(claude_agi, seen.events)
    assert stored(claude_agi, session.id) == [("user", "go"), ("assistant", "".join(chunks))]
