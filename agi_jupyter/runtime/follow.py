"""Following a run's events: live from the in-process bus, persisted from the store.

One follower serves every case: a run executing in this process (bus events arrive at once), a
run executing in another process (the store is polled while the bus is quiet), and a replay
after a refresh (``after_seq``). Events are de-duplicated by ``seq``; following ends after
``run.final``, or when the run waits for a person's decision (``waiting_approval``: the
caller shows the question; following again after the decision continues). A follower that is
dropped never affects the run.

Bus events are published on the runtime's thread and consumed on another (a caller's thread,
tornado's loop). Waking the consumer for every token costs more than the token itself: each
wake-up is a futex call, a context switch and a GIL hand-over in both directions, which made
a 20,000-token ``Agi.stream`` cost ~10 µs more CPU per token on the runtime's side alone.
So while a run streams deltas, the consumer is woken at most once per ``LINGER`` and takes
every event waiting; coarse events (``run.meta``, a tool call, ``run.final``...) and the first
event after a quiet spell still wake it at once.

A follower that starts late loses nothing (``_Cursor.catch_up``): it subscribes first, then
merges, by ``seq``, the events the bus still keeps of the run (everything published here,
deltas included), the stored ones, and whatever reached its mailbox meanwhile. An event with a
lower ``seq`` than one taken from these can no longer arrive afterwards: an emitter publishes
in ``seq`` order and stores an event only after publishing every event before it.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import threading
import weakref
from collections.abc import AsyncGenerator, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agi_jupyter import events as ev
from agi_jupyter.events import DELTA_TYPES, event_to_dict
from agi_jupyter.records import Run, RunEvent, utc_now

if TYPE_CHECKING:
    from agi_jupyter.runtime.bus import EventBus
    from agi_jupyter.store import Store

POLL_INTERVAL = 0.25
# Seconds a consumer lets deltas gather before it is woken for them: 20 batches a second, the
# rate the notebook display updates at. Each wake-up of a consumer thread also costs the
# runtime's thread a GIL hand-over; at 5 ms they made a 20,000-token ``Agi.stream`` ~2% dearer.
LINGER = 0.05


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
        self.done = event.get("type") == "run.final" or self._waits(event)
        return True

    def _waits(self, event: dict[str, Any]) -> bool:
        """Whether ``event`` parked the run where it still waits (not an earlier wait)."""
        if event.get("type") != "run.status" or event.get("status") != "waiting_approval":
            return False
        if self.store.get_run(self.run_id).status != "waiting_approval":
            return False
        return not self.store.list_run_events(self.run_id, after_seq=self.last)

    def catch_up(self, live: list[dict[str, Any]], *, fresh: bool = False) -> list[dict[str, Any]]:
        """``from_store``, merged by ``seq`` with ``live`` events (those the bus kept of the
        run, and those that reached the follower since it subscribed): the first batch of a
        follower, which may start after the run published events it never stored.

        ``fresh``: the run was just created by the caller, in this process. Every event it
        stored so far was published on this bus first or is about to be (a coarse event is
        published once stored), so the bus alone is read: no store read on the consumer's
        thread (tornado's loop, the caller's) while the run starts. Were the run executed by
        another process instead (not started here, taken by a tick elsewhere), nothing
        reaches the bus and the store is read once it has been quiet for ``POLL_INTERVAL``,
        from the start."""
        if not fresh:
            return self.from_store(live)
        by_seq = {int(e["seq"]): e for e in live if int(e.get("seq", 0)) > self.last}
        return [by_seq[seq] for seq in sorted(by_seq) if self.accept(by_seq[seq])]

    def from_store(self, live: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Persisted events not yet seen (with ``live`` ones merged in by ``seq``); a synthetic
        ``run.final`` for an ended run without one."""
        events = [
            stored_event_to_dict(e)
            for e in self.store.list_run_events(self.run_id, after_seq=self.last)
        ]
        if live:
            by_seq = {int(e["seq"]): e for e in events}
            by_seq.update((int(e["seq"]), e) for e in live if int(e.get("seq", 0)) > self.last)
            events = [by_seq[seq] for seq in sorted(by_seq)]
        accepted = [e for e in events if self.accept(e)]
        if not self.done and not events:
            run = self.store.get_run(self.run_id)
            ended = run.is_terminal
            if run.status == "waiting_approval":  # (its event came before the run was parked)
                self.done = True
            elif ended and not self.store.list_run_events(self.run_id, after_seq=self.last):
                from agi_jupyter.runtime.runs import run_to_dict

                final = ev.RunFinal(run=run_to_dict(run), run_id=run.id, ts=utc_now())
                final.seq = self.last + 1
                data = event_to_dict(final)
                if self.accept(data):
                    accepted.append(data)
        return accepted


def is_new(run: Run) -> bool:
    """Whether ``run`` is as its creator stored it (never claimed): what ``submit`` returns for
    a new run, not for a running turn a message joined. Its follower may be ``fresh``."""
    return run.status == "queued" and run.attempt == 0


RunCursor = _Cursor
"""Public name of the cursor, for followers that own their wait loop (the kernel's main-thread
pump, which must also run work handed to the main thread while it waits)."""


class _Mailbox(abc.ABC):
    """Bus events for one consumer on another thread, and when to wake it.

    The publisher (the runtime's thread) appends under the lock and wakes the consumer only
    when it is blocked and waiting for this kind of event: any event after a quiet spell, only
    a coarse one while it lingers over deltas. Subclasses say how a blocked consumer waits.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[dict[str, Any]] = []
        self._urgent = False  # a coarse event is waiting
        self._wake_on: str | None = None  # what wakes the blocked consumer: "any" | "urgent"

    def __call__(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._events.append(event)
            urgent = event.get("type") not in DELTA_TYPES
            self._urgent = self._urgent or urgent
            if self._wake_on is None or (self._wake_on == "urgent" and not urgent):
                return
            self._wake_on = None
            self._wake(urgent)

    @abc.abstractmethod
    def _wake(self, urgent: bool) -> None:
        """Wake the blocked consumer (called with the lock held); ``urgent``: for a coarse
        event, which should reach it without delay."""

    def _arm(self, quiet: float, linger: bool) -> float:
        """Before blocking (lock held): how long to wait, 0 for not at all."""
        if linger and not self._urgent:
            self._wake_on = "urgent"
            return LINGER
        if not self._events:
            self._wake_on = "any"
            return quiet
        return 0.0

    def drain(self) -> list[dict[str, Any]]:
        """Every event waiting, without waiting."""
        with self._lock:
            events, self._events, self._urgent = self._events, [], False
            return events

    def _collect(self, linger: bool) -> list[dict[str, Any]] | None:
        """After waking (lock held): every event waiting; None when a wait for any timed out."""
        self._wake_on = None
        events, self._events, self._urgent = self._events, [], False
        return events if events or linger else None


class _ThreadMailbox(_Mailbox):
    """For a consumer thread that blocks in ``take``."""

    def __init__(self) -> None:
        super().__init__()
        self._ready = threading.Condition(self._lock)

    def _wake(self, urgent: bool) -> None:
        self._ready.notify()

    def take(self, quiet: float, *, linger: bool) -> list[dict[str, Any]] | None:
        """The events waiting once there are some (after ``LINGER`` with ``linger``, unless a
        coarse event comes first); None when ``quiet`` seconds passed without any."""
        with self._lock:
            wait = self._arm(quiet, linger)
            if wait:
                self._ready.wait(wait)
            return self._collect(linger)


class _LoopWaker:
    """Wakes one consumer loop for any number of mailboxes: a single ``call_soon_threadsafe``
    (a write to the loop's self-pipe, and a GIL hand-over) per wake-up of the loop, however
    many followers it serves (a server following 100 runs).

    For deltas, a publisher running its own loop (the runtime) sends the wake-up at the end of
    its current loop iteration, so every run that streamed in that iteration shares it; a
    coarse event (``run.meta`` first of all) is signalled at once, for the time to the first
    event."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._ready: list[_LoopMailbox] = []
        self._signalled = False  # a _run is on its way to the consumer loop

    def wake(self, mailbox: _LoopMailbox, *, urgent: bool) -> None:
        with self._lock:
            self._ready.append(mailbox)
            if self._signalled:
                return  # the coming _run delivers this mailbox too
        try:
            publisher = asyncio.get_running_loop()
        except RuntimeError:
            publisher = None
        if urgent or publisher is None or publisher is self._loop:
            self.signal()
        else:
            _signal_after_iteration(publisher, self)

    def signal(self) -> None:
        with self._lock:
            if self._signalled or not self._ready:
                return
            self._signalled = True
        with contextlib.suppress(RuntimeError):  # the loop is closed: its consumers are gone
            self._loop.call_soon_threadsafe(self._run)

    def _run(self) -> None:
        with self._lock:
            ready, self._ready, self._signalled = self._ready, [], False
        for mailbox in ready:
            mailbox.deliver()


_deferred = threading.local()  # per publisher thread: (its loop, wakers to signal)


def _signal_after_iteration(publisher: asyncio.AbstractEventLoop, waker: _LoopWaker) -> None:
    """Signal ``waker`` once the publisher's current loop iteration is done (one callback per
    iteration, however many wakers). A publisher loop that stops before it runs the callback
    takes nothing down with it: the waker stays unsignalled and the next wake-up signals it."""
    state: tuple[asyncio.AbstractEventLoop, set[_LoopWaker]] | None
    state = getattr(_deferred, "state", None)
    if state is None or state[0] is not publisher:
        fresh: set[_LoopWaker] = set()
        state = _deferred.state = (publisher, fresh)
    wakers = state[1]
    if not wakers:
        publisher.call_soon(_signal_all, wakers)
    wakers.add(waker)


def _signal_all(wakers: set[_LoopWaker]) -> None:
    pending = [*wakers]
    wakers.clear()
    for waker in pending:
        waker.signal()


_wakers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopWaker] = (
    weakref.WeakKeyDictionary()
)


class _LoopMailbox(_Mailbox):
    """For a consumer coroutine on its own asyncio loop (tornado's, a notebook's)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop
        waker = _wakers.get(loop)
        if waker is None:  # created on the loop's own thread, so no race with another creator
            waker = _wakers[loop] = _LoopWaker(loop)
        self._waker = waker
        self._waiter: asyncio.Future[None] | None = None  # touched on the loop only

    def _wake(self, urgent: bool) -> None:
        self._waker.wake(self, urgent=urgent)

    def deliver(self) -> None:
        """On the loop: end the consumer's wait."""
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def take(self, quiet: float, *, linger: bool) -> list[dict[str, Any]] | None:
        """As ``_ThreadMailbox.take``, awaiting instead of blocking."""
        with self._lock:
            wait = self._arm(quiet, linger)
        if wait:
            # No await between arming and creating the waiter: a wake-up reaches deliver()
            # through the loop, so it cannot run before the waiter exists.
            self._waiter = self._loop.create_future()
            timer = self._loop.call_later(wait, self.deliver)
            try:
                await self._waiter
            finally:
                timer.cancel()
                self._waiter = None
        with self._lock:
            return self._collect(linger)


def _has_delta(events: list[dict[str, Any]]) -> bool:
    return any(e.get("type") in DELTA_TYPES for e in events)


def follow_run(
    store: Store, bus: EventBus, run_id: str, *, after_seq: int = 0, fresh: bool = False
) -> Iterator[dict[str, Any]]:
    """Yield the run's events after ``after_seq`` until ``run.final`` (blocking iterator).
    ``fresh``: the caller just created the run here (see ``_Cursor.catch_up``)."""
    cursor = _Cursor(store, run_id, after_seq)
    mailbox = _ThreadMailbox()
    unsubscribe = bus.subscribe_run(run_id, mailbox)
    try:
        recent = bus.recent(run_id)
        yield from cursor.catch_up([*recent, *mailbox.drain()], fresh=fresh)
        streaming = False
        while not cursor.done:
            events = mailbox.take(POLL_INTERVAL, linger=streaming)
            if events is None:
                streaming = False
                yield from cursor.from_store()
                continue
            streaming = _has_delta(events)
            for event in events:
                if cursor.accept(event):
                    yield event
    finally:
        unsubscribe()


async def afollow_run_batches(
    store: Store, bus: EventBus, run_id: str, *, after_seq: int = 0, fresh: bool = False
) -> AsyncGenerator[list[dict[str, Any]], None]:
    """``afollow_run`` a batch at a time: every event that is available together, so a writer
    (the server's NDJSON/SSE streams) can send them in one write."""
    cursor = _Cursor(store, run_id, after_seq)
    mailbox = _LoopMailbox(asyncio.get_running_loop())
    unsubscribe = bus.subscribe_run(run_id, mailbox)
    try:
        recent = bus.recent(run_id)
        batch = cursor.catch_up([*recent, *mailbox.drain()], fresh=fresh)
        if batch:
            yield batch
        streaming = False
        while not cursor.done:
            events = await mailbox.take(POLL_INTERVAL, linger=streaming)
            if events is None:
                streaming = False
                batch = cursor.from_store()
            else:
                streaming = _has_delta(events)
                batch = [e for e in events if cursor.accept(e)]
            if batch:
                yield batch
    finally:
        unsubscribe()


async def afollow_run(
    store: Store, bus: EventBus, run_id: str, *, after_seq: int = 0, fresh: bool = False
) -> AsyncGenerator[dict[str, Any], None]:
    """The same as ``follow_run`` for a consumer on its own asyncio loop (e.g. tornado's)."""
    batches = afollow_run_batches(store, bus, run_id, after_seq=after_seq, fresh=fresh)
    try:
        async for batch in batches:
            for event in batch:
                yield event
    finally:
        await batches.aclose()


@dataclass(frozen=True)
class SessionMark:
    """Where a session stream stands right after one of its events: every stored run event of
    the session up to ``position`` (the store's opaque cursor) was sent, and so were the events
    of each run in ``seen`` up to its ``seq`` (sent live, they may be stored after
    ``position``; one entry a run whose live events the store position does not cover yet)."""

    position: str
    seen: Mapping[str, int]


SessionItem = tuple[SessionMark, dict[str, Any]]


async def afollow_session(
    store: Store,
    bus: EventBus,
    session_id: str,
    *,
    after: SessionMark | None = None,
    idle_every: float = 15.0,
) -> AsyncGenerator[SessionItem | None, None]:
    """Follow every run of a session, live, for as long as the consumer keeps reading.

    Events of runs executing in this process come from the bus at once; the store's run events
    of the session are tailed every ``POLL_INTERVAL``, which covers runs executing elsewhere (a
    notebook kernel, another server). Items are ``(mark, event)``: to resume right after an
    event, pass its ``mark`` as ``after`` (nothing at or before it is repeated, whichever runs
    and processes the events came from). Events are de-duplicated per run by ``seq``.
    ``after=None`` starts at the end of what is stored. ``None`` is yielded once subscribed
    (nothing published from then on is missed) and after ``idle_every`` seconds without
    events, so a consumer can answer at once and send keep-alives (and notice a closed
    connection).
    """
    loop = asyncio.get_running_loop()
    mailbox = _LoopMailbox(loop)
    unsubscribe = bus.subscribe_session(session_id, mailbox)
    seen = dict(after.seen) if after is not None else {}
    # runs whose events were sent live beyond what ``cursor`` covers: their latest seq sent
    ahead = dict(seen)
    live: list[dict[str, Any]] = []
    try:
        cursor = store.session_events_end(session_id) if after is None else after.position
        polled = idle_since = loop.time()
        yield None
        while True:
            items: list[SessionItem] = []
            for event in live:
                if _first_sight(seen, event):
                    run_id, seq = _run_seq(event)
                    if run_id:
                        ahead[run_id] = seq
                    items.append((SessionMark(cursor, dict(ahead)), event))
            if loop.time() - polled >= POLL_INTERVAL:
                for position, stored in store.list_session_run_events(
                    session_id, after_cursor=cursor
                ):
                    cursor = position
                    if ahead.get(stored.run_id, 0) <= stored.seq:
                        ahead.pop(stored.run_id, None)  # the position covers what was sent
                    event = stored_event_to_dict(stored)
                    if _first_sight(seen, event):
                        items.append((SessionMark(cursor, dict(ahead)), event))
                polled = loop.time()
            for item in items:
                yield item
            if items:
                idle_since = loop.time()
            elif loop.time() - idle_since >= idle_every:
                idle_since = loop.time()
                yield None
            live = await mailbox.take(POLL_INTERVAL, linger=_has_delta(live)) or []
    finally:
        unsubscribe()


def _run_seq(event: dict[str, Any]) -> tuple[str, int]:
    """The run and sequence of a run event; ``("", 0)`` for session-level events."""
    run_id, seq = event.get("run_id"), event.get("seq")
    if isinstance(run_id, str) and run_id and isinstance(seq, int) and seq > 0:
        return run_id, seq
    return "", 0


def _first_sight(seen: dict[str, int], event: dict[str, Any]) -> bool:
    run_id, seq = str(event.get("run_id") or ""), int(event.get("seq") or 0)
    if not run_id or not seq:
        return True  # session-level events (session.updated, ...) have no run sequence
    if seq <= seen.get(run_id, 0):
        return False
    seen[run_id] = seq
    return True
