"""The codex JSONL mapper, fed real ``codex exec --json`` transcripts, into a real store.

``transcripts/codex_{answer,tools,failed,reconnect}.jsonl`` were recorded from codex-cli 0.169.0
against the fake LLM server (project ``/tmp/codex-transcript/proj``, model ``gpt-5``).
``codex_documented_items.jsonl`` is written by hand from codex's documented event schema for the
items the fake model cannot make codex emit (MCP tools, web search, to-do lists), plus unknown
event types and a non-JSON line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.providers.base import Usage
from agi_jupyter.providers.catalog import cost_usd
from agi_jupyter.records import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from agi_jupyter.runtime.bus import EventBus
from agi_jupyter.runtime.emitter import RunEmitter
from agi_jupyter.runtime.store_thread import StoreThread
from agi_jupyter.sdk.base import (
    AssistantText,
    AssistantThinking,
    HistoryEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnMeta,
)
from agi_jupyter.sdk.codex.mapping import CodexMapper, CodexUsage
from agi_jupyter.sdk.history import CanonicalHistory
from agi_jupyter.store import open_store
from agi_jupyter.store.sqlite import SqliteStore
from agi_jupyter.tools import Redactor

TRANSCRIPTS = Path(__file__).parent / "transcripts"
RECORDED_PROJECT = Path("/tmp/codex-transcript/proj")


@dataclass
class Replay:
    """A transcript fed through the mapper into a CanonicalHistory over a real store."""

    store: SqliteStore
    mapper: CodexMapper
    history_events: list[HistoryEvent]
    live: list[dict[str, Any]]
    session_id: str
    run_id: str

    def messages(self) -> list[Any]:
        return self.store.list_messages(self.session_id)


@pytest.fixture
def replay(tmp_path: Path) -> Iterator[Any]:
    stores: list[SqliteStore] = []
    threads = StoreThread()

    def run(name: str, *, baseline: CodexUsage | None = None) -> Replay:
        store = open_store(tmp_path / f"proj-{name}")
        stores.append(store)
        session = store.create_session(sdk="codex", provider="openai", model="gpt-5")
        run = store.create_run(session.id, provider="openai", model="gpt-5")
        bus = EventBus()
        live: list[dict[str, Any]] = []
        bus.subscribe_run(run.id, live.append)
        emitter = RunEmitter(
            store, bus, run_id=run.id, session_id=session.id, persist_deltas=False, last_seq=0
        )
        history = CanonicalHistory(
            store,
            emitter,
            run,
            stored=threads.call,
            sdk="codex",
            redactor=Redactor({}),
            max_iterations=10,
        )
        mapper = CodexMapper(
            project=RECORDED_PROJECT, model="gpt-5", id_prefix="cx_", baseline=baseline
        )
        events: list[HistoryEvent] = []

        async def play() -> None:  # as the adapter does, on a loop
            for line in (TRANSCRIPTS / f"codex_{name}.jsonl").read_text().splitlines():
                for event in mapper.feed(line):
                    events.append(event)
                    await history(event)

        asyncio.run(play())
        return Replay(store, mapper, events, live, session.id, run.id)

    yield run
    threads.close()
    for store in stores:
        store.close()


def _types(live: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in live]


def test_codex_plain_answer_transcript(replay: Any) -> None:
    r = replay("answer")
    assert r.mapper.thread_id == "01a20186-ea72-72b0-918a-9c1da7580e7b"
    assert r.mapper.completed
    assert r.mapper.failure is None
    # The "model metadata not found" error item is a warning: kept, not history.
    assert r.mapper.last_error is None
    (warning,) = r.mapper.warnings
    assert warning.startswith("Model metadata for `gpt-5` not found")
    expected_cost = cost_usd("openai", "gpt-5", Usage(input_tokens=120, output_tokens=7))
    assert r.history_events == [
        AssistantText(text="Hello from the fake model."),
        TurnMeta(
            provider="openai",
            model="gpt-5",
            input_tokens=120,
            output_tokens=7,
            cost_usd=expected_cost,
            stop_reason="completed",
            extra={
                "codex": {
                    "thread_id": "01a20186-ea72-72b0-918a-9c1da7580e7b",
                    "cached_input_tokens": 0,
                    "reasoning_output_tokens": 0,
                }
            },
        ),
        TurnDone(),
    ]
    (message,) = r.messages()
    assert message.role == "assistant"
    assert message.text == "Hello from the fake model."
    assert message.meta["usage"] == {"input_tokens": 120, "output_tokens": 7}
    assert message.meta["cost_usd"] == pytest.approx(expected_cost)
    assert message.meta["sdk"] == "codex"
    assert message.meta["codex"]["thread_id"] == r.mapper.thread_id
    assert _types(r.live) == [
        "iteration",
        "output.text.delta",
        "usage",
        "output.text.done",
        "message.completed",
    ]


def test_codex_tool_transcript_builds_full_history(replay: Any) -> None:
    r = replay("tools")
    calls = [e for e in r.history_events if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.name, c.tool_type) for c in calls] == [
        ("cx_item_3", "shell", "shell"),
        ("cx_item_4", "apply_patch", "file_change"),
        ("cx_item_5", "shell", "shell"),
    ]
    assert calls[0].arguments == {"command": "/bin/bash -lc 'cat notes.txt'"}
    assert calls[1].arguments == {
        "changes": [{"path": "hello.txt", "kind": "add"}, {"path": "notes.txt", "kind": "update"}]
    }
    results = {e.id: e for e in r.history_events if isinstance(e, ToolResultEvent)}
    assert results["cx_item_3"].output == "hello notes\nline2\n"
    assert not results["cx_item_3"].is_error
    assert results["cx_item_5"].is_error  # exit code 1
    assert "No such file" in results["cx_item_5"].output

    # Stored: assistant (thinking, text, call) / tool / assistant (call) / tool /
    # assistant (call) / tool / assistant (final text, with the turn's usage).
    messages = r.messages()
    assert [m.role for m in messages] == [
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    first = messages[0]
    assert [type(p) for p in first.parts] == [ReasoningPart, TextPart, ToolCallPart]
    assert first.parts[0] == ReasoningPart(text="I should read the notes first.")
    assert first.text == "Let me look."
    assert first.meta["usage"] == {"input_tokens": 0, "output_tokens": 0}
    tool_parts = [m.parts[0] for m in messages if m.role == "tool"]
    assert all(isinstance(p, ToolResultPart) for p in tool_parts)
    assert [(p.tool_call_id, p.name, p.is_error) for p in tool_parts] == [
        ("cx_item_3", "shell", False),
        ("cx_item_4", "apply_patch", False),
        ("cx_item_5", "shell", True),
    ]
    assert tool_parts[1].output == "Changed:\nA hello.txt\nM notes.txt"
    final = messages[-1]
    assert final.text == "I added hello.txt and fixed line two."
    assert final.meta["usage"] == {"input_tokens": 1400, "output_tokens": 44}
    assert final.meta["codex"]["reasoning_output_tokens"] == 6

    rows = {row.tool_call_id: row for row in r.store.list_tool_calls(run_id=r.run_id)}
    assert {k: (v.name, v.status, v.is_error) for k, v in rows.items()} == {
        "cx_item_3": ("shell", "completed", False),
        "cx_item_4": ("apply_patch", "completed", False),
        "cx_item_5": ("shell", "failed", True),
    }
    assert rows["cx_item_3"].result == {
        "exit_code": 0,
        "status": "completed",
        "output": "hello notes\nline2\n",
    }
    assert rows["cx_item_3"].message_id == first.id

    # The file change's artifact: the files and kinds codex reported, line counts unknown.
    (artifact,) = r.store.list_artifacts(run_id=r.run_id)
    assert tool_parts[1].artifact_id == artifact.id
    assert artifact.kind == "file_diff"
    assert artifact.title == "Changes to hello.txt, notes.txt"
    assert artifact.data is not None
    assert artifact.data["summary"] == {"files": 2, "additions": None, "deletions": None}
    assert artifact.data["files"] == [
        {"path": "hello.txt", "op": "add", "additions": None, "deletions": None},
        {"path": "notes.txt", "op": "update", "additions": None, "deletions": None},
    ]
    assert artifact.data["patch"] == (
        "--- /dev/null\n+++ b/hello.txt\n--- a/notes.txt\n+++ b/notes.txt\n"
    )

    # Live: one iteration per assistant message; every call announced, then answered.
    types = _types(r.live)
    assert types.count("iteration") == 4
    assert types.count("tool.call.started") == 3
    assert types.count("tool.call.output") == 3
    assert types.index("tool.call.started") < types.index("tool.call.output")
    outputs = [e for e in r.live if e["type"] == "tool.call.output"]
    assert outputs[1]["artifact"]["kind"] == "file_diff"
    assert outputs[1]["artifact"]["summary"] == {"files": 2, "additions": None, "deletions": None}
    assert [e["ok"] for e in outputs] == [True, True, False]
    assert types[-3:] == ["usage", "output.text.done", "message.completed"]


def test_codex_failed_turn_keeps_what_arrived(replay: Any) -> None:
    r = replay("failed")
    assert not r.mapper.completed
    assert r.mapper.failure is not None
    assert "(fake) error 400" in r.mapper.failure
    assert isinstance(r.history_events[-1], TurnDone)
    assert [m.role for m in r.messages()] == ["assistant", "tool"]
    assert r.messages()[0].text == "Partial answer"
    assert [row.status for row in r.store.list_tool_calls(run_id=r.run_id)] == ["completed"]


def test_codex_reconnect_errors_are_counted(replay: Any) -> None:
    r = replay("reconnect")
    assert r.history_events == []
    assert r.mapper.reconnects == 2
    assert r.mapper.last_error is not None
    assert r.mapper.last_error.startswith("Reconnecting")
    assert r.messages() == []
    # Any other event is progress: the count starts again.
    r.mapper.feed('{"type":"item.completed","item":{"id":"x","type":"agent_message","text":"ok"}}')
    assert r.mapper.reconnects == 0


def test_codex_documented_items_and_unknown_types(replay: Any) -> None:
    r = replay("documented_items")
    calls = [e for e in r.history_events if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.name, c.tool_type) for c in calls] == [
        ("cx_item_0", "todo_list", "todo_list"),
        ("cx_item_1", "web_search", "web_search"),
        ("cx_item_2", "filesystem.read_file", "mcp"),
        ("cx_item_3", "filesystem.read_file", "mcp"),
    ]
    assert calls[0].arguments == {
        "items": [
            {"text": "Search the docs", "completed": False},
            {"text": "Read the file", "completed": False},
        ]
    }
    assert calls[1].arguments == {"query": "jupyter kernel protocol"}
    assert calls[2].arguments == {"path": "notes.txt"}
    results = {e.id: e for e in r.history_events if isinstance(e, ToolResultEvent)}
    assert results["cx_item_0"].output == "- [x] Search the docs\n- [x] Read the file"
    assert results["cx_item_1"].output == "searched the web for: jupyter kernel protocol"
    assert (results["cx_item_2"].output, results["cx_item_2"].is_error) == ("hello notes", False)
    assert (results["cx_item_3"].output, results["cx_item_3"].is_error) == ("File not found", True)
    # The unknown item, the unknown event and the non-JSON line left no trace.
    assert len([e for e in r.history_events if isinstance(e, ToolResultEvent)]) == 4
    assert r.mapper.events_seen == 14
    final = r.messages()[-1]
    assert final.text == "The notes say hello."
    assert final.meta["codex"]["cached_input_tokens"] == 200
    rows = r.store.list_tool_calls(run_id=r.run_id)
    assert sorted(row.name for row in rows) == [
        "filesystem.read_file",
        "filesystem.read_file",
        "todo_list",
        "web_search",
    ]


def test_codex_usage_is_the_difference_to_the_previous_run(replay: Any) -> None:
    # turn.completed reports the thread's totals: a resumed thread counts earlier runs again.
    r = replay("answer", baseline=CodexUsage(input_tokens=100, output_tokens=5))
    meta = next(e for e in r.history_events if isinstance(e, TurnMeta))
    assert (meta.input_tokens, meta.output_tokens) == (20, 2)
    assert r.mapper.totals == CodexUsage(input_tokens=120, output_tokens=7)
    # A report below the baseline is a new thread: it counts whole.
    fresh = replay("answer", baseline=CodexUsage(input_tokens=5000, output_tokens=500))
    meta = next(e for e in fresh.history_events if isinstance(e, TurnMeta))
    assert (meta.input_tokens, meta.output_tokens) == (120, 7)


def test_codex_mapper_closes_unfinished_calls() -> None:
    mapper = CodexMapper(id_prefix="p_")
    started = mapper.feed(
        b'{"type":"item.started","item":{"id":"item_1","type":"command_execution",'
        b'"command":"sleep 9","aggregated_output":"","exit_code":null,"status":"in_progress"}}'
    )
    assert started == [
        ToolCallEvent(
            id="p_item_1", name="shell", arguments={"command": "sleep 9"}, tool_type="shell"
        )
    ]
    closing = mapper.finish()
    assert closing == [
        ToolResultEvent(
            id="p_item_1",
            name="shell",
            output="(codex stopped before this call finished)",
            is_error=True,
        ),
        TurnDone(),
    ]
    assert mapper.finish() == [TurnDone()]


def test_codex_mapper_separates_messages_and_skips_junk() -> None:
    mapper = CodexMapper()
    lines = [
        "",
        "[]",
        "{broken",
        '{"type":"item.completed","item":{"id":"a","type":"agent_message","text":"One."}}',
        '{"type":"item.completed","item":{"id":"b","type":"agent_message","text":"Two."}}',
        '{"type":"item.completed","item":{"id":"c","type":"reasoning","text":""}}',
    ]
    events = [e for line in lines for e in mapper.feed(line)]
    assert events == [AssistantText(text="One."), AssistantText(text="\n\nTwo.")]
    assert not any(isinstance(e, AssistantThinking) for e in events)
