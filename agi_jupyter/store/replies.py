"""The mailbox of JupyterLab tabs' replies: a tab answers a kernel's notebook request through
the server (a busy kernel cannot read comm messages), and the kernel takes the answer from
here (``kernel.tab``). One row per request: a tab may answer through one replica while the
kernel's server is another."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from agi_jupyter.errors import UsageError
from agi_jupyter.records import JSON, utc_now
from agi_jupyter.store.sql import Database

MAX_REQUEST_ID = 200
REPLY_TTL = timedelta(hours=1)


class NotebookReplies:
    """The ``notebook_replies`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def put_notebook_reply(self, request_id: str, payload: JSON) -> None:
        """Leave the answer to a notebook request (the last answer of an id wins)."""
        if not request_id or len(request_id) > MAX_REQUEST_ID:
            raise UsageError("request_id must be 1 to 200 characters")
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        expired = datetime.now(UTC) - REPLY_TTL
        expired_at = expired.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        with self._db.write() as conn:
            # Answers nobody took (the kernel stopped waiting, or died) do not pile up.
            conn.execute("DELETE FROM notebook_replies WHERE created_at < ?", [expired_at])
            conn.execute(
                "INSERT INTO notebook_replies (request_id, payload, created_at) VALUES (?, ?, ?)"
                " ON CONFLICT (request_id) DO UPDATE SET payload = excluded.payload",
                [request_id, text, utc_now()],
            )

    def take_notebook_reply(self, request_id: str) -> JSON | None:
        """The answer to ``request_id``, removed from the mailbox; None while there is none."""
        if (
            self._db.one("SELECT 1 FROM notebook_replies WHERE request_id = ?", [request_id])
            is None
        ):
            return None  # the common case while waiting: a read, no write lock
        # One statement: of concurrent takers (kernels polling through several replicas),
        # exactly one gets the row.
        with self._db.atomic() as conn:
            row = conn.execute(
                "DELETE FROM notebook_replies WHERE request_id = ? RETURNING payload",
                [request_id],
            ).fetchone()
        if row is None:
            return None
        payload = json.loads(row[0])
        return payload if isinstance(payload, dict) else {"value": payload}
