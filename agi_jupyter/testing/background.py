"""Stored Responses objects: what ``GET /v1/responses/{id}`` and ``.../cancel`` see.

A background response is created ``queued``; it reads ``in_progress`` until it is due (its
turn's ``background_delay`` after creation, or ``complete_background(id)``), then its final
form (``completed``, or ``failed`` when its turn had a fault). Cancelling a pending response
makes it ``cancelled``. Responses created in the foreground are stored completed. A
background response that was streamed keeps its events, so ``GET /v1/responses/{id}?stream=true
&starting_after=N`` can send the ones after sequence number ``N`` again (a dropped stream
resumed, as the real API allows for background responses only).
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field

from agi_jupyter.testing.plan import SSEEvent
from agi_jupyter.testing.script import JSON

PENDING = frozenset({"queued", "in_progress"})


class NotCancellableError(Exception):
    """The response already finished; the API answers 400."""


@dataclass
class _Entry:
    pending: JSON
    final: JSON
    due: float
    status: str
    events: list[SSEEvent] | None = field(default=None)  # a streamed background response's


class ResponseStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def add_background(self, pending: JSON, final: JSON, delay: float) -> JSON:
        """Store a background response; returns its ``queued`` form."""
        entry = _Entry(pending, final, time.monotonic() + delay, "queued")
        with self._lock:
            self._entries[str(pending["id"])] = entry
            return self._view(entry)

    def add_done(self, final: JSON, events: list[SSEEvent] | None = None) -> None:
        """Store a response created in the foreground, or (``events``) streamed in the
        background: its events can be streamed again."""
        with self._lock:
            entry = _Entry(final, final, 0.0, str(final["status"]), events)
            self._entries[str(final["id"])] = entry

    def events_after(self, response_id: str, starting_after: int) -> list[SSEEvent] | None:
        """The streamed events after sequence number ``starting_after`` (None: the response
        was not streamed in the background); ``KeyError`` when unknown."""
        with self._lock:
            events = self._entries[response_id].events
        return None if events is None else events[starting_after + 1 :]

    def get(self, response_id: str) -> JSON:
        """The response as it reads now; ``KeyError`` when unknown."""
        with self._lock:
            entry = self._entries[response_id]
            self._advance(entry, reading=True)
            return self._view(entry)

    def complete(self, response_id: str) -> None:
        """Make a pending background response due now; ``KeyError`` when unknown."""
        with self._lock:
            entry = self._entries[response_id]
            entry.due = min(entry.due, time.monotonic())
            self._advance(entry, reading=False)

    def cancel(self, response_id: str) -> JSON:
        with self._lock:
            entry = self._entries[response_id]
            self._advance(entry, reading=False)
            if entry.status in PENDING:
                entry.status = "cancelled"
            elif entry.status != "cancelled":
                raise NotCancellableError(f"Cannot cancel a response with status {entry.status}.")
            return self._view(entry)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    @staticmethod
    def _advance(entry: _Entry, *, reading: bool) -> None:
        if entry.status not in PENDING:
            return
        if time.monotonic() >= entry.due:
            entry.status = str(entry.final["status"])
        elif reading:
            entry.status = "in_progress"

    @staticmethod
    def _view(entry: _Entry) -> JSON:
        if entry.status == entry.final["status"]:
            return copy.deepcopy(entry.final)
        return copy.deepcopy(entry.pending) | {"status": entry.status}
