"""How long loading a long session history takes: ``list_messages`` and ``Agi.history``.

Builds a throwaway project with one session of N messages (default 10,000: user prompts,
assistant turns with reasoning + text + a tool call, and tool results: ~1.7 parts a message),
then times, several times each, ``store.list_messages`` and ``Agi.history`` with both views
(``Agi.history`` = ``list_messages`` + ``history_view``), and prints the median and best
wall-clock and the median CPU time of each. Every timed call includes freeing its result, as a
caller that drops it would. For scale it also times the bare SQLite fetch of the rows
``list_messages`` reads (its one SELECT, no decoding), and of the rows the store read before
migration m005 (messages, then message_parts joined to them).

    .venv/bin/python benchmarks/store_history.py [--messages 10000] [--repeat 9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from agi_jupyter.app import Agi
from agi_jupyter.records import Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from agi_jupyter.store import SqliteStore
from agi_jupyter.store.rows import MESSAGE_SELECT


def parts_for(i: int) -> tuple[Any, list[Part]]:
    """The i-th message of a plausible agent conversation: (role, parts)."""
    kind = i % 3
    if kind == 0:
        return "user", [TextPart(text=f"Question {i}: what is in data_{i}.csv? " * 3)]
    if kind == 1:
        return "assistant", [
            ReasoningPart(text=f"I should read data_{i}.csv first."),
            TextPart(text="Let me look at the file."),
            ToolCallPart(tool_call_id=f"call_{i}", name="fs.read", arguments={"path": f"{i}.csv"}),
        ]
    output = "a,b\n1,2\n" * 20
    return "tool", [ToolResultPart(tool_call_id=f"call_{i - 1}", name="fs.read", output=output)]


def build(store: SqliteStore, count: int) -> str:
    session = store.create_session(title="benchmark")
    for i in range(count):
        role, parts = parts_for(i)
        store.add_message(session.id, role, parts, meta={"model": "fake"} if i % 3 else None)
    return session.id


def bare_fetch(store: SqliteStore, session_id: str) -> None:
    """The one SELECT of ``list_messages``, rows fetched and dropped."""
    with store._read() as conn:
        assert conn is not None
        conn.execute(
            f"SELECT {MESSAGE_SELECT} FROM messages WHERE session_id = ?"
            " ORDER BY created_at, rowid LIMIT -1",
            [session_id],
        ).fetchall()


def bare_fetch_before_m005(store: SqliteStore, session_id: str) -> None:
    """The two SELECTs the store made before the ``parts`` column (message_parts unchanged)."""
    with store._read() as conn:
        assert conn is not None
        conn.execute("SELECT * FROM messages WHERE session_id = ?", [session_id]).fetchall()
        conn.execute(
            "SELECT p.message_id, p.type, p.content FROM messages m"
            " JOIN message_parts p ON p.message_id = m.id WHERE m.session_id = ?",
            [session_id],
        ).fetchall()


def timings(fn: Callable[[], object], repeat: int) -> tuple[list[float], list[float]]:
    wall, cpu = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return wall, cpu


def report(label: str, wall: list[float], cpu: list[float]) -> None:
    ms = [statistics.median(wall) * 1000, min(wall) * 1000, statistics.median(cpu) * 1000]
    print(f"{label}: median {ms[0]:.1f} ms, best {ms[1]:.1f} ms (CPU median {ms[2]:.1f} ms)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Time loading a long history from the store.")
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory() as home,
        tempfile.TemporaryDirectory() as project,
        Agi(project, env={"HOME": home}) as agi,
    ):
        store = agi.store
        assert isinstance(store, SqliteStore)
        start = time.perf_counter()
        session_id = build(store, args.messages)
        build_s = time.perf_counter() - start
        print(f"wrote {args.messages:,} messages in {build_s:.2f} s")
        history = store.list_messages(session_id)
        parts = sum(len(m.parts) for m in history)
        assert len(history) == args.messages
        report(
            f"list_messages ({args.messages:,} messages, {parts:,} parts)",
            *timings(lambda: store.list_messages(session_id), args.repeat),
        )
        for view in ("full", "simple"):
            report(
                f"Agi.history(view={view!r})",
                *timings(lambda view=view: agi.history(session_id, view=view), args.repeat),
            )
        report(
            "bare SQLite fetch of the rows list_messages reads",
            *timings(lambda: bare_fetch(store, session_id), args.repeat),
        )
        report(
            "bare SQLite fetch of the rows read before m005",
            *timings(lambda: bare_fetch_before_m005(store, session_id), args.repeat),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
