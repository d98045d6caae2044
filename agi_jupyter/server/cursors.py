"""The opaque cursors of the session stream (SSE ``id:`` and ``Last-Event-ID``).

A cursor is ``<position>`` or ``<position>.<run id>.<seq>``: every stored run event of the
session up to ``position`` was sent, and so was the run's event ``seq`` (sent live, it may be
stored after ``position``). Clients treat it as opaque text; this module alone makes and reads
it, so the store's notion of a position can change (another database) without the API changing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agi_jupyter.errors import NotFound

MAX_INT = 2**63 - 1
_CURSOR = re.compile(r"(\d{1,19})(?:\.([A-Za-z0-9_]{1,100})\.(\d{1,19}))?")


@dataclass(frozen=True)
class SessionCursor:
    position: int
    run_id: str | None = None
    seq: int = 0

    def seen(self) -> dict[str, int]:
        return {self.run_id: self.seq} if self.run_id else {}


def session_cursor(position: int, event: dict[str, Any]) -> str:
    """The cursor right after ``event``, yielded at store position ``position``."""
    run_id, seq = event.get("run_id"), event.get("seq")
    if isinstance(run_id, str) and run_id and isinstance(seq, int):
        return f"{position}.{run_id}.{seq}"
    return str(position)


def parse_session_cursor(text: str) -> SessionCursor:
    """A cursor sent back by a client; ``CURSOR_NOT_FOUND`` (404) for anything this server
    did not make."""
    match = _CURSOR.fullmatch(text.strip())
    if match is None or int(match[1]) > MAX_INT or int(match[3] or 0) > MAX_INT:
        raise NotFound(
            f"after_cursor / Last-Event-ID {text[:100]!r} is no position of this stream",
            code="CURSOR_NOT_FOUND",
        )
    return SessionCursor(int(match[1]), match[2], int(match[3] or 0))
