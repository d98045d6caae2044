"""Tool calls: what a run asked a tool to do, its result, and a person's decision on it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agi_jupyter.errors import NotFound, RunNotFound
from agi_jupyter.records import JSON, RunFence, ToolCall, ToolCallStatus, new_id, utc_now
from agi_jupyter.store.rows import TOOL_CALLS, dumps
from agi_jupyter.store.sql import Conn, Database, check_fence, insert, require_run, set_clause
from agi_jupyter.store.values import LargeValues

_SELECT = f"SELECT {TOOL_CALLS.select('t')} FROM tool_calls t"
# The columns whose large strings are kept once (``values.py``), by position in a row.
_LARGE = ("args", "result")
_LARGE_AT = [TOOL_CALLS.columns.index(c) for c in _LARGE]


def _not_found(id: str) -> NotFound:
    return NotFound(f"tool call {id!r} not found", code="TOOL_CALL_NOT_FOUND")


class ToolCalls:
    """The ``tool_calls`` table."""

    def __init__(self, db: Database, values: LargeValues) -> None:
        self._db = db
        self._dialect = db.dialect
        self._values = values

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
        """Record a tool call of a run; with ``fence`` only while the run's owner still holds
        it (else ``RunLost``)."""
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
        with self._db.write() as conn:
            session_id = require_run(conn, self._dialect, run_id)
            check_fence(conn, self._dialect, fence)
            self._keep(conn, session_id, row)
            insert(conn, "tool_calls", row)
        return call

    def update_tool_call(
        self, id: str, /, *, fence: RunFence | None = None, **changes: Any
    ) -> ToolCall:
        """Change fields of a tool call; ``fence``: as for ``create_tool_call``."""
        values = {**TOOL_CALLS.changes(changes), "updated_at": utc_now()}
        with self._db.write() as conn:
            check_fence(conn, self._dialect, fence)
            self._keep(conn, lambda: _session_of_call(conn, id), values)
            assignments, params = set_clause(values)
            row = conn.execute(
                f"UPDATE tool_calls SET {assignments} WHERE id = ? RETURNING {TOOL_CALLS.select()}",
                [*params, id],
            ).fetchone()
            if row is None:
                raise _not_found(id)
            return self._record(row, conn)

    def decide_tool_calls(
        self, run_id: str, decision: JSON, *, tool_call_id: str | None = None
    ) -> list[ToolCall]:
        """Record a person's ``decision`` on the run's calls waiting for one that have none yet
        (all of them, or the one with ``tool_call_id``). Once none is left undecided, a run in
        ``waiting_approval`` is queued, due now, in the same transaction (any tick may claim
        it). Returns the calls decided; empty when nothing was waiting."""
        now = utc_now()
        where = "run_id = ? AND status = 'waiting_approval' AND approval IS NULL"
        with self._db.write() as conn:
            # Concurrent decisions on one run are serialised by its row lock (taken first: a
            # shared lock upgraded later deadlocks two deciders): the last one sees no call
            # left undecided and queues the run.
            found = conn.execute(
                f"SELECT 1 FROM runs WHERE id = ?{self._dialect.for_update}", [run_id]
            )
            if found.fetchone() is None:
                raise RunNotFound(f"run {run_id!r} not found")
            sql = f"UPDATE tool_calls SET approval = ?, updated_at = ? WHERE {where}"
            params: list[Any] = [dumps(decision), now, run_id]
            if tool_call_id is not None:
                sql += " AND tool_call_id = ?"
                params.append(tool_call_id)
            rows = conn.execute(f"{sql} RETURNING {TOOL_CALLS.select()}", params).fetchall()
            rows = self._values.expand_rows(rows, _LARGE_AT, conn)
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
        row = self._db.one(f"{_SELECT} WHERE t.id = ?", [id])
        if row is None:
            raise _not_found(id)
        return self._record(row)

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
        sql = _SELECT + (" WHERE " + " AND ".join(where) if where else "")
        rows = self._db.all(f"{sql} ORDER BY t.created_at, t.{self._dialect.pos}", params)
        return [TOOL_CALLS.from_row(r) for r in self._values.expand_rows(rows, _LARGE_AT)]

    def _keep(self, conn: Conn, session: str | Callable[[], str], row: dict[str, Any]) -> None:
        """The large strings of the row's ``args`` and ``result`` kept once."""
        for column in _LARGE:
            if row.get(column) is not None:
                row[column] = self._values.keep(conn, session, row[column])

    def _record(self, row: Sequence[Any], conn: Conn | None = None) -> ToolCall:
        return TOOL_CALLS.from_row(self._values.expand_rows([row], _LARGE_AT, conn)[0])


def _session_of_call(conn: Conn, id: str) -> str:
    row = conn.execute(
        "SELECT r.session_id FROM tool_calls t JOIN runs r ON r.id = t.run_id WHERE t.id = ?",
        [id],
    ).fetchone()
    return str(row[0]) if row is not None else ""
