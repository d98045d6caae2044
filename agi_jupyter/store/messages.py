"""Messages and their ordered parts.

A message's parts are rows of ``message_parts`` (``idx`` keeps their order). A history is read
with two queries whatever its length (the messages, then all their parts in the same order),
and the parts' JSON is decoded with one ``json.loads`` call: see benchmarks/store_history.py.
"""

from __future__ import annotations

import contextlib
import gc
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from agi_jupyter.errors import NotFound, SessionNotFound
from agi_jupyter.records import (
    JSON,
    Message,
    MessageStatus,
    Part,
    Role,
    new_id,
    parts_text,
    utc_now,
)
from agi_jupyter.store.connection import StoreCore
from agi_jupyter.store.rows import (
    MESSAGES,
    check_limit,
    loads_many,
    messages_from_rows,
    part_from_data,
    part_row,
)

_SELECT = f"SELECT {MESSAGES.select('m')}, m.rowid FROM messages m"
_PARTS = (
    "SELECT p.message_id, p.type, p.content FROM messages m"
    " JOIN message_parts p ON p.message_id = m.id"
)
_ORDER = "ORDER BY m.created_at, m.rowid"
_CREATED_AT = MESSAGES.columns.index("created_at")  # row[-1] is the rowid


def _not_found(message_id: str) -> NotFound:
    return NotFound(f"message {message_id!r} not found", code="MESSAGE_NOT_FOUND")


class MessagesMixin(StoreCore):
    def add_message(
        self,
        session_id: str,
        role: Role,
        parts: Sequence[Part],
        *,
        run_id: str | None = None,
        status: MessageStatus = "complete",
        meta: JSON | None = None,
    ) -> Message:
        """Append a message to a session (``text`` is the plain text of its text parts)."""
        now = utc_now()
        message = Message(
            id=new_id("msg"),
            session_id=session_id,
            role=role,
            run_id=run_id,
            status=status,
            text=parts_text(list(parts)),
            meta=meta or {},
            parts=list(parts),
            created_at=now,
            updated_at=now,
        )
        row = MESSAGES.to_row(message)
        part_rows = [part_row(p) for p in message.parts]
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET message_count = message_count + 1, updated_at = ?"
                " WHERE id = ?",
                [now, session_id],
            )
            if cur.rowcount == 0:
                raise SessionNotFound(f"session {session_id!r} not found")
            self._insert(conn, "messages", row)
            self._insert_parts(conn, message.id, part_rows)
        return message

    def update_message(
        self,
        id: str,
        *,
        parts: Sequence[Part] | None = None,
        status: MessageStatus | None = None,
        meta: JSON | None = None,
    ) -> Message:
        """Change a message; ``parts`` replace the old ones (and its ``text``), ``meta`` is
        replaced as a whole. Arguments left as None stay as they are."""
        now = utc_now()
        changes: dict[str, Any] = {"updated_at": now}
        if status is not None:
            changes["status"] = status
        if meta is not None:
            changes["meta"] = meta
        if parts is not None:
            changes["text"] = parts_text(list(parts))
        values = MESSAGES.encode(changes)
        part_rows = None if parts is None else [part_row(p) for p in parts]
        assignments = ", ".join(f"{name} = ?" for name in values)
        with self._write() as conn:
            cur = conn.execute(
                f"UPDATE messages SET {assignments} WHERE id = ?", [*values.values(), id]
            )
            if cur.rowcount == 0:
                raise _not_found(id)
            if part_rows is not None:
                conn.execute("DELETE FROM message_parts WHERE message_id = ?", [id])
                self._insert_parts(conn, id, part_rows)
            conn.execute(
                "UPDATE sessions SET updated_at = ?"
                " WHERE id = (SELECT session_id FROM messages WHERE id = ?)",
                [now, id],
            )
            messages = self._load_messages(conn, "m.id = ?", [id], -1)
        return messages[0]

    def get_message(self, id: str) -> Message:
        with self._read() as conn:
            messages = [] if conn is None else self._load_messages(conn, "m.id = ?", [id], -1)
        if not messages:
            raise _not_found(id)
        return messages[0]

    def list_messages(
        self, session_id: str, *, after_id: str | None = None, limit: int | None = None
    ) -> list[Message]:
        """A session's messages in creation order, with their parts; only those after the
        session's message ``after_id`` if given. An unknown session has no messages."""
        size = check_limit(limit)
        with self._read() as conn:
            if conn is None:
                if after_id is not None:
                    raise _not_found(after_id)
                return []
            where, params = "m.session_id = ?", [session_id]
            if after_id is not None:
                anchor = conn.execute(
                    "SELECT created_at, rowid FROM messages WHERE id = ? AND session_id = ?",
                    [after_id, session_id],
                ).fetchone()
                if anchor is None:
                    raise _not_found(after_id)
                where += " AND (m.created_at, m.rowid) > (?, ?)"
                params.extend(anchor)
            return self._load_messages(conn, where, params, size)

    # --- helpers --------------------------------------------------------------------------

    @staticmethod
    def _insert_parts(
        conn: sqlite3.Connection, message_id: str, part_rows: list[tuple[str, str]]
    ) -> None:
        conn.executemany(
            "INSERT INTO message_parts (id, message_id, idx, type, content) VALUES (?, ?, ?, ?, ?)",
            [
                (new_id("prt"), message_id, idx, kind, content)
                for idx, (kind, content) in enumerate(part_rows)
            ],
        )

    @staticmethod
    def _load_messages(
        conn: sqlite3.Connection, where: str, params: list[Any], limit: int
    ) -> list[Message]:
        """Messages matching ``where`` in creation order, and all their parts in one query."""
        rows = conn.execute(
            f"{_SELECT} WHERE {where} {_ORDER} LIMIT ?", [*params, limit]
        ).fetchall()
        if not rows:
            return []
        if limit >= 0:  # the parts of the messages up to the last one loaded
            where += " AND (m.created_at, m.rowid) <= (?, ?)"
            params = [*params, rows[-1][_CREATED_AT], rows[-1][-1]]
        part_rows = conn.execute(f"{_PARTS} WHERE {where} {_ORDER}, p.idx", params).fetchall()
        with _gc_paused(len(part_rows) + len(rows)):
            contents = loads_many([content for _, _, content in part_rows])
            parts: dict[str, list[Part]] = {row[0]: [] for row in rows}
            for (message_id, kind, _), data in zip(part_rows, contents, strict=True):
                parts[message_id].append(part_from_data(kind, data))
            return messages_from_rows(rows, parts)


@contextlib.contextmanager
def _gc_paused(objects: int) -> Iterator[None]:
    """Pause the cyclic GC while a long history is built: tens of thousands of new dicts and
    records would otherwise trigger repeated full collections over a heap that holds no
    cycles (about 20% of the load time of a 10,000-message history)."""
    if objects < 2_000 or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
