"""Run events (the persisted event log of each run) and tool calls.

By default ``seq`` counts a run's events from 1 with no gaps: the next value is read and written
inside one ``BEGIN IMMEDIATE`` transaction, so even two processes appending to the same run get
distinct, consecutive numbers (the unique index on ``(run_id, seq)`` is the backstop). A caller
that numbers a run's live events itself passes ``seq``; the store then checks it increases.

The rowid of ``run_events`` only grows, and rows become visible in rowid order (SQLite has one
writer at a time), so its decimal text serves as the session-stream cursor for tailing a
session's events from another process: the same numbers as before cursors became strings, so
old cursors keep working. (``VACUUM`` may renumber rowids: tailers then restart from 0.)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from agi_jupyter.errors import Conflict, NotFound, UsageError
from agi_jupyter.records import (
    JSON,
    RunEvent,
    RunFence,
    ToolCall,
    ToolCallStatus,
    new_id,
    utc_now,
)
from agi_jupyter.store.connection import StoreCore
from agi_jupyter.store.rows import RUN_EVENTS, TOOL_CALLS, check_limit, dumps

_EVENT_COLUMNS = RUN_EVENTS.select("e")
_TOOL_SELECT = f"SELECT {TOOL_CALLS.select('t')} FROM tool_calls t"


def _tool_call_not_found(id: str) -> NotFound:
    return NotFound(f"tool call {id!r} not found", code="TOOL_CALL_NOT_FOUND")


class EventsMixin(StoreCore):
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
        """Append one event to a run's log, numbered after the run's last event, or ``seq``
        when the caller numbers the run's events itself (live events that are not persisted
        leave gaps); ``seq`` must be above the last one stored, else ``Conflict``. With
        ``fence``: only while the run's owner still holds it, else ``RunLost``."""
        return self._append(run_id, [(type, payload)], seq, fence)[0]

    def append_run_events(
        self,
        run_id: str,
        events: Sequence[tuple[str, JSON]],
        *,
        seqs: Sequence[int] | None = None,
        fence: RunFence | None = None,
    ) -> list[RunEvent]:
        """Append several events in one transaction, numbered consecutively after the run's
        last event, or ``seqs`` (increasing, above the last one stored) when the caller
        numbers them itself. ``fence``: as for ``append_run_event``."""
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
            self._require_run(conn, run_id)
            self._check_fence(conn, fence)
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = ?", [run_id]
            ).fetchone()
            numbers = numbering(last, len(events), seqs)
            if numbers[0] <= last or any(a >= b for a, b in itertools.pairwise(numbers)):
                raise Conflict(
                    f"run {run_id!r} already has events up to seq {last} (got {numbers})"
                )
            created = [
                RunEvent(id=new_id("evt"), run_id=run_id, seq=n, type=t, payload=p, created_at=now)
                for n, (t, p) in zip(numbers, events, strict=True)
            ]
            conn.executemany(
                "INSERT INTO run_events (id, run_id, seq, type, payload, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (e.id, run_id, e.seq, e.type, payload, now)
                    for e, payload in zip(created, payloads, strict=True)
                ],
            )
        return created

    def list_run_events(
        self, run_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[RunEvent]:
        """A run's events with ``seq > after_seq``, in order (none for an unknown run)."""
        rows = self._all(
            f"SELECT {_EVENT_COLUMNS} FROM run_events e WHERE e.run_id = ? AND e.seq > ?"
            " ORDER BY e.seq LIMIT ?",
            [run_id, after_seq, check_limit(limit)],
        )
        return [RUN_EVENTS.from_row(r) for r in rows]

    def list_session_run_events(
        self, session_id: str, *, after_cursor: str | None = None, limit: int = 500
    ) -> list[tuple[str, RunEvent]]:
        """Events of all runs of a session written after ``after_cursor``, as (cursor, event)
        pairs in write order; pass the last cursor back to continue tailing."""
        rows = self._all(
            f"SELECT e.rowid, {_EVENT_COLUMNS} FROM run_events e"
            " JOIN runs r ON r.id = e.run_id"
            " WHERE r.session_id = ? AND e.rowid > ? ORDER BY e.rowid LIMIT ?",
            [session_id, _rowid_cursor(after_cursor), check_limit(limit)],
        )
        return [(str(r[0]), RUN_EVENTS.from_row(r[1:])) for r in rows]

    def session_events_end(self, session_id: str) -> str:
        row = self._one(
            "SELECT MAX(e.rowid) FROM run_events e JOIN runs r ON r.id = e.run_id"
            " WHERE r.session_id = ?",
            [session_id],
        )
        return str(row[0] if row is not None and row[0] is not None else 0)

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
        """Record a tool call of a run (``tool_call_id`` is unique per run: else ``Conflict``);
        with ``fence`` only while the run's owner still holds it (else ``RunLost``)."""
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
        """Change fields of a tool call; ``fence``: as for ``create_tool_call``."""
        values = {**TOOL_CALLS.changes(changes), "updated_at": utc_now()}
        assignments, params = self._set_clause(values)
        with self._write() as conn:
            self._check_fence(conn, fence)
            cur = conn.execute(f"UPDATE tool_calls SET {assignments} WHERE id = ?", [*params, id])
            if cur.rowcount == 0:
                raise _tool_call_not_found(id)
            row = conn.execute(f"{_TOOL_SELECT} WHERE t.id = ?", [id]).fetchone()
        return TOOL_CALLS.from_row(row)

    def decide_tool_calls(
        self, run_id: str, decision: JSON, *, tool_call_id: str | None = None
    ) -> list[ToolCall]:
        """Record a person's ``decision`` on the run's calls waiting for one that have none yet
        (all of them, or the one with ``tool_call_id``). Once none is left undecided, a run in
        ``waiting_approval`` is queued, due now, in the same transaction (any tick may claim
        it). Returns the calls decided; empty when nothing was waiting."""
        now = utc_now()
        where = "run_id = ? AND status = 'waiting_approval' AND approval IS NULL"
        with self._write() as conn:
            self._require_run(conn, run_id)
            sql = f"UPDATE tool_calls SET approval = ?, updated_at = ? WHERE {where}"
            params: list[Any] = [dumps(decision), now, run_id]
            if tool_call_id is not None:
                sql += " AND tool_call_id = ?"
                params.append(tool_call_id)
            rows = conn.execute(f"{sql} RETURNING {TOOL_CALLS.select()}", params).fetchall()
            left = conn.execute(f"SELECT COUNT(*) FROM tool_calls WHERE {where}", [run_id])
            if rows and not (left.fetchone() or (0,))[0]:
                conn.execute(
                    "UPDATE runs SET status = 'queued', next_attempt_at = ?,"
                    " version = version + 1, updated_at = ?"
                    " WHERE id = ? AND status = 'waiting_approval'",
                    [now, now, run_id],
                )
        return [TOOL_CALLS.from_row(row) for row in rows]

    def get_tool_call(self, id: str) -> ToolCall:
        row = self._one(f"{_TOOL_SELECT} WHERE t.id = ?", [id])
        if row is None:
            raise _tool_call_not_found(id)
        return TOOL_CALLS.from_row(row)

    def list_tool_calls(
        self, *, run_id: str | None = None, session_id: str | None = None
    ) -> list[ToolCall]:
        """Tool calls in creation order, of one run and/or of all runs of one session."""
        where: list[str] = []
        params: list[Any] = []
        if run_id is not None:
            where.append("t.run_id = ?")
            params.append(run_id)
        if session_id is not None:
            where.append("t.run_id IN (SELECT id FROM runs WHERE session_id = ?)")
            params.append(session_id)
        sql = _TOOL_SELECT + (" WHERE " + " AND ".join(where) if where else "")
        rows = self._all(f"{sql} ORDER BY t.created_at, t.rowid", params)
        return [TOOL_CALLS.from_row(r) for r in rows]


def _rowid_cursor(cursor: str | None) -> int:
    """The rowid of a session-stream cursor (its decimal text; None: from the start)."""
    if cursor is None:
        return 0
    if not (isinstance(cursor, str) and cursor.isascii() and cursor.isdigit()):
        raise UsageError(
            f"invalid session event cursor {cursor!r} (this SQLite store's cursors are numbers)"
        )
    return int(cursor)


def numbering(last: int, count: int, seqs: Sequence[int] | int | None) -> list[int]:
    """The seq of each new event: given, starting at a given one, or after ``last``."""
    if seqs is None:
        return list(range(last + 1, last + 1 + count))
    if isinstance(seqs, int):
        return list(range(seqs, seqs + count))
    return list(seqs)
