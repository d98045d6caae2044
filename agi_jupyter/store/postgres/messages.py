"""Messages and their ordered parts on PostgreSQL.

As on SQLite, a message's parts are written twice in one transaction: as ``message_parts`` rows
and as the ``messages.parts`` JSON array, which reads decode with the same reader
(``rows.messages_from_cursor``: its SELECT is plain SQL both databases run; the texts are
decoded when first read). The simple history view filters text parts in Python: PostgreSQL's
JSON functions would re-parse the text, and refuse values Python's ``json`` writes (``NaN``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agi_jupyter.errors import NotFound, SessionNotFound
from agi_jupyter.records import (
    JSON,
    Message,
    MessageStatus,
    Part,
    Role,
    RunFence,
    new_id,
    part_to_dict,
    parts_text,
    utc_now,
)
from agi_jupyter.store.postgres.core import Connection, PgCore, limit_value
from agi_jupyter.store.rows import (
    MESSAGE_SELECT,
    MESSAGES,
    messages_from_cursor,
    part_row,
    parts_json,
)


def searchable(text: str | None) -> str | None:
    """``messages.text``, the plain text of the parts (for search and previews): PostgreSQL's
    text cannot hold NUL, which a prompt may contain (SQLite takes it), so it becomes U+FFFD
    there. The parts themselves are JSON, where NUL is escaped: nothing is lost."""
    return None if text is None else text.replace("\x00", "\ufffd")


def _not_found(message_id: str) -> NotFound:
    return NotFound(f"message {message_id!r} not found", code="MESSAGE_NOT_FOUND")


class PgMessagesMixin(PgCore):
    def add_message(
        self,
        session_id: str,
        role: Role,
        parts: Sequence[Part],
        *,
        run_id: str | None = None,
        status: MessageStatus = "complete",
        meta: JSON | None = None,
        fence: RunFence | None = None,
    ) -> Message:
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
        row["text"] = searchable(row["text"])
        dicts = [part_to_dict(p) for p in message.parts]
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET message_count = message_count + 1, updated_at = %s"
                " WHERE id = %s",
                [now, session_id],
            )
            if cur.rowcount == 0:
                raise SessionNotFound(f"session {session_id!r} not found")
            self._check_fence(conn, fence)  # after the session row: writers lock it first
            self._insert(conn, "messages", {**row, "parts": parts_json(dicts)})
            self._write_parts(conn, message.id, dicts)
        return message

    def update_message(
        self,
        id: str,
        *,
        parts: Sequence[Part] | None = None,
        status: MessageStatus | None = None,
        meta: JSON | None = None,
        fence: RunFence | None = None,
    ) -> Message:
        now = utc_now()
        changes: dict[str, Any] = {"updated_at": now}
        if status is not None:
            changes["status"] = status
        if meta is not None:
            changes["meta"] = meta
        if parts is not None:
            changes["text"] = searchable(parts_text(list(parts)))
        values = MESSAGES.encode(changes)
        dicts = None if parts is None else [part_to_dict(p) for p in parts]
        if dicts is not None:
            values["parts"] = parts_json(dicts)
        assignments, params = self._set_clause(values)
        with self._write() as conn:
            # The session row first, as every writer into a session locks it (no deadlocks).
            touched = conn.execute(
                "UPDATE sessions SET updated_at = %s"
                " WHERE id = (SELECT session_id FROM messages WHERE id = %s) RETURNING id",
                [now, id],
            ).fetchone()
            self._check_fence(conn, fence)
            cur = conn.execute(f"UPDATE messages SET {assignments} WHERE id = %s", [*params, id])
            if touched is None or cur.rowcount == 0:
                raise _not_found(id)
            if dicts is not None:
                conn.execute("DELETE FROM message_parts WHERE message_id = %s", [id])
                self._write_parts(conn, id, dicts)
            message = self._load_message(conn, id)
        assert message is not None  # updated in this transaction
        return message

    def get_message(self, id: str) -> Message:
        with self._connection() as conn:
            message = self._load_message(conn, id)
        if message is None:
            raise _not_found(id)
        return message

    def list_messages(
        self,
        session_id: str,
        *,
        after_id: str | None = None,
        limit: int | None = None,
        text_only: bool = False,
        lazy: bool = False,
    ) -> list[Message]:
        size = limit_value(limit)
        where, params = "session_id = %s", [session_id]
        if text_only:
            where += " AND role IN ('user', 'assistant')"
        if after_id is not None:
            # One statement: the anchor is read in the same snapshot as the messages after it.
            where += (
                " AND (created_at, pos) > (SELECT created_at, pos FROM messages"
                " WHERE id = %s AND session_id = %s)"
            )
            params += [after_id, session_id]
        with self._read() as conn:
            if after_id is not None and not _is_message_of(conn, after_id, session_id):
                raise _not_found(after_id)
            cursor = conn.execute(
                f"SELECT {MESSAGE_SELECT} FROM messages WHERE {where}"
                " ORDER BY created_at, pos LIMIT %s",
                [*params, size],
            )
            messages, _ = messages_from_cursor(cursor, session_id, text_only=text_only, lazy=lazy)
        return messages

    # --- helpers --------------------------------------------------------------------------

    @staticmethod
    def _write_parts(conn: Connection, message_id: str, dicts: list[dict[str, Any]]) -> None:
        if not dicts:
            return
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO message_parts (id, message_id, idx, type, content)"
                " VALUES (%s, %s, %s, %s, %s)",
                [
                    (new_id("prt"), message_id, idx, *part_row(data))
                    for idx, data in enumerate(dicts)
                ],
            )

    @staticmethod
    def _load_message(conn: Connection, id: str) -> Message | None:
        row = conn.execute("SELECT session_id FROM messages WHERE id = %s", [id]).fetchone()
        if row is None:
            return None
        cursor = conn.execute(f"SELECT {MESSAGE_SELECT} FROM messages WHERE id = %s", [id])
        return messages_from_cursor(cursor, str(row[0]))[0][0]


def _is_message_of(conn: Connection, message_id: str, session_id: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM messages WHERE id = %s AND session_id = %s", [message_id, session_id]
    ).fetchone()
    return row is not None
