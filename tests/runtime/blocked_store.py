"""Blocking the store from outside (SQLite's write lock held by a connection of our own,
PostgreSQL's pool taken) while a run streams, and what the stream showed meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from psycopg_pool import PoolTimeout

from agi_jupyter.app import Agi

# The store stays blocked until the run's stream has shown this many more deltas (at the fake
# server's pace, many times the emitter's flush interval: a write of the run is made and waits
# meanwhile), or at most DEADLINE seconds (less than SQLite's busy timeout: a stalled loop shows
# as too few deltas, not as a failed write).
ENOUGH = 20
DEADLINE = 5.0


@contextlib.contextmanager
def sqlite_write_lock(project: Path) -> Iterator[None]:
    """Hold the project database's write lock from a connection of our own."""
    path = project / ".agi" / "agi.sqlite"
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield
        conn.execute("ROLLBACK")
    finally:
        conn.close()


@contextlib.contextmanager
def pool_exhausted(agi: Agi) -> Iterator[None]:
    """Take every connection of the project's PostgreSQL pool."""
    pool: Any = agi.store.inner._pool  # type: ignore[attr-defined]
    taken = []
    try:
        while True:
            try:
                taken.append(pool.getconn(timeout=0.5))
            except PoolTimeout:
                break
        yield
    finally:
        for conn in taken:
            pool.putconn(conn)


def blocked_store(agi: Agi, project: Path, backend: str) -> Callable[[], Any]:
    if backend == "sqlite":
        return lambda: sqlite_write_lock(project)
    return lambda: pool_exhausted(agi)


@dataclass
class Blocked:
    """What a run's stream showed with the store blocked from its first text delta on."""

    events: list[dict[str, Any]] = field(default_factory=list)
    deltas: int = 0  # text deltas the stream showed while the store was blocked
    beats: int = 0  # ticks of another task on the runtime loop meanwhile
    storing: int = 0  # of them, ticks once ``storing`` was set
    by_deadline: bool = False  # released by DEADLINE, not by ``enough``


def stream_blocked(
    agi: Agi,
    block: Callable[[], Any],
    prompt: str,
    session_id: str,
    *,
    storing: threading.Event | None = None,
) -> Blocked:
    """Stream a run of ``session_id``; once its answer streams, block the store until the
    stream showed ENOUGH more deltas (and, with ``storing``, until the loop ticked 10 times
    after it was set: a write of the run waited meanwhile), or DEADLINE. A heartbeat task on
    the runtime loop counts its ticks meanwhile."""
    seen = Blocked()
    locked, enough, released = threading.Event(), threading.Event(), threading.Event()

    def check() -> None:
        if seen.deltas >= ENOUGH and (storing is None or seen.storing >= 10):
            enough.set()

    async def heartbeat() -> None:  # another task on the runtime loop
        while not released.is_set():
            await asyncio.sleep(0.01)
            if locked.is_set():
                seen.beats += 1
                if storing is not None and storing.is_set():
                    seen.storing += 1
                    check()

    def hold() -> None:
        with block():
            locked.set()
            seen.by_deadline = not enough.wait(DEADLINE)
            locked.clear()
        released.set()

    beating = agi.loop.submit(heartbeat())
    holder = threading.Thread(target=hold)
    for event in agi.stream(prompt, session=session_id):
        seen.events.append(event)
        if event["type"] != "output.text.delta":
            continue
        if not holder.is_alive() and not released.is_set() and not locked.is_set():
            holder.start()  # the answer is streaming: block the store now
            assert locked.wait(10)
        elif locked.is_set():
            seen.deltas += 1
            check()
    holder.join(10)
    released.set()
    beating.result(10)
    return seen


def assert_stored_as_streamed(agi: Agi, events: list[dict[str, Any]]) -> str:
    """Every event was stored once, in order, and the stream had them all in the same order;
    the run succeeded. Returns its id."""
    assert events[-1]["type"] == "run.final"
    assert events[-1]["run"]["status"] == "succeeded"
    run_id: str = events[-1]["run_id"]
    stored = agi.store.list_run_events(run_id)
    seqs = [e.seq for e in stored]
    assert seqs == sorted(set(seqs))
    assert seqs == [e["seq"] for e in events]
    assert agi.run(run_id).status == "succeeded"
    return run_id
