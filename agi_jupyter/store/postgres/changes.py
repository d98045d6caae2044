"""Snapshots, changes and notebook replies on PostgreSQL (see ``store/changes.py``).

The blobs live in the database (``bytea``), so any replica can undo a run that another
executed. ``add_change`` holds its blobs with ``FOR KEY SHARE`` until it commits, and the
collector of unreferenced blobs (``delete_session``) skips locked rows: a blob about to be
referenced is never collected under it. The reply mailbox is one row per request: a tab may
answer through one replica while the kernel's server is another.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from agi_jupyter.errors import NotFound, UsageError
from agi_jupyter.records import JSON, Change, ChangeKind, new_id, utc_now
from agi_jupyter.store.changes import MAX_REQUEST_ID, REPLY_TTL
from agi_jupyter.store.postgres.core import PgCore
from agi_jupyter.store.rows import CHANGES

_SELECT = f"SELECT {CHANGES.select()} FROM changes"

# Blobs no change refers to; locked ones are being referenced right now (``add_change``).
COLLECT_BLOBS = (
    "DELETE FROM blobs WHERE sha256 IN (SELECT b.sha256 FROM blobs b"
    " WHERE NOT EXISTS (SELECT 1 FROM changes c WHERE c.before_sha = b.sha256)"
    " AND NOT EXISTS (SELECT 1 FROM changes c WHERE c.after_sha = b.sha256)"
    " FOR UPDATE SKIP LOCKED)"
)


def _blob_not_found(sha256: str) -> NotFound:
    return NotFound(f"snapshot {sha256!r} not found", code="BLOB_NOT_FOUND")


class PgChangesMixin(PgCore):
    # --- blobs ------------------------------------------------------------------------------

    def put_blob(self, data: bytes) -> str:
        if not isinstance(data, bytes | bytearray):
            raise UsageError("a blob is bytes")
        sha = hashlib.sha256(data).hexdigest()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO blobs (sha256, size, data, created_at) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (sha256) DO NOTHING",
                [sha, len(data), bytes(data), utc_now()],
            )
        return sha

    def get_blob(self, sha256: str) -> bytes:
        row = self._one("SELECT data FROM blobs WHERE sha256 = %s", [sha256])
        if row is None:
            raise _blob_not_found(sha256)
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
                if sha is None:
                    continue
                held = conn.execute(
                    "SELECT 1 FROM blobs WHERE sha256 = %s FOR KEY SHARE", [sha]
                ).fetchone()
                if held is None:
                    raise _blob_not_found(sha)
            self._insert(conn, "changes", row)
        return change

    def list_changes(self, *, run_id: str | None = None, path: str | None = None) -> list[Change]:
        filters: list[tuple[str, Any]] = []
        if run_id is not None:
            filters.append(("run_id = %s", run_id))
        if path is not None:
            filters.append(("path = %s", path))
        where = " AND ".join(c for c, _ in filters) or "TRUE"
        rows = self._all(
            f"{_SELECT} WHERE {where} ORDER BY created_at, pos", [v for _, v in filters]
        )
        return [CHANGES.from_row(r) for r in rows]

    # --- replies of JupyterLab tabs ----------------------------------------------------------

    def put_notebook_reply(self, request_id: str, payload: JSON) -> None:
        if not request_id or len(request_id) > MAX_REQUEST_ID:
            raise UsageError("request_id must be 1 to 200 characters")
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        expired = datetime.now(UTC) - REPLY_TTL
        expired_at = expired.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        with self._write() as conn:
            # Answers nobody took (the kernel stopped waiting, or died) do not pile up.
            conn.execute("DELETE FROM notebook_replies WHERE created_at < %s", [expired_at])
            conn.execute(
                "INSERT INTO notebook_replies (request_id, payload, created_at)"
                " VALUES (%s, %s, %s)"
                " ON CONFLICT (request_id) DO UPDATE SET payload = excluded.payload",
                [request_id, text, utc_now()],
            )

    def take_notebook_reply(self, request_id: str) -> JSON | None:
        # One statement: of concurrent takers (kernels polling through several replicas),
        # exactly one gets the row.
        row = self._one(
            "DELETE FROM notebook_replies WHERE request_id = %s RETURNING payload", [request_id]
        )
        if row is None:
            return None
        payload = json.loads(row[0])
        return payload if isinstance(payload, dict) else {"value": payload}
