"""The ledger of notebooks' kernel executions: one row per cell a kernel ran, by whom.

The agent's rows are written when an execution starts (``running``) and completed when it
ends; the user's once it ended (``kernel.ledger``). They are listed per notebook in the order
they started (then the insertion order: two executions started in the same millisecond keep
their order).
"""

from __future__ import annotations

from agi_jupyter.errors import ErrorCode, NotFound
from agi_jupyter.records import ExecutionOrigin, ExecutionStatus, KernelExecution, new_id, utc_now
from agi_jupyter.store.rows import EXECUTIONS
from agi_jupyter.store.sql import Database, insert

_SELECT = f"SELECT {EXECUTIONS.select()} FROM executions"
MAX_SUMMARY = 2000


class Executions:
    """The ``executions`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._dialect = db.dialect

    def start_execution(
        self,
        path: str,
        *,
        origin: ExecutionOrigin,
        cell_id: str | None = None,
        source_hash: str | None = None,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        started_at: str | None = None,
    ) -> KernelExecution:
        """Record an execution that started (status ``running``)."""
        execution = KernelExecution(
            id=new_id("exe"),
            path=path,
            cell_id=cell_id,
            source_hash=source_hash,
            origin=origin,
            run_id=run_id,
            tool_call_id=tool_call_id,
            status="running",
            started_at=started_at or utc_now(),
        )
        with self._db.write() as conn:
            insert(conn, "executions", EXECUTIONS.to_row(execution))
        return execution

    def end_execution(
        self,
        id: str,
        *,
        status: ExecutionStatus,
        execution_count: int | None = None,
        summary: str | None = None,
    ) -> KernelExecution:
        """Record how an execution ended."""
        clipped = None if summary is None else self._dialect.text(summary[:MAX_SUMMARY])
        with self._db.write() as conn:
            updated = conn.execute(
                "UPDATE executions SET status = ?, execution_count = ?, summary = ?,"
                " ended_at = ? WHERE id = ?",
                [status, execution_count, clipped, utc_now(), id],
            ).rowcount
        if not updated:
            raise NotFound(f"no execution {id!r}", code=ErrorCode.EXECUTION_NOT_FOUND)
        row = self._db.one(f"{_SELECT} WHERE id = ?", [id])
        return EXECUTIONS.from_row(row)

    def list_executions(self, path: str, *, limit: int | None = None) -> list[KernelExecution]:
        """The executions of the notebook ``path`` in the order they started (the last
        ``limit``). A user's row is written when the cell ended, so the start time orders them,
        then the insertion order."""
        pos = self._dialect.pos
        if limit is None:
            rows = self._db.all(f"{_SELECT} WHERE path = ? ORDER BY started_at, {pos}", [path])
        else:
            rows = self._db.all(
                f"SELECT * FROM (SELECT {EXECUTIONS.select()}, {pos} AS p FROM executions"
                f" WHERE path = ? ORDER BY started_at DESC, {pos} DESC LIMIT ?) AS newest"
                " ORDER BY started_at, p",
                [path, limit],
            )
            rows = [r[:-1] for r in rows]
        return [EXECUTIONS.from_row(r) for r in rows]
