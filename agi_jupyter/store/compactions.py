"""Compactions: the summaries that stand in for a session's older messages in model requests
(``runtime/compaction.py`` makes them, ``runtime/context.py`` sends them). A row is written once
and never changed; the newest of a session is the one in use."""

from __future__ import annotations

from typing import Any

from agi_jupyter.records import Compaction, new_id, utc_now
from agi_jupyter.store.sql import Database

# The table's columns, the record's fields.
COLUMNS = (
    "id",
    "session_id",
    "run_id",
    "first_message_id",
    "through_message_id",
    "message_count",
    "summary",
    "provider",
    "model",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "created_at",
)
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM compactions"


class Compactions:
    """The ``compactions`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add_compaction(
        self,
        session_id: str,
        *,
        first_message_id: str,
        through_message_id: str,
        message_count: int,
        summary: str,
        run_id: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cost_usd: float | None = None,
    ) -> Compaction:
        """Store a compaction of ``session_id``'s messages through ``through_message_id``."""
        record = Compaction(
            id=new_id("cmp"),
            session_id=session_id,
            run_id=run_id,
            first_message_id=first_message_id,
            through_message_id=through_message_id,
            message_count=message_count,
            summary=summary,
            provider=provider,
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost_usd,
            created_at=utc_now(),
        )
        values = [getattr(record, c) for c in COLUMNS]
        values[COLUMNS.index("summary")] = self._db.dialect.text(summary)
        with self._db.write() as conn:
            conn.execute(
                f"INSERT INTO compactions ({', '.join(COLUMNS)})"
                f" VALUES ({', '.join('?' for _ in COLUMNS)})",
                values,
            )
        return record

    def list_compactions(self, session_id: str) -> list[Compaction]:
        """A session's compactions, oldest first (the last one is in use)."""
        pos = self._db.dialect.pos
        rows = self._db.all(f"{_SELECT} WHERE session_id = ? ORDER BY {pos}", [session_id])
        return [_record(row) for row in rows]

    def latest_compaction(self, session_id: str) -> Compaction | None:
        """The compaction in use for ``session_id``: its newest, or None."""
        pos = self._db.dialect.pos
        row = self._db.one(
            f"{_SELECT} WHERE session_id = ? ORDER BY {pos} DESC LIMIT 1", [session_id]
        )
        return None if row is None else _record(row)


def _record(row: Any) -> Compaction:
    return Compaction(**dict(zip(COLUMNS, row, strict=True)))
