"""Every backend: a large string of a tool call's arguments, a message part or an event payload
is stored once (``store/values.py``), every read gives it back whole, argument deltas go once
the arguments are done, and deleting a session collects the blobs only it used."""

from __future__ import annotations

import hashlib
import random
import string

import pytest

from agi_jupyter.records import TextPart, ToolCallPart
from agi_jupyter.store import Store
from agi_jupyter.store.values import LARGE_VALUE
from tests.store.conftest import count

SIZE = 300_000
# The columns where a large value was stored before: none may hold its characters now.
COLUMNS = [
    ("tool_calls", "args"),
    ("tool_calls", "result"),
    ("messages", "parts"),
    ("message_parts", "content"),
    ("run_events", "payload"),
]


def big(seed: int, size: int = SIZE) -> str:
    return "".join(random.Random(seed).choices(string.ascii_letters, k=size))


def occurrences(store: Store, value: str) -> int:
    """In how many rows of the JSON columns a piece of ``value`` occurs, plus the blobs that
    hold it (a blob holds the literal as written: letters only, so exactly the value)."""
    needle = f"%{value[1000:1064]}%"
    rows = sum(
        count(store, f"SELECT COUNT(*) FROM {t} WHERE {c} LIKE ?", needle) for t, c in COLUMNS
    )
    sha = hashlib.sha256(value.encode()).hexdigest()
    return rows + count(store, "SELECT COUNT(*) FROM blobs WHERE sha256 = ?", sha)


def one_turn(store: Store, arg: str, *, call_id: str = "call_1") -> tuple[str, str]:
    """A session whose run calls ``fs_write`` with ``arg`` as content, recorded as the runtime
    does: deltas, the done event, the tool call, the assistant message and its event."""
    session = store.create_session()
    run = store.create_run(session.id)
    args = {"path": "big.txt", "content": arg}
    store.append_run_event(
        run.id, "tool.call.started", {"tool_call_id": call_id, "name": "fs_write"}
    )
    for piece in (arg[: SIZE // 2], arg[SIZE // 2 :]):
        store.append_run_event(
            run.id, "tool.call.arguments.delta", {"tool_call_id": call_id, "delta": piece}
        )
    store.append_run_event(
        run.id, "tool.call.arguments.done", {"tool_call_id": call_id, "arguments": args}
    )
    part = ToolCallPart(tool_call_id=call_id, name="fs_write", arguments=args)
    message = store.add_message(session.id, "assistant", [part], run_id=run.id)
    store.create_tool_call(run.id, call_id, "fs_write", args, message_id=message.id)
    store.append_run_event(
        run.id, "message.completed", {"message": {"id": message.id, "parts": [{"arguments": args}]}}
    )
    return session.id, run.id


def test_a_large_argument_is_stored_once_and_read_back_whole(store: Store) -> None:
    arg = big(1)
    session_id, run_id = one_turn(store, arg)
    assert occurrences(store, arg) == 1
    assert count(store, "SELECT COUNT(*) FROM blob_refs WHERE session_id = ?", session_id) == 1
    args = {"path": "big.txt", "content": arg}
    (call,) = store.list_tool_calls(run_id=run_id)
    assert call.args == args
    assert store.get_tool_call(call.id).args == args
    updated = store.update_tool_call(call.id, status="completed", result={"ok": True, "echo": arg})
    assert (updated.args, updated.result) == (args, {"ok": True, "echo": arg})
    assert store.get_tool_call(call.id).result == {"ok": True, "echo": arg}
    assert occurrences(store, arg) == 1
    for lazy in (False, True):
        (message,) = store.list_messages(session_id, lazy=lazy)
        assert message.parts == [
            ToolCallPart(tool_call_id="call_1", name="fs_write", arguments=args)
        ]
    assert store.get_message(message.id).parts == message.parts
    events = store.list_run_events(run_id)
    assert [e.type for e in events] == [
        "tool.call.started",
        "tool.call.arguments.done",
        "message.completed",
    ]
    assert events[1].payload["arguments"] == args
    assert events[2].payload["message"]["parts"] == [{"arguments": args}]
    streamed = store.list_session_run_events(session_id)
    assert [e.payload for _, e in streamed] == [e.payload for e in events]
    resumed = store.list_session_run_events(session_id, after_cursor=streamed[1][0])
    assert [e.payload for _, e in resumed] == [events[2].payload]


def test_message_parts_rewritten_keep_their_large_values(store: Store) -> None:
    session = store.create_session()
    text, other = big(2, LARGE_VALUE), big(3, LARGE_VALUE * 2)
    message = store.add_message(session.id, "assistant", [TextPart(text=text)])
    updated = store.update_message(message.id, parts=[TextPart(text=text), TextPart(text=other)])
    assert [p.text for p in updated.parts] == [text, other]  # type: ignore[union-attr]
    assert [p.text for p in store.get_message(message.id).parts] == [text, other]  # type: ignore[union-attr]
    assert count(store, "SELECT COUNT(*) FROM blobs") == 2
    short = store.add_message(session.id, "user", [TextPart(text="x" * (LARGE_VALUE - 10))])
    assert count(store, "SELECT COUNT(*) FROM blobs") == 2  # below the threshold: inline
    assert store.get_message(short.id).text == "x" * (LARGE_VALUE - 10)


@pytest.mark.parametrize(
    "value",
    [
        "\\/agi-blob:" + "0" * 64,  # what a reference looks like, as a string
        '"\\/agi-blob:' + "0" * 64 + '"',
        "/agi-blob:" + "a" * 64,
        'quotes " and \\ backslashes, \n newlines, \x00 NUL, é, 😀 ' * 400,  # large, escaped
        "\\" * (LARGE_VALUE + 1),
    ],
)
def test_any_string_reads_back_as_written(store: Store, value: str) -> None:
    session = store.create_session()
    run = store.create_run(session.id)
    payload: dict[str, object] = {"s": value, "nested": [{"s": value}], "n": 1}
    store.append_run_event(run.id, "notice", payload)
    assert store.list_run_events(run.id)[0].payload == payload
    call = store.create_tool_call(run.id, "c", "t", payload)
    assert store.get_tool_call(call.id).args == payload
    store.add_message(session.id, "user", [TextPart(text=value)])
    (message,) = store.list_messages(session.id, lazy=True)
    assert [p.text for p in message.parts] == [value]  # type: ignore[union-attr]


def test_argument_deltas_go_once_their_call_is_done(store: Store) -> None:
    session = store.create_session()
    run = store.create_run(session.id)
    for call in ("a", "b"):
        store.append_run_event(
            run.id, "tool.call.arguments.delta", {"tool_call_id": call, "delta": "{"}
        )
    store.append_run_events(
        run.id,
        [
            ("tool.call.arguments.delta", {"tool_call_id": "a", "delta": "}"}),
            ("tool.call.arguments.done", {"tool_call_id": "a", "arguments": {}}),
        ],
    )
    left = [(e.type, e.payload["tool_call_id"]) for e in store.list_run_events(run.id)]
    assert left == [("tool.call.arguments.delta", "b"), ("tool.call.arguments.done", "a")]


def test_deleting_a_session_collects_only_the_blobs_no_one_else_uses(store: Store) -> None:
    shared, own = big(4), big(5)
    first, _ = one_turn(store, shared)
    second, _ = one_turn(store, shared)
    third, _ = one_turn(store, own)
    snapshot = store.put_blob(own.encode())  # an undo snapshot with the same bytes
    store.add_change(run_id=None, kind="file", path="p", before_sha=None, after_sha=snapshot)
    assert count(store, "SELECT COUNT(*) FROM blobs") == 2
    store.delete_session(first)
    assert occurrences(store, shared) == 1
    (message,) = store.list_messages(second)
    assert message.parts[0].arguments["content"] == shared  # type: ignore[union-attr]
    store.delete_session(second)
    assert occurrences(store, shared) == 0
    store.delete_session(third)
    assert store.get_blob(snapshot) == own.encode()  # the change still refers to it
    assert count(store, "SELECT COUNT(*) FROM blob_refs") == 0


def test_a_message_of_a_session_reads_while_another_is_deleted(store: Store) -> None:
    """Two sessions that share a value, read and deleted in turns: the survivor reads whole."""
    value = big(6, LARGE_VALUE * 3)
    sessions = [store.create_session() for _ in range(3)]
    for session in sessions:
        store.add_message(session.id, "user", [TextPart(text=value)])
    for i, session in enumerate(sessions):
        store.delete_session(session.id)
        for rest in sessions[i + 1 :]:
            assert store.list_messages(rest.id)[0].text == value
    assert count(store, "SELECT COUNT(*) FROM blobs") == 0
