"""The opaque cursors of the session stream (SSE ``id:`` and ``Last-Event-ID``).

A cursor is ``<position>`` or ``<position>.<run id>.<seq>``: every stored run event of the
session up to ``position`` was sent, and so was the run's event ``seq`` (sent live, it may be
stored after ``position``). ``position`` is the store's own opaque session-stream cursor (a
SQLite store's is a number, a PostgreSQL store's ``p<number>``; ``Store.session_events_end``).
Clients treat the whole as opaque text; this module alone makes and reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agi_jupyter.errors import ErrorCode, NotFound, UsageError

if TYPE_CHECKING:
    from agi_jupyter.store import Store

MAX_INT = 2**63 - 1
_CURSOR = re.compile(r"([a-z]?(\d{1,19}))(?:\.([A-Za-z0-9_]{1,100})\.(\d{1,19}))?")


@dataclass(frozen=True)
class SessionCursor:
    position: str
    run_id: str | None = None
    seq: int = 0

    def seen(self) -> dict[str, int]:
        return {self.run_id: self.seq} if self.run_id else {}


def session_cursor(position: str, event: dict[str, Any]) -> str:
    """The cursor right after ``event``, yielded at store position ``position``."""
    run_id, seq = event.get("run_id"), event.get("seq")
    if isinstance(run_id, str) and run_id and isinstance(seq, int):
        return f"{position}.{run_id}.{seq}"
    return position


def parse_session_cursor(text: str) -> SessionCursor:
    """A cursor sent back by a client; ``CURSOR_NOT_FOUND`` (404) for anything this server
    did not make (its position is checked against the store by ``check_position``)."""
    match = _CURSOR.fullmatch(text.strip())
    if match is None or int(match[2]) > MAX_INT or int(match[4] or 0) > MAX_INT:
        raise not_found(text)
    return SessionCursor(match[1], match[3], int(match[4] or 0))


def not_found(text: str) -> NotFound:
    return NotFound(
        f"after_cursor / Last-Event-ID {text[:100]!r} is no position of this stream",
        code=ErrorCode.CURSOR_NOT_FOUND,
    )


def check_position(store: Store, session_id: str, cursor: SessionCursor, text: str) -> None:
    """``CURSOR_NOT_FOUND`` unless the store takes the position (another backend's cursor, a
    PostgreSQL one on SQLite or the reverse, is refused by the store), before the stream
    starts."""
    try:
        store.list_session_run_events(session_id, after_cursor=cursor.position, limit=1)
    except UsageError:
        raise not_found(text) from None
