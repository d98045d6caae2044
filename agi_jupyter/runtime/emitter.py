"""Stamps, persists and publishes the events of one run.

The emitter owns the run's ``seq`` counter, so every live event — persisted or not — carries a
unique, increasing ``seq``; the store keeps the coarse events (and the deltas only with
``persist_deltas``), so a replay with ``after_seq`` resumes exactly where a client left off.

With ``persist_deltas`` the deltas are written in batches: they are published at once, but
stored together with the next coarse event or at most ``FLUSH_INTERVAL`` after the first of
them, so a streaming run costs about ten store writes a second instead of one per token, and
observers in other processes (the side panel tailing the store) still see it live.

Text and reasoning deltas are coalesced: the fragments of one type that arrive within one turn
of the event loop (a provider delivers a burst of tokens from one network read without
yielding to the loop) go out as one delta event, at the end of that turn or before the next
other event, whichever comes first. A model streaming at its own pace gets one event per token
as before, with no added delay; a burst costs one event instead of hundreds (a 20,000-token
answer read at full speed: ~100 events instead of 20,000, for the emitter, the bus, every
follower and every HTTP stream). The text, its order and the order of events are unchanged;
only how it is cut into deltas depends on timing. Timestamps come from ``_utc_now_ms``.

The emitter of a run's owner carries its ``fence``: every event it stores is written with it,
so once the run changed hands the write raises ``RunLost``; the emitter then counts as lost,
publishes nothing more, and every later ``emit`` raises ``RunLost`` at once, which stops the
run's coroutine at its next event. It also keeps the text and reasoning streamed since the
last assistant message (``partial``), so a run that ends mid-answer can store what it showed.

On the runtime loop the emitter never waits for the store (``writer``, see store_thread.py):
its writes go to the store thread in order, and an event that must be stored before it is
published (a coarse event) is published when its write completes; the events after it wait
behind it (``_outbox``), so subscribers see them in ``seq`` order. Deltas are published at
once unless a coarse event before them still waits; a batch of deltas being written holds
nothing back. Code that calls the store itself and emits runs as a ``section`` on the store
thread: its events are written there as it goes and published on the loop when it ends. A
write that fails reaches the run at its next ``emit`` or ``drain``; ``RunLost`` marks the
emitter lost at once (``on_lost``). Off the loop (a cancel from another thread, no writer)
every write is made inline, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Literal, ParamSpec, TypeVar

from agi_jupyter.errors import RunLost
from agi_jupyter.events import (
    DELTA_TYPES,
    Event,
    ReasoningDelta,
    TextDelta,
    event_to_dict,
    is_persisted,
)
from agi_jupyter.records import JSON

if TYPE_CHECKING:
    from agi_jupyter.records import RunFence
    from agi_jupyter.runtime.bus import EventBus
    from agi_jupyter.runtime.store_thread import StoreThread
    from agi_jupyter.store import Store
    from agi_jupyter.tools.redact import Redactor, StreamRedactor

log = logging.getLogger(__name__)


FLUSH_INTERVAL = 0.1  # seconds a persisted delta may wait to be written with others

P = ParamSpec("P")
T = TypeVar("T")

DeltaType = Literal["output.text.delta", "reasoning.delta"]

_MILLIS = [f".{n:03d}Z" for n in range(1000)]
_second: tuple[int, str] = (-1, "")  # the whole UTC second last formatted, and its text


def _utc_now_ms() -> str:
    """``records.utc_now()`` (``2026-11-22T01:53:03.123Z``) in ~0.2 µs instead of ~1.5 µs.

    ``datetime.now(UTC).isoformat(...)`` cost as much as the rest of a delta's trip through
    the emitter; the date and time of day change once a second, so they are
    formatted once a second and only the milliseconds are appended per event. The pair is
    swapped in as one tuple, so a caller on another thread never reads a mismatched one."""
    global _second
    whole, millis = divmod(time.time_ns() // 1_000_000, 1000)
    second, text = _second
    if whole != second:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
        _second = (whole, text)
    return text + _MILLIS[millis]


class RunEmitter:
    def __init__(
        self,
        store: Store,
        bus: EventBus,
        *,
        run_id: str,
        session_id: str,
        persist_deltas: bool,
        last_seq: int,
        redactor: Redactor | None = None,
        fence: RunFence | None = None,
        on_lost: Callable[[], None] | None = None,
        writer: StoreThread | None = None,
    ) -> None:
        self.store = store
        self.bus = bus
        self.run_id = run_id
        self.session_id = session_id
        self.persist_deltas = persist_deltas
        self.seq = last_seq
        self.fence = fence  # the owner's fence: stored events are written with it
        self.lost = False  # a write found the run taken over: nothing more goes out
        self._on_lost = on_lost
        self.writer = writer  # the store thread its writes go to on the loop (None: inline)
        # Writes handed to the store thread: how many, the last of them, the last one holding
        # a coarse event, and how many completed (they complete in order).
        self._submitted = 0
        self._last_write: asyncio.Future[object] | None = None
        self._gate = 0
        self._completed = 0
        self._outbox: deque[tuple[int, JSON]] = deque()  # (write it waits for, event)
        self._failure: BaseException | None = None  # a write failed: raised at the next emit
        self._deferred: list[JSON] | None = None  # in a ``section``: published when it ends
        self.iteration: int | None = None  # of the last ``iteration`` event emitted
        # What was streamed since the last assistant message (``partial``).
        self._draft_text: list[str] = []
        self._draft_reasoning: list[str] = []
        self._held: list[JSON] | None = None  # events held back by ``together``
        self._pending: list[tuple[int, str, JSON]] = []  # deltas waiting to be written
        self._timer: asyncio.TimerHandle | None = None
        # The delta being coalesced in this turn of the loop: its type, fragments, and the
        # callback that sends it when the turn ends.
        self._delta_type: DeltaType | None = None
        self._fragments: list[str] = []
        self._delta_due: asyncio.Handle | None = None
        # Every event is redacted before it is stored or published; deltas as streams, so a
        # secret split across two deltas is held back until it is whole (see tools/redact.py).
        self.redactor = redactor if redactor else None
        self._delta_streams: dict[DeltaType, StreamRedactor[str]] = {}

    def emit(self, event: Event) -> None:
        if self.lost:
            raise RunLost(f"run {self.run_id} was taken over; its events are not sent")
        if self._failure is not None:
            self._raise_failure()
        if type(event) is TextDelta or type(event) is ReasoningDelta:
            self.emit_delta(event.type, event.delta)
            return
        if self._delta_type is not None:
            self.send_delta()  # the coalesced delta came first
        if self._delta_streams:
            self._flush_delta_streams()
        kind = event.type
        if kind == "iteration":
            self.iteration = getattr(event, "iteration", None)
        if kind == "iteration" or (
            kind == "message.completed" and getattr(event, "message", {}).get("role") == "assistant"
        ):
            self._draft_text, self._draft_reasoning = [], []
        self.seq += 1
        event.run_id, event.seq, event.ts = self.run_id, self.seq, _utc_now_ms()
        data = event_to_dict(event)
        if self.redactor is not None:
            data = self.redactor.redact_json(data)
        if is_persisted(data["type"], persist_deltas=self.persist_deltas):
            payload = {k: v for k, v in data.items() if k not in ("type", "run_id", "seq")}
            self._pending.append((self.seq, data["type"], payload))
            if self._held is not None:
                self._held.append(data)
                return
            if data["type"] not in DELTA_TYPES or not self._flush_later():
                self.flush()
        self._publish(data)

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """Events emitted in the block are stored in one transaction when it ends, then
        published in order (for events that follow each other with no model call between,
        such as ``run.status`` and ``run.final``: one write instead of several). If the block
        raises, they are neither stored nor published."""
        if self._held is not None:
            yield
            return
        self._held = []
        try:
            yield
        except BaseException:
            dropped = {data["seq"] for data in self._held}
            self._pending = [item for item in self._pending if item[0] not in dropped]
            self._held = None
            raise
        if self._delta_type is not None:
            self.send_delta()
        held, self._held = self._held, None
        self.flush()
        for data in held:
            self._publish(data)

    def emit_delta(self, type: DeltaType, delta: str) -> None:
        """``emit(TextDelta(delta=...))`` / ``emit(ReasoningDelta(...))``, coalesced with the
        fragments of the same type that follow in this turn of the event loop (see the module
        docstring). Without a running loop the delta goes out at once."""
        if type == self._delta_type:
            self._fragments.append(delta)  # the per-token path: one append
            return
        if self._delta_type is not None:
            self.send_delta()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._publish_delta(type, delta)
            return
        self._delta_type, self._fragments = type, [delta]
        self._delta_due = loop.call_soon(self.send_delta)

    def send_delta(self) -> None:
        """Send the delta being coalesced, if any, now."""
        if self._delta_due is not None:
            self._delta_due.cancel()
            self._delta_due = None
        type, self._delta_type = self._delta_type, None
        if type is None:
            return
        fragments, self._fragments = self._fragments, []
        self._publish_delta(type, fragments[0] if len(fragments) == 1 else "".join(fragments))

    def _publish_delta(self, type: DeltaType, delta: str) -> None:
        """The wire dict of a delta event (the keys and their order of ``event_to_dict``),
        built directly; persisted with ``persist_deltas``, then published."""
        if self.lost:
            return
        if self.redactor is not None:
            stream = self._delta_streams.get(type)
            if stream is None:
                stream = self._delta_streams[type] = self.redactor.stream()
            delta = stream.feed(delta)
            if not delta:
                return  # all held back: it may be the start of a secret
        self._send_delta_event(type, delta)

    def _flush_delta_streams(self) -> None:
        """Send what the delta streams hold back (before any other event)."""
        for type, stream in self._delta_streams.items():
            rest = stream.flush()
            if rest:
                self._send_delta_event(type, rest)

    def _send_delta_event(self, type: DeltaType, delta: str) -> None:
        (self._draft_text if type == "output.text.delta" else self._draft_reasoning).append(delta)
        self.seq += 1
        data = {"type": type, "run_id": self.run_id, "seq": self.seq, "ts": _utc_now_ms()}
        data["delta"] = delta
        if self.persist_deltas:
            self._pending.append((self.seq, type, {"ts": data["ts"], "delta": delta}))
            if self._held is not None:
                self._held.append(data)
                return
            if not self._flush_later():
                self.flush()
        elif self._held is not None:
            self._held.append(data)
            return
        if self._outbox or self._deferred is not None:
            self._publish(data)
        else:
            self.bus.publish(self.session_id, data)  # the per-delta path

    def flush(self) -> None:
        """Send the coalesced delta, then write the events still waiting, in one transaction,
        with their own seqs: on the store thread when on the loop with a writer (the events
        it holds are published when it completes), else now."""
        if self._delta_type is not None:
            self.send_delta()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if not batch or self.lost:
            return
        kinds = [(kind, payload) for _, kind, payload in batch]
        seqs = [seq for seq, _, _ in batch]
        if self.writer is not None and self._deferred is None and _on_a_loop():
            write: asyncio.Future[object] = self.writer.submit(
                self.store.append_run_events, self.run_id, kinds, seqs=seqs, fence=self.fence
            )
            self._submitted += 1
            if any(kind not in DELTA_TYPES for kind, _ in kinds):
                self._gate = self._submitted
            self._last_write = write
            write.add_done_callback(self._written)
            return
        try:
            self.store.append_run_events(self.run_id, kinds, seqs=seqs, fence=self.fence)
        except RunLost:
            self.mark_lost()
            raise

    def _publish(self, data: JSON) -> None:
        """Publish now, or after the write it must follow (see the module docstring)."""
        if self._deferred is not None:
            self._deferred.append(data)
        elif self._outbox or self._gate > self._completed:
            self._outbox.append((self._gate, data))
        else:
            self.bus.publish(self.session_id, data)

    def _written(self, write: asyncio.Future[object]) -> None:
        """A write completed (on the loop, in submission order): publish what waited for it."""
        self._completed += 1
        if write.cancelled():
            error: BaseException | None = RuntimeError("the store thread stopped")
        else:
            error = write.exception()
        if error is not None:
            self._outbox.clear()  # not stored: never published
            if isinstance(error, RunLost):
                log.info("run %s was taken over; its owner here stops", self.run_id)
                self.mark_lost()
            elif self._failure is None:
                self._failure = error
            return
        while self._outbox and self._outbox[0][0] <= self._completed:
            self.bus.publish(self.session_id, self._outbox.popleft()[1])

    def _raise_failure(self) -> None:
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    async def drain(self) -> None:
        """Write what waits and wait for every write handed to the store thread; raises the
        error of a write that failed (``RunLost`` when the run was taken over)."""
        self.flush()
        while self._last_write is not None and not self._last_write.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(self._last_write)
        if self.lost:
            raise RunLost(f"run {self.run_id} was taken over; its events are not sent")
        self._raise_failure()

    async def section(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` — code that calls the store and emits — on the store
        thread, after every write before it: its events are stored there as it emits them
        (before its later store calls, as inline) and published here when it ends, in order.
        Without a writer it runs here. Only while nothing else emits on this emitter (an
        attempt's ending): the emitter is the section's until it returns."""
        await self.drain()
        if self.writer is None:
            return fn(*args, **kwargs)
        self.defer()
        try:
            return await self.writer.call(fn, *args, **kwargs)
        finally:
            self.publish_deferred()

    def defer(self) -> None:
        """Start a section in a trip to the store thread already under way (the emitter of
        a run just claimed, made in the claim's trip, before anything else emitted on it):
        events are written inline and published when ``publish_deferred`` is called on the
        loop once the trip returned."""
        self._deferred = []

    def publish_deferred(self) -> None:
        """End the section: publish its events, in order (on the loop)."""
        deferred, self._deferred = self._deferred, None
        if not self.lost:
            for data in deferred or ():
                self.bus.publish(self.session_id, data)

    def partial(self) -> tuple[str, str]:
        """The text and the reasoning streamed since the last assistant message or iteration
        (what a run that ends now would lose), the delta still being coalesced and what the
        redaction streams hold back included: they are sent first."""
        if self._delta_type is not None:
            self.send_delta()
        if self._delta_streams:
            self._flush_delta_streams()
        return "".join(self._draft_text), "".join(self._draft_reasoning)

    def mark_lost(self) -> None:
        """The run was taken over: drop what waits, publish nothing more, tell the owner."""
        if self.lost:
            return
        self.lost = True
        self._pending = []
        self._outbox.clear()
        if self._delta_due is not None:
            self._delta_due.cancel()
            self._delta_due = None
        self._delta_type, self._fragments = None, []
        if self._on_lost is not None:
            self._on_lost()

    def _timed_flush(self) -> None:
        """The flush a timer runs: a lost run is reported through ``on_lost``, not raised into
        the event loop's exception handler."""
        self._timer = None
        try:
            self.flush()
        except RunLost:
            log.info("run %s was taken over; its owner here stops", self.run_id)

    def _flush_later(self) -> bool:
        """Arrange a flush ``FLUSH_INTERVAL`` from now; False when there is no running loop."""
        if self._timer is not None:
            return True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        self._timer = loop.call_later(FLUSH_INTERVAL, self._timed_flush)
        return True


def _on_a_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
