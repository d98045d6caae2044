"""Snapshots and changes: content-addressed blobs and the changes runs make (undo).

``put_blob`` stores a content once under its sha256 (a second put of the same bytes is a
no-op), so a notebook snapshotted before every edit of a run costs one row per distinct
content. The blobs live in the database (SQLite BLOB, PostgreSQL ``bytea``), so any replica can
undo a run that another executed. ``changes`` rows name the before/after blobs of one change to
one path; undo reads a run's changes in order. ``add_change`` holds its blobs (PostgreSQL:
``FOR KEY SHARE``) until it commits, and the collector of unreferenced blobs
(``Sessions.delete_session``) skips locked rows: a blob about to be referenced is never
collected under it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from agi_jupyter.errors import NotFound, UsageError
from agi_jupyter.records import Change, ChangeKind, new_id, utc_now
from agi_jupyter.store.rows import CHANGES
from agi_jupyter.store.sql import Database, insert, require_run

_SELECT = f"SELECT {CHANGES.select()} FROM changes"


def _blob_not_found(sha256: str) -> NotFound:
    return NotFound(f"snapshot {sha256!r} not found", code="BLOB_NOT_FOUND")


class Changes:
    """The ``blobs`` and ``changes`` tables."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._dialect = db.dialect

    def put_blob(self, data: bytes) -> str:
        """Store ``data`` once; returns its sha256 (hex)."""
        if not isinstance(data, bytes | bytearray):
            raise UsageError("a blob is bytes")
        sha = hashlib.sha256(data).hexdigest()
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO blobs (sha256, size, data, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (sha256) DO NOTHING",
                [sha, len(data), bytes(data), utc_now()],
            )
        return sha

    def get_blob(self, sha256: str) -> bytes:
        row = self._db.one("SELECT data FROM blobs WHERE sha256 = ?", [sha256])
        if row is None:
            raise _blob_not_found(sha256)
        return bytes(row[0])

    def add_change(
        self,
        *,
        run_id: str | None,
        kind: ChangeKind,
        path: str,
        before_sha: str | None,
        after_sha: str | None,
        tool_call_id: str | None = None,
        turn: int | None = None,
    ) -> Change:
        """Record one change; the blobs it names must have been stored with ``put_blob``."""
        change = Change(
            id=new_id("chg"),
            run_id=run_id,
            turn=turn,
            tool_call_id=tool_call_id,
            kind=kind,
            path=path,
            before_sha=before_sha,
            after_sha=after_sha,
            created_at=utc_now(),
        )
        row = CHANGES.to_row(change)
        with self._db.write() as conn:
            if run_id is not None:
                require_run(conn, self._dialect, run_id)
            for sha in (before_sha, after_sha):
                if sha is None:
                    continue
                held = conn.execute(
                    f"SELECT 1 FROM blobs WHERE sha256 = ?{self._dialect.for_key_share}", [sha]
                ).fetchone()
                if held is None:
                    raise _blob_not_found(sha)
            insert(conn, "changes", row)
        return change

    def list_changes(self, *, run_id: str | None = None, path: str | None = None) -> list[Change]:
        """Changes in the order they were made, of one run and/or one path."""
        filters: list[tuple[str, Any]] = []
        if run_id is not None:
            filters.append(("run_id = ?", run_id))
        if path is not None:
            filters.append(("path = ?", path))
        where = " AND ".join(c for c, _ in filters) or "TRUE"
        rows = self._db.all(
            f"{_SELECT} WHERE {where} ORDER BY created_at, {self._dialect.pos}",
            [v for _, v in filters],
        )
        return [CHANGES.from_row(r) for r in rows]
