"""In-process fan-out of run events to whoever is listening (streams, widgets, displays).

Listeners are plain callables invoked on the loop thread that emits; they must be quick and
never raise (a listener that raises is dropped). Cross-process observers tail the store instead.

``publish`` runs once per streamed token, so it takes no lock: the listener lists are tuples,
replaced (never changed in place) under the lock by subscribe and unsubscribe, and reading a
dict entry is atomic, so a publisher always sees a whole list, old or new.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]
_Table = dict[str, tuple[Listener, ...]]


class EventBus:
    def __init__(self) -> None:
        self._by_run: _Table = {}
        self._by_session: _Table = {}
        self._lock = threading.Lock()

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
        for listener in self._by_run.get(event.get("run_id", ""), ()):
            self._call(listener, event)
        for listener in self._by_session.get(session_id, ()):
            self._call(listener, event)

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
