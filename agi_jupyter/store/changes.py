"""Snapshots and changes: content-addressed blobs, the changes runs make, tab replies.

``put_blob`` stores a content once under its sha256 (a second put of the same bytes is a
no-op), so a notebook snapshotted before every edit of a run costs one row per distinct
content. ``changes`` rows name the before/after blobs of one change to one path; undo reads
a run's changes in order. ``notebook_replies`` is a mailbox: a JupyterLab tab answers a
kernel's notebook request through the server, and the kernel takes the answer from here.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from agi_jupyter.errors import NotFound, UsageError
from agi_jupyter.records import JSON, Change, ChangeKind, new_id, utc_now
from agi_jupyter.store.connection import StoreCore
from agi_jupyter.store.rows import CHANGES

_SELECT = f"SELECT {CHANGES.select()} FROM changes"
MAX_REQUEST_ID = 200
REPLY_TTL = timedelta(hours=1)


class ChangesMixin(StoreCore):
    # --- blobs ------------------------------------------------------------------------------

    def put_blob(self, data: bytes) -> str:
        """Store ``data`` once; returns its sha256 (hex)."""
        if not isinstance(data, bytes | bytearray):
            raise UsageError("a blob is bytes")
        sha = hashlib.sha256(data).hexdigest()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO blobs (sha256, size, data, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (sha256) DO NOTHING",
                [sha, len(data), bytes(data), utc_now()],
            )
        return sha

    def get_blob(self, sha256: str) -> bytes:
        row = self._one("SELECT data FROM blobs WHERE sha256 = ?", [sha256])
        if row is None:
            raise NotFound(f"snapshot {sha256!r} not found", code="BLOB_NOT_FOUND")
        return bytes(row[0])

    # --- changes ----------------------------------------------------------------------------

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
        with self._write() as conn:
            if run_id is not None:
                self._require_run(conn, run_id)
            for sha in (before_sha, after_sha):
                if (
                    sha is not None
                    and not conn.execute("SELECT 1 FROM blobs WHERE sha256 = ?", [sha]).fetchone()
                ):
                    raise NotFound(f"snapshot {sha!r} not found", code="BLOB_NOT_FOUND")
            self._insert(conn, "changes", row)
        return change

    def list_changes(self, *, run_id: str | None = None, path: str | None = None) -> list[Change]:
        """Changes in the order they were made, of one run and/or one path."""
        filters: list[tuple[str, Any]] = []
        if run_id is not None:
            filters.append(("run_id = ?", run_id))
        if path is not None:
            filters.append(("path = ?", path))
        where = " AND ".join(c for c, _ in filters) or "1"
        rows = self._all(
            f"{_SELECT} WHERE {where} ORDER BY created_at, rowid", [v for _, v in filters]
        )
        return [CHANGES.from_row(r) for r in rows]

    # --- replies of JupyterLab tabs ----------------------------------------------------------

    def put_notebook_reply(self, request_id: str, payload: JSON) -> None:
        """Leave the answer to a notebook request (the last answer of an id wins)."""
        if not request_id or len(request_id) > MAX_REQUEST_ID:
            raise UsageError("request_id must be 1 to 200 characters")
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        now = datetime.now(UTC)
        expired = (now - REPLY_TTL).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        with self._write() as conn:
            # Answers nobody took (the kernel stopped waiting, or died) do not pile up.
            conn.execute("DELETE FROM notebook_replies WHERE created_at < ?", [expired])
            conn.execute(
                "INSERT INTO notebook_replies (request_id, payload, created_at) VALUES (?, ?, ?)"
                " ON CONFLICT (request_id) DO UPDATE SET payload = excluded.payload",
                [request_id, text, utc_now()],
            )

    def take_notebook_reply(self, request_id: str) -> JSON | None:
        """The answer to ``request_id``, removed from the mailbox; None while there is none."""
        if self._one("SELECT 1 FROM notebook_replies WHERE request_id = ?", [request_id]) is None:
            return None  # the common case while waiting: a read, no write lock
        with self._write() as conn:
            row = conn.execute(
                "DELETE FROM notebook_replies WHERE request_id = ? RETURNING payload",
                [request_id],
            ).fetchone()
        if row is None:
            return None
        payload = json.loads(row[0])
        return payload if isinstance(payload, dict) else {"value": payload}
