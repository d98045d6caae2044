"""In-process fan-out of run events to whoever is listening (streams, widgets, displays).

Listeners are plain callables invoked on the loop thread that emits; they must be quick and
never raise (a listener that raises is dropped). Cross-process observers tail the store instead.

``publish`` runs once per streamed token, so it takes no lock: the listener lists are tuples,
replaced (never changed in place) under the lock by subscribe and unsubscribe, and reading a
dict entry is atomic, so a publisher always sees a whole list, old or new.

The bus also keeps every event it published of each run (``recent``) until ``KEEP`` seconds
after the run's attempt here ended (``run.final``, or a ``run.status`` giving the run back to
the queue): a consumer that subscribes late (``agi.stream()`` iterated a moment after it
returned, a reply stream set up after the run started, a follower thread started after
``submit``) replays what it missed from there, deltas included, even those not stored.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]
_Table = dict[str, tuple[Listener, ...]]

KEEP = 60.0  # seconds a run's published events stay replayable after its attempt here ended
_ENDINGS = frozenset(
    {"queued", "waiting_webhook", "waiting_approval", "waiting_execution"}
)  # run.status values that end an attempt


class EventBus:
    def __init__(self, *, keep: float = KEEP) -> None:
        self._by_run: _Table = {}
        self._by_session: _Table = {}
        self._lock = threading.Lock()
        self._keep = keep
        self._recent: dict[str, list[dict[str, Any]]] = {}  # run id -> events published
        self._ended: deque[tuple[float, str]] = deque()  # (when, run id), oldest first
        self._last_end: dict[str, float] = {}  # run id -> its latest entry in _ended

    def subscribe_run(self, run_id: str, listener: Listener) -> Callable[[], None]:
        return self._subscribe(self._by_run, run_id, listener)

    def subscribe_session(self, session_id: str, listener: Listener) -> Callable[[], None]:
        return self._subscribe(self._by_session, session_id, listener)

    def _subscribe(self, table: _Table, key: str, listener: Listener) -> Callable[[], None]:
        with self._lock:
            table[key] = (*table.get(key, ()), listener)

        def unsubscribe() -> None:
            with self._lock:
                _remove(table, key, listener)

        return unsubscribe

    def publish(self, session_id: str, event: dict[str, Any]) -> None:
        run_id = event.get("run_id", "")
        if run_id:
            recent = self._recent.get(run_id)
            if recent is None:
                recent = self._recent.setdefault(run_id, [])
            recent.append(event)
            kind = event.get("type")
            if kind == "run.final" or (kind == "run.status" and event.get("status") in _ENDINGS):
                self._attempt_ended(run_id)
        for listener in self._by_run.get(run_id, ()):
            self._call(listener, event)
        for listener in self._by_session.get(session_id, ()):
            self._call(listener, event)

    def recent(self, run_id: str) -> list[dict[str, Any]]:
        """The events of ``run_id`` published here and still kept, in order (a copy)."""
        return list(self._recent.get(run_id, ()))

    def _attempt_ended(self, run_id: str) -> None:
        now = time.monotonic()
        with self._lock:
            self._ended.append((now, run_id))
            self._last_end[run_id] = now
            while self._ended and self._ended[0][0] < now - self._keep:
                when, old = self._ended.popleft()
                if self._last_end.get(old) == when:  # (not ended again since)
                    del self._last_end[old]
                    self._recent.pop(old, None)

    def _call(self, listener: Listener, event: dict[str, Any]) -> None:
        try:
            listener(event)
        except Exception:
            log.exception("event listener failed; dropping it")
            self._drop(listener)

    def _drop(self, listener: Listener) -> None:
        with self._lock:
            for table in (self._by_run, self._by_session):
                for key in [k for k, v in table.items() if listener in v]:
                    _remove(table, key, listener)


def _remove(table: _Table, key: str, listener: Listener) -> None:
    """Remove one subscription of ``listener`` under ``key`` (the caller holds the lock)."""
    listeners = list(table.get(key, ()))
    if listener in listeners:
        listeners.remove(listener)
        if listeners:
            table[key] = tuple(listeners)
        else:
            del table[key]
