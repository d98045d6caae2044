"""Run events and tool calls on PostgreSQL.

Appending to a run first bumps its session's ``event_pos`` counter (``UPDATE sessions ...
RETURNING``), which locks the session row until the transaction ends. So appends to the runs
of one session take turns, each sees every earlier append committed, and:

- a run's ``seq`` counts on from the last one stored, as on SQLite (the unique index on
  ``(run_id, seq)`` is the backstop);
- ``session_pos`` values become visible in increasing order, which is what makes them a safe
  cursor for tailing a session: a tailer that has read position *n* never later finds a
  smaller one appear. (An identity or sequence would not do: two transactions can take 5
  and 6 and commit 6 first; a tailer reading then would skip 5 for ever.)

The cursor is ``p<session_pos>``: a bare number is a SQLite store's rowid, refused by name.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from agi_jupyter.errors import Conflict, NotFound, RunNotFound, UsageError
from agi_jupyter.records import (
    JSON,
    RunEvent,
    RunFence,
    ToolCall,
    ToolCallStatus,
    new_id,
    utc_now,
)
from agi_jupyter.store.events import numbering
from agi_jupyter.store.postgres.core import PgCore, limit_value
from agi_jupyter.store.rows import RUN_EVENTS, TOOL_CALLS, check_limit, dumps

_EVENT_COLUMNS = RUN_EVENTS.select("e")
_TOOL_SELECT = f"SELECT {TOOL_CALLS.select('t')} FROM tool_calls t"


def _tool_call_not_found(id: str) -> NotFound:
    return NotFound(f"tool call {id!r} not found", code="TOOL_CALL_NOT_FOUND")


def _position(cursor: str | None) -> int:
    """The ``session_pos`` of a session-stream cursor (None: from the start)."""
    if cursor is None:
        return 0
    body = cursor[1:] if isinstance(cursor, str) and cursor.startswith("p") else ""
    if not (body.isascii() and body.isdigit()):
        hint = " (a number is a SQLite store's cursor)" if str(cursor).isdigit() else ""
        raise UsageError(f"invalid session event cursor {cursor!r}{hint}")
    return int(body)


class PgEventsMixin(PgCore):
    # --- run events -----------------------------------------------------------------------

    def append_run_event(
        self,
        run_id: str,
        type: str,
        payload: JSON,
        *,
        seq: int | None = None,
        fence: RunFence | None = None,
    ) -> RunEvent:
        return self._append(run_id, [(type, payload)], seq, fence)[0]

    def append_run_events(
        self,
        run_id: str,
        events: Sequence[tuple[str, JSON]],
        *,
        seqs: Sequence[int] | None = None,
        fence: RunFence | None = None,
    ) -> list[RunEvent]:
        if seqs is not None and len(seqs) != len(events):
            raise UsageError("seqs must give one number per event")
        return self._append(run_id, events, seqs, fence) if events else []

    def _append(
        self,
        run_id: str,
        events: Sequence[tuple[str, JSON]],
        seqs: Sequence[int] | int | None,
        fence: RunFence | None,
    ) -> list[RunEvent]:
        now = utc_now()
        payloads = [dumps(payload) for _, payload in events]
        with self._write() as conn:
            row = conn.execute(
                "UPDATE sessions SET event_pos = event_pos + %s"
                " WHERE id = (SELECT session_id FROM runs WHERE id = %s)"
                " RETURNING id, event_pos",
                [len(events), run_id],
            ).fetchone()
            if row is None:
                raise RunNotFound(f"run {run_id!r} not found")
            session_id, end = row
            self._check_fence(conn, fence)
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = %s", [run_id]
            ).fetchone() or (0,)
            numbers = numbering(last, len(events), seqs)
            if numbers[0] <= last or any(a >= b for a, b in itertools.pairwise(numbers)):
                raise Conflict(
                    f"run {run_id!r} already has events up to seq {last} (got {numbers})"
                )
            created = [
                RunEvent(id=new_id("evt"), run_id=run_id, seq=n, type=t, payload=p, created_at=now)
                for n, (t, p) in zip(numbers, events, strict=True)
            ]
            first = end - len(events) + 1
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO run_events (id, run_id, seq, type, payload, created_at,"
                    " session_id, session_pos) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    [
                        (e.id, run_id, e.seq, e.type, payload, now, session_id, first + i)
                        for i, (e, payload) in enumerate(zip(created, payloads, strict=True))
                    ],
                )
        return created

    def list_run_events(
        self, run_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[RunEvent]:
        rows = self._all(
            f"SELECT {_EVENT_COLUMNS} FROM run_events e WHERE e.run_id = %s AND e.seq > %s"
            " ORDER BY e.seq LIMIT %s",
            [run_id, after_seq, limit_value(limit)],
        )
        return [RUN_EVENTS.from_row(r) for r in rows]

    def list_session_run_events(
        self, session_id: str, *, after_cursor: str | None = None, limit: int = 500
    ) -> list[tuple[str, RunEvent]]:
        rows = self._all(
            f"SELECT e.session_pos, {_EVENT_COLUMNS} FROM run_events e"
            " WHERE e.session_id = %s AND e.session_pos > %s ORDER BY e.session_pos LIMIT %s",
            [session_id, _position(after_cursor), check_limit(limit)],
        )
        return [(f"p{r[0]}", RUN_EVENTS.from_row(r[1:])) for r in rows]

    def session_events_end(self, session_id: str) -> str:
        row = self._one("SELECT event_pos FROM sessions WHERE id = %s", [session_id])
        return f"p{row[0] if row is not None else 0}"

    # --- tool calls -----------------------------------------------------------------------

    def create_tool_call(
        self,
        run_id: str,
        tool_call_id: str,
        name: str,
        args: JSON,
        *,
        message_id: str | None = None,
        status: ToolCallStatus = "pending",
        fence: RunFence | None = None,
    ) -> ToolCall:
        now = utc_now()
        call = ToolCall(
            id=new_id("tc"),
            run_id=run_id,
            tool_call_id=tool_call_id,
            name=name,
            message_id=message_id,
            args=args,
            status=status,
            created_at=now,
            updated_at=now,
        )
        row = TOOL_CALLS.to_row(call)
        with self._write() as conn:
            self._require_run(conn, run_id)
            self._check_fence(conn, fence)
            self._insert(conn, "tool_calls", row)
        return call

    def update_tool_call(
        self, id: str, /, *, fence: RunFence | None = None, **changes: Any
    ) -> ToolCall:
        values = {**TOOL_CALLS.changes(changes), "updated_at": utc_now()}
        assignments, params = self._set_clause(values)
        with self._write() as conn:
            self._check_fence(conn, fence)
            row = conn.execute(
                f"UPDATE tool_calls SET {assignments} WHERE id = %s"
                f" RETURNING {TOOL_CALLS.select()}",
                [*params, id],
            ).fetchone()
        if row is None:
            raise _tool_call_not_found(id)
        return TOOL_CALLS.from_row(row)

    def decide_tool_calls(
        self, run_id: str, decision: JSON, *, tool_call_id: str | None = None
    ) -> list[ToolCall]:
        """Record a person's ``decision`` on the run's calls waiting for one that have none yet
        (all of them, or the one with ``tool_call_id``). Once none is left undecided, a run in
        ``waiting_approval`` is queued, due now, in the same transaction (any tick may claim
        it). Returns the calls decided; empty when nothing was waiting."""
        now = utc_now()
        where = "run_id = %s AND status = 'waiting_approval' AND approval IS NULL"
        with self._write() as conn:
            # Concurrent decisions on one run are serialised by its row lock (taken first: a
            # shared lock upgraded later deadlocks two deciders): the last one sees no call
            # left undecided and queues the run.
            if (
                conn.execute("SELECT 1 FROM runs WHERE id = %s FOR UPDATE", [run_id]).fetchone()
                is None
            ):
                raise RunNotFound(f"run {run_id!r} not found")
            sql = f"UPDATE tool_calls SET approval = %s, updated_at = %s WHERE {where}"
            params: list[Any] = [dumps(decision), now, run_id]
            if tool_call_id is not None:
                sql += " AND tool_call_id = %s"
                params.append(tool_call_id)
            rows = conn.execute(f"{sql} RETURNING {TOOL_CALLS.select()}", params).fetchall()
            left = conn.execute(f"SELECT COUNT(*) FROM tool_calls WHERE {where}", [run_id])
            if rows and not (left.fetchone() or (0,))[0]:
                conn.execute(
                    "UPDATE runs SET status = 'queued', next_attempt_at = %s,"
                    " version = version + 1, updated_at = %s"
                    " WHERE id = %s AND status = 'waiting_approval'",
                    [now, now, run_id],
                )
        return [TOOL_CALLS.from_row(row) for row in rows]

    def get_tool_call(self, id: str) -> ToolCall:
        row = self._one(f"{_TOOL_SELECT} WHERE t.id = %s", [id])
        if row is None:
            raise _tool_call_not_found(id)
        return TOOL_CALLS.from_row(row)

    def list_tool_calls(
        self, *, run_id: str | None = None, session_id: str | None = None
    ) -> list[ToolCall]:
        where: list[str] = []
        params: list[Any] = []
        if run_id is not None:
            where.append("t.run_id = %s")
            params.append(run_id)
        if session_id is not None:
            where.append("t.run_id IN (SELECT id FROM runs WHERE session_id = %s)")
            params.append(session_id)
        sql = _TOOL_SELECT + (" WHERE " + " AND ".join(where) if where else "")
        rows = self._all(f"{sql} ORDER BY t.created_at, t.pos", params)
        return [TOOL_CALLS.from_row(r) for r in rows]
