"""The scriptable state behind a fake server: turn queue, request log, stored responses, ids."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from agi_jupyter.testing.background import ResponseStore
from agi_jupyter.testing.plan import IdFactory, Plan, make_plan
from agi_jupyter.testing.rules import default_rule
from agi_jupyter.testing.script import JSON, RecordedRequest, Turn

Rule = Callable[[str, JSON], Turn]


class FakeState:
    """Thread-safe; shared by the server's request threads and the test thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns: deque[Turn] = deque()
        self._requests: list[RecordedRequest] = []
        self.store = ResponseStore()
        self.ids = IdFactory()
        self.default_rule: Rule = default_rule
        # What the server says about its model, as a local server does (None: no such
        # endpoint, 404): llama-server's ``GET /props``, Ollama's ``POST /api/show``.
        self.props: JSON | None = None
        self.show: JSON | None = None
        # The gate a ``Fault.hold_after`` stream waits at until the test releases it.
        self.gate = threading.Event()
        # Streams whose client closed the connection before their end: (path, monotonic time).
        self._closed: list[tuple[str, float]] = []
        self._closed_changed = threading.Condition(self._lock)

    def enqueue(self, *turns: Turn) -> None:
        for turn in turns:
            if not isinstance(turn, Turn):
                raise TypeError(f"enqueue takes Turn objects, not {type(turn).__name__}")
        with self._lock:
            self._turns.extend(turns)

    def pending(self) -> int:
        with self._lock:
            return len(self._turns)

    def next_turn(self, protocol: str, body: JSON) -> Turn:
        """The next scripted turn, else the default rule's answer."""
        with self._lock:
            if self._turns:
                return self._turns.popleft()
        return self.default_rule(protocol, body)

    def plan(self, turn: Turn, protocol: str, body: JSON) -> Plan:
        return make_plan(turn, protocol, body, self.ids)

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def record_closed(self, path: str) -> None:
        with self._closed_changed:
            self._closed.append((path, time.monotonic()))
            self._closed_changed.notify_all()

    @property
    def closed(self) -> list[tuple[str, float]]:
        with self._lock:
            return list(self._closed)

    def wait_closed(self, count: int, timeout: float) -> bool:
        """Wait until ``count`` streams were closed by their client (False: not in time)."""
        with self._closed_changed:
            return self._closed_changed.wait_for(lambda: len(self._closed) >= count, timeout)

    def clear(self) -> None:
        """Empty the queue, the request log and the stored responses; restart the ids."""
        with self._lock:
            self._turns.clear()
            self._requests.clear()
            self._closed.clear()
        self.props = self.show = None
        self.gate.clear()
        self.store.clear()
        self.ids.reset()
