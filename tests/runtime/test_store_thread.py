"""A store that blocks (SQLite's write lock held elsewhere, PostgreSQL's pool exhausted) does not
stall the runtime loop: the runtime's store calls wait on the store thread, not on the loop."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from psycopg_pool import PoolTimeout

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.runtime.conftest import MakeAgi

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


def test_a_blocked_store_does_not_stall_the_runtime_loop(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, backend: str
) -> None:
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    chunks = [f"w{i} " for i in range(120)]
    fake_llm.enqueue(Turn(chunks=chunks, fault=Fault(stall_between_events=0.03)))
    block = blocked_store(agi, project, backend)
    locked = threading.Event()
    enough = threading.Event()
    released = threading.Event()
    beats = {"while_blocked": 0}

    async def heartbeat() -> None:  # another task on the runtime loop
        while not released.is_set():
            await asyncio.sleep(0.01)
            if locked.is_set():
                beats["while_blocked"] += 1

    def hold() -> None:
        with block():
            locked.set()
            enough.wait(DEADLINE)
            locked.clear()
        released.set()

    beating = agi.loop.submit(heartbeat())
    holder = threading.Thread(target=hold)
    deltas_while_blocked = 0
    events: list[dict[str, Any]] = []
    for event in agi.stream("go", session=session.id):
        events.append(event)
        if event["type"] != "output.text.delta":
            continue
        if not holder.is_alive() and not released.is_set() and not locked.is_set():
            holder.start()  # the answer is streaming: block the store now
            assert locked.wait(10)
        elif locked.is_set():
            deltas_while_blocked += 1
            if deltas_while_blocked >= ENOUGH:
                enough.set()
    holder.join(10)
    released.set()
    beating.result(10)

    # The loop kept going while the store was blocked: the other task ticked and the run's
    # deltas reached its stream.
    assert beats["while_blocked"] > 0
    assert deltas_while_blocked >= ENOUGH
    # Every event was stored once, in order, and the stream had them all in the same order.
    assert events[-1]["type"] == "run.final"
    assert events[-1]["run"]["status"] == "succeeded"
    run_id = events[-1]["run_id"]
    stored = agi.store.list_run_events(run_id)
    seqs = [e.seq for e in stored]
    assert seqs == sorted(set(seqs))
    assert [e.seq for e in stored] == [e["seq"] for e in events]
    text = "".join(e.payload["delta"] for e in stored if e.type == "output.text.delta")
    assert text == "".join(chunks)
    assert agi.run(run_id).status == "succeeded"
