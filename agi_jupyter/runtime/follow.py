"""Following a run's events: live from the in-process bus, persisted from the store.

One follower serves every case: a run executing in this process (bus events arrive at once), a
run executing in another process (the store is polled while the bus is quiet), and a replay
after a refresh (``after_seq``). Events are de-duplicated by ``seq``; following ends after
``run.final``. A follower that is dropped never affects the run.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from agi_jupyter import events as ev
from agi_jupyter.events import event_to_dict
from agi_jupyter.records import RunEvent, utc_now

if TYPE_CHECKING:
    from agi_jupyter.runtime.bus import EventBus
    from agi_jupyter.store import Store

POLL_INTERVAL = 0.25


def stored_event_to_dict(event: RunEvent) -> dict[str, Any]:
    return {"type": event.type, "run_id": event.run_id, "seq": event.seq, **event.payload}


class _Cursor:
    """De-duplication and the end condition shared by the sync and async followers."""

    def __init__(self, store: Store, run_id: str, after_seq: int) -> None:
        self.store = store
        self.run_id = run_id
        self.last = after_seq
        self.done = False

    def accept(self, event: dict[str, Any]) -> bool:
        if self.done or int(event.get("seq", 0)) <= self.last:
            return False
        self.last = int(event["seq"])
        self.done = event.get("type") == "run.final"
        return True

    def from_store(self) -> list[dict[str, Any]]:
        """Persisted events not yet seen; a synthetic ``run.final`` for an ended run without one."""
        events = [
            stored_event_to_dict(e)
            for e in self.store.list_run_events(self.run_id, after_seq=self.last)
        ]
        accepted = [e for e in events if self.accept(e)]
        if not self.done and not events:
            run = self.store.get_run(self.run_id)
            if run.is_terminal and not self.store.list_run_events(self.run_id, after_seq=self.last):
                from agi_jupyter.runtime.runs import run_to_dict

                final = ev.RunFinal(run=run_to_dict(run), run_id=run.id, ts=utc_now())
                final.seq = self.last + 1
                data = event_to_dict(final)
                if self.accept(data):
                    accepted.append(data)
        return accepted


def follow_run(
    store: Store, bus: EventBus, run_id: str, *, after_seq: int = 0
) -> Iterator[dict[str, Any]]:
    """Yield the run's events after ``after_seq`` until ``run.final`` (blocking iterator)."""
    cursor = _Cursor(store, run_id, after_seq)
    inbox: queue.Queue[dict[str, Any]] = queue.Queue()
    unsubscribe = bus.subscribe_run(run_id, inbox.put)
    try:
        yield from cursor.from_store()
        while not cursor.done:
            try:
                event = inbox.get(timeout=POLL_INTERVAL)
            except queue.Empty:
                yield from cursor.from_store()
                continue
            if cursor.accept(event):
                yield event
    finally:
        unsubscribe()


async def afollow_run(
    store: Store, bus: EventBus, run_id: str, *, after_seq: int = 0
) -> AsyncIterator[dict[str, Any]]:
    """The same as ``follow_run`` for a consumer on its own asyncio loop (e.g. tornado's)."""
    cursor = _Cursor(store, run_id, after_seq)
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def deliver(event: dict[str, Any]) -> None:
        loop.call_soon_threadsafe(inbox.put_nowait, event)

    unsubscribe = bus.subscribe_run(run_id, deliver)
    try:
        for event in cursor.from_store():
            yield event
        while not cursor.done:
            try:
                event = await asyncio.wait_for(inbox.get(), timeout=POLL_INTERVAL)
            except TimeoutError:
                for stored in cursor.from_store():
                    yield stored
                continue
            if cursor.accept(event):
                yield event
    finally:
        unsubscribe()
