"""The opaque cursors of the session stream (SSE ``id:`` and ``Last-Event-ID``).

A cursor is ``<position>`` followed by ``.<run id>.<seq>`` for each run whose events were sent
live beyond it (``runtime.follow.SessionMark``): every stored run event of the session up to
``position`` was sent, and so were each such run's events up to its ``seq`` (sent live, they
may be stored after ``position``). ``position`` is the store's own opaque session-stream cursor (a
SQLite store's is a number, a PostgreSQL store's ``p<number>``; ``Store.session_events_end``).
Clients treat the whole as opaque text; this module alone makes and reads it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agi_jupyter.errors import ErrorCode, NotFound, UsageError
from agi_jupyter.runtime.follow import SessionMark

if TYPE_CHECKING:
    from agi_jupyter.app import Agi

MAX_INT = 2**63 - 1
MAX_RUNS = 64  # runs a cursor may name (those running live at once in one session)
_POSITION = re.compile(r"[a-z]?(\d{1,19})")
_RUN = re.compile(r"([A-Za-z0-9_]{1,100})\.(\d{1,19})")


def session_cursor(mark: SessionMark) -> str:
    """The cursor text of a stream's mark (right after one of its events)."""
    return mark.position + "".join(f".{run_id}.{seq}" for run_id, seq in mark.seen.items())


def parse_session_cursor(text: str) -> SessionMark:
    """A cursor sent back by a client; ``CURSOR_NOT_FOUND`` (404) for anything this server
    did not make (its position is checked against the store by ``check_position``)."""
    position, *rest = text.strip().split(".")
    match = _POSITION.fullmatch(position)
    if match is None or int(match[1]) > MAX_INT or len(rest) % 2 or len(rest) > 2 * MAX_RUNS:
        raise not_found(text)
    seen: dict[str, int] = {}
    for run_id, seq in zip(rest[::2], rest[1::2], strict=True):
        pair = _RUN.fullmatch(f"{run_id}.{seq}")
        if pair is None or int(seq) > MAX_INT or run_id in seen:
            raise not_found(text)
        seen[run_id] = int(seq)
    return SessionMark(position, seen)


def not_found(text: str) -> NotFound:
    return NotFound(
        f"after_cursor / Last-Event-ID {text[:100]!r} is no position of this stream",
        code=ErrorCode.CURSOR_NOT_FOUND,
    )


def check_position(agi: Agi, session_id: str, cursor: SessionMark, text: str) -> None:
    """``CURSOR_NOT_FOUND`` unless the store takes the position (another backend's cursor, a
    PostgreSQL one on SQLite or the reverse, is refused by the store), before the stream
    starts."""
    try:
        agi.session_events(session_id, after_cursor=cursor.position, limit=1)
    except UsageError:
        raise not_found(text) from None
