"""Following a run's events: live from the in-process bus, persisted from the store.

One follower serves every case: a run executing in this process (bus events arrive at once), a
run executing in another process (the store is polled while the bus is quiet), and a replay
after a refresh (``after_seq``). Events are de-duplicated by ``seq``; following ends after
``run.final``. A follower that is dropped never affects the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
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


RunCursor = _Cursor
"""Public name of the cursor, for followers that own their wait loop (the kernel's main-thread
pump, which must also run work handed to the main thread while it waits)."""


class _Handoff:
    """Passes bus events (published on the runtime thread) to a consumer's asyncio queue,
    waking the consumer's loop once per burst of events rather than once per event."""

    def __init__(self, loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue[dict[str, Any]]):
        self._loop = loop
        self._inbox = inbox
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._pending.append(event)
            if len(self._pending) > 1:
                return  # a wake-up is already on its way
        with contextlib.suppress(RuntimeError):  # the consumer's loop is closed: it is gone
            self._loop.call_soon_threadsafe(self._flush)

    def _flush(self) -> None:
        with self._lock:
            events, self._pending = self._pending, []
        for event in events:
            self._inbox.put_nowait(event)


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
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    unsubscribe = bus.subscribe_run(run_id, _Handoff(asyncio.get_running_loop(), inbox))
    try:
        for event in cursor.from_store():
            yield event
        while not cursor.done:
            try:
                event = inbox.get_nowait()  # a burst: no timer and no task per event
            except asyncio.QueueEmpty:
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


SessionItem = tuple[int | None, dict[str, Any]]


async def afollow_session(
    store: Store,
    bus: EventBus,
    session_id: str,
    *,
    after_cursor: int | None = None,
    idle_every: float = 15.0,
) -> AsyncGenerator[SessionItem | None, None]:
    """Follow every run of a session, live, for as long as the consumer keeps reading.

    Events of runs executing in this process come from the bus at once; the store's run events
    of the session are tailed every ``POLL_INTERVAL``, which covers runs executing elsewhere (a
    notebook kernel, another server). Items are ``(cursor, event)``: ``cursor`` is the store's
    position of a tailed event (pass it back as ``after_cursor`` to resume), None for a live
    one. Events are de-duplicated per run by ``seq``. ``after_cursor=None`` starts at the end
    of what is stored. ``None`` is yielded once subscribed (nothing published from then on
    is missed) and after ``idle_every`` seconds without events, so a consumer can answer at
    once and send keep-alives (and notice a closed connection).
    """
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    unsubscribe = bus.subscribe_session(session_id, _Handoff(loop, inbox))
    seen: dict[str, int] = {}
    waiting: list[dict[str, Any]] = []
    try:
        cursor = _session_end(store, session_id) if after_cursor is None else after_cursor
        polled = idle_since = loop.time()
        yield None
        while True:
            items: list[SessionItem] = [(None, e) for e in [*waiting, *_drain(inbox)]]
            waiting.clear()
            if loop.time() - polled >= POLL_INTERVAL:
                for position, stored in store.list_session_run_events(
                    session_id, after_cursor=cursor
                ):
                    cursor = position
                    items.append((position, stored_event_to_dict(stored)))
                polled = loop.time()
            fresh = [item for item in items if _first_sight(seen, item[1])]
            for item in fresh:
                yield item
            if fresh:
                idle_since = loop.time()
            elif loop.time() - idle_since >= idle_every:
                idle_since = loop.time()
                yield None
            if inbox.empty():
                with contextlib.suppress(TimeoutError):
                    waiting.append(await asyncio.wait_for(inbox.get(), timeout=POLL_INTERVAL))
    finally:
        unsubscribe()


def _drain(inbox: asyncio.Queue[dict[str, Any]]) -> list[dict[str, Any]]:
    events = []
    while not inbox.empty():
        events.append(inbox.get_nowait())
    return events


def _first_sight(seen: dict[str, int], event: dict[str, Any]) -> bool:
    run_id, seq = str(event.get("run_id") or ""), int(event.get("seq") or 0)
    if not run_id or not seq:
        return True  # session-level events (session.updated, ...) have no run sequence
    if seq <= seen.get(run_id, 0):
        return False
    seen[run_id] = seq
    return True


def _session_end(store: Store, session_id: str) -> int:
    """The cursor after the last stored run event of the session."""
    cursor = 0
    while True:
        page = store.list_session_run_events(session_id, after_cursor=cursor, limit=500)
        if not page:
            return cursor
        cursor = page[-1][0]
