"""Sessions on PostgreSQL: create, read, page through, update, delete (with everything under
them; artifact payloads live in their rows, so there are no files to remove)."""

from __future__ import annotations

from typing import Any

from agi_jupyter.errors import SessionNotFound
from agi_jupyter.records import JSON, Page, QueueMode, RunFence, Session, new_id, utc_now
from agi_jupyter.store.postgres.changes import COLLECT_BLOBS
from agi_jupyter.store.postgres.core import PgCore
from agi_jupyter.store.rows import SESSIONS

_SELECT = f"SELECT {SESSIONS.select()} FROM sessions"

_RUNS_OF = "SELECT id FROM runs WHERE session_id = %(id)s"
_MESSAGES_OF = "SELECT id FROM messages WHERE session_id = %(id)s"
_CASCADE = [
    "DELETE FROM artifacts WHERE session_id = %(id)s"
    f" OR run_id IN ({_RUNS_OF})"
    " OR message_part_id IN (SELECT id FROM message_parts WHERE message_id IN"
    f" ({_MESSAGES_OF}))",
    "DELETE FROM run_events WHERE session_id = %(id)s",
    f"DELETE FROM tool_calls WHERE run_id IN ({_RUNS_OF})",
    f"DELETE FROM changes WHERE run_id IN ({_RUNS_OF})",
    f"DELETE FROM message_parts WHERE message_id IN ({_MESSAGES_OF})",
    "DELETE FROM messages WHERE session_id = %(id)s",
    "DELETE FROM runs WHERE session_id = %(id)s",
    "DELETE FROM sessions WHERE id = %(id)s",
    COLLECT_BLOBS,  # snapshots no change refers to any more
]


def _not_found(session_id: str) -> SessionNotFound:
    return SessionNotFound(f"session {session_id!r} not found")


class PgSessionsMixin(PgCore):
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
        session = Session(
            id=new_id("ses"),
            title=title,
            agent=agent,
            sdk=sdk,
            provider=provider,
            model=model,
            system_prompt=system_prompt,
            thinking_level=thinking_level,
            queue_mode=queue_mode,
            tool_config=tool_config or {},
            metadata=metadata or {},
            notebook_path=notebook_path,
            budget=budget or None,
            created_at=now,
            updated_at=now,
        )
        row = SESSIONS.to_row(session)
        with self._write() as conn:
            self._insert(conn, "sessions", row)
        return session

    def get_session(self, id: str) -> Session:
        row = self._one(f"{_SELECT} WHERE id = %s", [id])
        if row is None:
            raise _not_found(id)
        return SESSIONS.from_row(row)

    def list_sessions(
        self, *, limit: int = 50, cursor: str | None = None, notebook_path: str | None = None
    ) -> Page[Session]:
        filters = [] if notebook_path is None else [("notebook_path = %s", notebook_path)]
        return self._page(SESSIONS, filters, limit=limit, cursor=cursor)

    def update_session(self, id: str, /, **changes: Any) -> Session:
        values = SESSIONS.changes(changes)
        values["updated_at"] = utc_now()
        assignments, params = self._set_clause(values)
        with self._write() as conn:
            row = conn.execute(
                f"UPDATE sessions SET {assignments} WHERE id = %s RETURNING {SESSIONS.select()}",
                [*params, id],
            ).fetchone()
        if row is None:
            raise _not_found(id)
        return SESSIONS.from_row(row)

    def delete_session(self, id: str) -> None:
        """Delete a session with its messages, parts, runs, run events, tool calls, changes
        and artifacts (and the snapshots no other change refers to). The session row is
        locked first, so writers into the session (which lock it too, or hold it with
        ``FOR KEY SHARE``) finish before or wait and then find it gone."""
        with self._write() as conn:
            found = conn.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", [id])
            if found.fetchone() is None:
                raise _not_found(id)
            for sql in _CASCADE:
                conn.execute(sql, {"id": id})

    def add_session_usage(
        self,
        id: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cost_usd: float,
        fence: RunFence | None = None,
    ) -> None:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET input_tokens = input_tokens + %s,"
                " output_tokens = output_tokens + %s, cost_usd = cost_usd + %s, updated_at = %s"
                " WHERE id = %s",
                [input_tokens, output_tokens, cost_usd, utc_now(), id],
            )
            if cur.rowcount == 0:
                raise _not_found(id)
            self._check_fence(conn, fence)  # after the session row: writers lock it first
