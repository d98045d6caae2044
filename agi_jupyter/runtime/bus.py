"""In-process fan-out of run events to whoever is listening (streams, widgets, displays).

Listeners are plain callables invoked on the loop thread that emits; they must be quick and
never raise (a listener that raises is dropped). Cross-process observers tail the store instead.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]


class EventBus:
    def __init__(self) -> None:
        self._by_run: defaultdict[str, list[Listener]] = defaultdict(list)
        self._by_session: defaultdict[str, list[Listener]] = defaultdict(list)
        self._lock = threading.Lock()

    def subscribe_run(self, run_id: str, listener: Listener) -> Callable[[], None]:
        return self._subscribe(self._by_run, run_id, listener)

    def subscribe_session(self, session_id: str, listener: Listener) -> Callable[[], None]:
        return self._subscribe(self._by_session, session_id, listener)

    def _subscribe(
        self, table: defaultdict[str, list[Listener]], key: str, listener: Listener
    ) -> Callable[[], None]:
        with self._lock:
            table[key].append(listener)

        def unsubscribe() -> None:
            with self._lock:
                listeners = table.get(key)
                if listeners and listener in listeners:
                    listeners.remove(listener)
                    if not listeners:
                        del table[key]

        return unsubscribe

    def publish(self, session_id: str, event: dict[str, Any]) -> None:
        with self._lock:
            listeners = [*self._by_run.get(event.get("run_id", ""), ())]
            listeners += self._by_session.get(session_id, ())
        for listener in listeners:
            try:
                listener(event)
            except Exception:
                log.exception("event listener failed; dropping it")
                self._drop(listener)

    def _drop(self, listener: Listener) -> None:
        with self._lock:
            for table in (self._by_run, self._by_session):
                for key in [k for k, v in table.items() if listener in v]:
                    table[key].remove(listener)
                    if not table[key]:
                        del table[key]
