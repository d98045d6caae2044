"""Sessions: create, read, page through, update, delete (with everything under them)."""

from __future__ import annotations

from typing import Any

from agi_jupyter.errors import SessionNotFound
from agi_jupyter.records import JSON, Page, QueueMode, RunFence, Session, new_id, utc_now
from agi_jupyter.store.artifacts import Payloads
from agi_jupyter.store.rows import SESSIONS
from agi_jupyter.store.sql import Database, check_fence, insert, page, set_clause

_SELECT = f"SELECT {SESSIONS.select()} FROM sessions"

# Rows that belong to a session, for a cascading delete (each takes the session id once).
_RUNS_OF = "SELECT id FROM runs WHERE session_id = ?"
_MESSAGES_OF = "SELECT id FROM messages WHERE session_id = ?"
_ARTIFACTS_OF = (
    "SELECT id FROM artifacts WHERE session_id = ?"
    f" OR run_id IN ({_RUNS_OF})"
    " OR message_part_id IN (SELECT id FROM message_parts WHERE message_id IN"
    f" ({_MESSAGES_OF}))"
)
_CASCADE = [
    (f"DELETE FROM artifacts WHERE id IN ({_ARTIFACTS_OF})", 3),
    (f"DELETE FROM run_events WHERE run_id IN ({_RUNS_OF})", 1),
    (f"DELETE FROM tool_calls WHERE run_id IN ({_RUNS_OF})", 1),
    (f"DELETE FROM changes WHERE run_id IN ({_RUNS_OF})", 1),
    ("DELETE FROM blob_refs WHERE session_id = ?", 1),
    (f"DELETE FROM message_parts WHERE message_id IN ({_MESSAGES_OF})", 1),
    ("DELETE FROM compactions WHERE session_id = ?", 1),
    ("DELETE FROM messages WHERE session_id = ?", 1),
    ("DELETE FROM runs WHERE session_id = ?", 1),
    ("DELETE FROM sessions WHERE id = ?", 1),
]
# Blobs no change (snapshots) and no session (large values, ``values.py``) refers to any more;
# locked ones (PostgreSQL) are being referenced right now (``Changes.add_change``,
# ``LargeValues.keep`` hold them): skipped, never collected under them.
_COLLECT_BLOBS = (
    "DELETE FROM blobs WHERE sha256 IN (SELECT sha256 FROM blobs WHERE sha256 NOT IN"
    " (SELECT before_sha FROM changes WHERE before_sha IS NOT NULL"
    " UNION SELECT after_sha FROM changes WHERE after_sha IS NOT NULL"
    " UNION SELECT sha256 FROM blob_refs){lock})"
)


def _not_found(session_id: str) -> SessionNotFound:
    return SessionNotFound(f"session {session_id!r} not found")


class Sessions:
    """The ``sessions`` table, and the cascade of a session's deletion."""

    def __init__(self, db: Database, payloads: Payloads) -> None:
        self._db = db
        self._payloads = payloads
        self._collect_blobs = _COLLECT_BLOBS.format(
            lock=db.dialect.for_update + db.dialect.skip_locked
        )

    def create_session(
        self,
        *,
        title: str | None = None,
        agent: str = "general",
        sdk: str = "native",
        provider: str | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        thinking_level: str | None = None,
        queue_mode: QueueMode = "queue",
        tool_config: JSON | None = None,
        metadata: JSON | None = None,
        notebook_path: str | None = None,
        budget: JSON | None = None,
    ) -> Session:
        now = utc_now()
        values: dict[str, Any] = {
            "title": title,
            "agent": agent,
            "sdk": sdk,
            "provider": provider,
            "model": model,
            "system_prompt": system_prompt,
            "thinking_level": thinking_level,
            "queue_mode": queue_mode,
            "tool_config": tool_config or {},
            "metadata": metadata or {},
            "notebook_path": notebook_path,
            "budget": budget or None,
        }
        session = Session(id=new_id("ses"), created_at=now, updated_at=now, **values)
        row = SESSIONS.to_row(session)
        with self._db.write() as conn:
            insert(conn, "sessions", row)
        return session

    def get_session(self, id: str) -> Session:
        row = self._db.one(f"{_SELECT} WHERE id = ?", [id])
        if row is None:
            raise _not_found(id)
        return SESSIONS.from_row(row)

    def list_sessions(
        self, *, limit: int = 50, cursor: str | None = None, notebook_path: str | None = None
    ) -> Page[Session]:
        """Newest first. Pass ``next_cursor`` back for the next page; sessions created
        meanwhile never shift the pages still to come."""
        filters = [] if notebook_path is None else [("notebook_path = ?", notebook_path)]
        return page(self._db, SESSIONS, filters, limit=limit, cursor=cursor)

    def update_session(self, id: str, /, **changes: Any) -> Session:
        values = SESSIONS.changes(changes)
        values["updated_at"] = utc_now()
        assignments, params = set_clause(values)
        with self._db.write() as conn:
            row = conn.execute(
                f"UPDATE sessions SET {assignments} WHERE id = ? RETURNING {SESSIONS.select()}",
                [*params, id],
            ).fetchone()
        if row is None:
            raise _not_found(id)
        return SESSIONS.from_row(row)

    def delete_session(self, id: str) -> None:
        """Delete a session with its messages, parts, runs, run events, tool calls, changes
        and artifacts (their files included), and the blobs (snapshots, large values) no
        other change or session refers to.
        The session row is locked first (PostgreSQL), so writers into the session (which lock
        it too, or hold it with ``FOR KEY SHARE``) finish before or wait and then find it
        gone."""
        with self._db.write() as conn:
            found = conn.execute(
                f"SELECT 1 FROM sessions WHERE id = ?{self._db.dialect.for_update}", [id]
            )
            if found.fetchone() is None:
                raise _not_found(id)
            artifact_ids = [r[0] for r in conn.execute(_ARTIFACTS_OF, [id, id, id])]
            for sql, count in _CASCADE:
                conn.execute(sql, [id] * count)
            conn.execute(self._collect_blobs)
        self._payloads.remove(artifact_ids)

    def add_session_usage(
        self,
        id: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cost_usd: float,
        cached_input_tokens: int = 0,
        fence: RunFence | None = None,
    ) -> None:
        """Add a run's usage to the session totals (an atomic increment); with ``fence``
        only while the run's owner still holds it (else ``RunLost``)."""
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET input_tokens = input_tokens + ?,"
                " output_tokens = output_tokens + ?, cost_usd = cost_usd + ?,"
                " cached_input_tokens = COALESCE(cached_input_tokens, 0) + ?, updated_at = ?"
                " WHERE id = ?",
                [input_tokens, output_tokens, cost_usd, cached_input_tokens, utc_now(), id],
            )
            if cur.rowcount == 0:
                raise _not_found(id)
            check_fence(
                conn, self._db.dialect, fence
            )  # after the session row: writers lock it first
