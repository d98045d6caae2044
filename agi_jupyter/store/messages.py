"""Messages and their ordered parts.

A message's parts are written twice in one transaction: as rows of ``message_parts`` (``idx``
keeps their order; artifacts and SQL queries refer to them by id) and as the ``messages.parts``
column (one JSON array per message), which every read decodes. A history is one query with no
join, whose ``meta`` and ``parts`` texts are decoded when first read
(``rows.messages_from_cursor``; benchmarks/history_floor.py). A message whose ``parts`` column
is NULL (SQLite: written by a version without migration m005, or whose parts rows were changed
by SQL since) has its parts read from ``message_parts`` instead; PostgreSQL has no such triggers
and its column is never NULL. ``messages.text`` (for search and previews) is stored as the
dialect can (``Dialect.text``: PostgreSQL's text cannot hold NUL); the parts are JSON, where NUL
is escaped, so nothing is lost.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Sequence
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
from agi_jupyter.store.rows import (
    MESSAGE_SELECT,
    MESSAGES,
    RowSource,
    keep_texts,
    loads_many,
    messages_from_cursor,
    part_from_data,
    part_row,
    parts_json,
)
from agi_jupyter.store.sql import Conn, Database, check_fence, insert, set_clause
from agi_jupyter.store.values import LargeValues, referenced

_IN_BATCH = 500  # ids per ``IN (...)`` of the message_parts fallback (and rows per batch read)
_JSON = 7  # the ``meta,parts`` text of a ``MESSAGE_SELECT`` row


def _not_found(message_id: str) -> NotFound:
    return NotFound(f"message {message_id!r} not found", code="MESSAGE_NOT_FOUND")


class Messages:
    """The ``messages`` and ``message_parts`` tables."""

    def __init__(self, db: Database, values: LargeValues) -> None:
        self._db = db
        self._dialect = db.dialect
        self._values = values

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
        """Append a message to a session (``text`` is the plain text of its text parts); with
        ``fence`` only while the run's owner still holds it (else ``RunLost``)."""
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
        row["text"] = self._dialect.text(row["text"])
        dicts = [part_to_dict(p) for p in message.parts]
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET message_count = message_count + 1, updated_at = ?"
                " WHERE id = ?",
                [now, session_id],
            )
            if cur.rowcount == 0:
                raise SessionNotFound(f"session {session_id!r} not found")
            check_fence(conn, self._dialect, fence)  # after the session row: writers lock it first
            kept_parts, rows = self._keep(conn, session_id, dicts)
            insert(conn, "messages", {**row, "parts": kept_parts})
            self._write_parts(conn, message.id, kept_parts, rows)
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
        """Change a message; ``parts`` replace the old ones (and its ``text``), ``meta`` is
        replaced as a whole. Arguments left as None stay as they are. ``fence``: as for
        ``add_message``."""
        now = utc_now()
        changes: dict[str, Any] = {"updated_at": now}
        if status is not None:
            changes["status"] = status
        if meta is not None:
            changes["meta"] = meta
        if parts is not None:
            changes["text"] = self._dialect.text(parts_text(list(parts)))
        values = MESSAGES.encode(changes)
        dicts = None if parts is None else [part_to_dict(p) for p in parts]
        with self._db.write() as conn:
            # The session row first, as every writer into a session locks it (no deadlocks).
            touched = conn.execute(
                "UPDATE sessions SET updated_at = ?"
                " WHERE id = (SELECT session_id FROM messages WHERE id = ?) RETURNING id",
                [now, id],
            ).fetchone()
            check_fence(conn, self._dialect, fence)
            if touched is None:
                raise _not_found(id)
            kept = None if dicts is None else self._keep(conn, str(touched[0]), dicts)
            if kept is not None:
                values["parts"] = kept[0]
            assignments, params = set_clause(values)
            cur = conn.execute(f"UPDATE messages SET {assignments} WHERE id = ?", [*params, id])
            if cur.rowcount == 0:
                raise _not_found(id)
            if kept is not None:
                conn.execute("DELETE FROM message_parts WHERE message_id = ?", [id])
                self._write_parts(conn, id, *kept)
            message = _load_message(conn, id, self._values)
        assert message is not None  # updated in this transaction
        return message

    def get_message(self, id: str) -> Message:
        with self._db.read() as conn:
            message = None if conn is None else _load_message(conn, id, self._values)
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
        """A session's messages in creation order, with their parts; only those after the
        session's message ``after_id`` if given. An unknown session has no messages.
        ``text_only``: user and assistant messages with only their non-empty text parts.
        ``lazy``: ``meta`` and ``parts`` decoded when first read (``Store.list_messages``)."""
        size = self._dialect.limit(limit)
        pos = self._dialect.pos
        with self._db.read() as conn:
            if conn is None:
                if after_id is not None:
                    raise _not_found(after_id)
                return []
            where, params = "session_id = ?", [session_id]
            if text_only:
                where += " AND role IN ('user', 'assistant')"
            if after_id is not None:
                anchor = conn.execute(
                    f"SELECT created_at, {pos} FROM messages WHERE id = ? AND session_id = ?",
                    [after_id, session_id],
                ).fetchone()
                if anchor is None:
                    raise _not_found(after_id)
                where += f" AND (created_at, {pos}) > (?, ?)"
                params.extend(anchor)
            # ``text_only`` reads the whole rows and drops the other parts in Python: a plain
            # chat's parts are all text, and filtering them in SQL (JSON functions) costs more
            # than decoding them (the tool messages, with the large outputs, are not read at
            # all; PostgreSQL's JSON functions would also refuse values Python's ``json``
            # writes, such as NaN).
            cursor = conn.execute(
                f"SELECT {MESSAGE_SELECT} FROM messages WHERE {where}"
                f" ORDER BY created_at, {pos} LIMIT ?",
                [*params, size],
            )
            with _gc_paused():
                return _with_parts(
                    conn, self._values, cursor, session_id, text_only=text_only, lazy=lazy
                )

    # --- helpers --------------------------------------------------------------------------

    def _keep(
        self, conn: Conn, session_id: str, dicts: list[dict[str, Any]]
    ) -> tuple[str, list[tuple[str, str]]]:
        """The ``messages.parts`` text and the (type, content) of each ``message_parts`` row
        of these parts, their large strings kept once (``values.py``)."""
        rows = [part_row(data) for data in dicts]
        texts = self._values.keep_all(
            conn, session_id, [parts_json(dicts), *(content for _, content in rows)]
        )
        contents = texts[1:]
        return str(texts[0]), [
            (kind, str(content)) for (kind, _), content in zip(rows, contents, strict=True)
        ]

    def _write_parts(
        self, conn: Conn, message_id: str, stored_parts: str, rows: list[tuple[str, str]]
    ) -> None:
        """A message's parts as ``message_parts`` rows; then (SQLite) its ``parts`` column
        again: m005's triggers clear it whenever the rows change."""
        if rows:
            conn.executemany(
                "INSERT INTO message_parts (id, message_id, idx, type, content)"
                " VALUES (?, ?, ?, ?, ?)",
                [(new_id("prt"), message_id, i, *row) for i, row in enumerate(rows)],
            )
        if self._dialect.rewrites_parts:
            conn.execute("UPDATE messages SET parts = ? WHERE id = ?", [stored_parts, message_id])


def _load_message(conn: Conn, id: str, values: LargeValues) -> Message | None:
    found = conn.execute("SELECT session_id FROM messages WHERE id = ?", [id]).fetchone()
    if found is None:
        return None
    cursor = conn.execute(f"SELECT {MESSAGE_SELECT} FROM messages WHERE id = ?", [id])
    return _with_parts(conn, values, cursor, str(found[0]))[0]


def _with_parts(
    conn: Conn,
    values: LargeValues,
    cursor: RowSource,
    session_id: str,
    *,
    text_only: bool = False,
    lazy: bool = False,
) -> list[Message]:
    """``messages_from_cursor``, with the large values of the rows put back (``values.py``)
    and the parts of messages whose ``parts`` column is NULL read from ``message_parts``."""
    rows = _Expanded(cursor, conn, values)
    messages, missing = messages_from_cursor(rows, session_id, text_only=text_only, lazy=lazy)
    if missing:
        parts = _parts_from_rows(conn, values, [messages[i].id for i in missing])
        for i in missing:
            messages[i].parts = parts.get(messages[i].id, [])
        if text_only:
            keep_texts(messages[i] for i in missing)
    return messages


class _Expanded:
    """A cursor over ``SELECT {MESSAGE_SELECT}`` rows whose ``meta``/``parts`` texts have
    their large values put back, a batch at a time."""

    def __init__(self, cursor: RowSource, conn: Conn, values: LargeValues) -> None:
        self._cursor = cursor
        self._conn = conn
        self._values = values

    def fetchmany(self, size: int = _IN_BATCH, /) -> list[Any]:
        rows = self._cursor.fetchmany(size)
        if not any(referenced(row[_JSON]) for row in rows):
            return rows
        return self._values.expand_rows(rows, [_JSON], self._conn)

    def __iter__(self) -> Iterator[Any]:
        while rows := self.fetchmany(_IN_BATCH):
            yield from rows


def _parts_from_rows(
    conn: Conn, values: LargeValues, message_ids: list[str]
) -> dict[str, list[Part]]:
    """The parts of these messages read from ``message_parts``, by message id."""
    parts: dict[str, list[Part]] = {}
    for start in range(0, len(message_ids), _IN_BATCH):
        batch = message_ids[start : start + _IN_BATCH]
        rows = conn.execute(
            "SELECT message_id, type, content FROM message_parts"
            f" WHERE message_id IN ({', '.join('?' for _ in batch)}) ORDER BY message_id, idx",
            batch,
        ).fetchall()
        contents = loads_many(values.expand([content for _, _, content in rows], conn))
        for (message_id, kind, _), data in zip(rows, contents, strict=True):
            parts.setdefault(message_id, []).append(part_from_data(kind, data))
    return parts


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while a history is fetched and built: tens of thousands of new
    tuples, dicts and records would otherwise trigger repeated collections over a heap that
    holds no cycles (about 20% of the load time of a 10,000-message history)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
