"""The agent's executions into the ledger of kernel executions (``store/executions.py``).

``notebook.run`` (``notebook.detached``) and ``%%agi``'s ``python`` tool record each execution
they start, with the run and the tool call, and how it ended. Recording never fails the call:
a store that cannot take the row is logged, and the execution goes on. The user's own
executions are recorded by the kernel extension (``kernel.context``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from agi_jupyter.notebook.model import source_hash, summarize_outputs
from agi_jupyter.records import ExecutionStatus, KernelExecution

if TYPE_CHECKING:
    from agi_jupyter.notebook.execution import Execution
    from agi_jupyter.tools.base import ToolContext

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_SUMMARY_LINES = 8


def status_of(execution: Execution) -> ExecutionStatus:
    if execution.interrupted:
        return "interrupted"
    return "error" if execution.error else "ok"


def summary_of(outputs: list[dict[str, Any]]) -> str:
    """The outputs as a few short lines (as ``notebook.read`` names them)."""
    lines = summarize_outputs(outputs)
    more = len(lines) - MAX_SUMMARY_LINES
    return "\n".join(lines[:MAX_SUMMARY_LINES] + ([f"… {more} more outputs"] if more > 0 else []))


async def agent_started(
    ctx: ToolContext, path: str, cell_id: str | None, source: str
) -> str | None:
    """Record an execution the agent starts; its id (None: not recorded)."""

    def write() -> str:
        return ctx.store.start_execution(
            path,
            origin="agent",
            cell_id=cell_id,
            source_hash=source_hash(source),
            run_id=ctx.run_id,
            tool_call_id=ctx.tool_call_id or None,
        ).id

    return await _quietly(write)


async def agent_ended(
    ctx: ToolContext,
    execution_id: str | None,
    status: ExecutionStatus,
    execution_count: int | None,
    summary: str,
) -> None:
    if execution_id is None:
        return

    def write() -> None:
        ctx.store.end_execution(
            execution_id, status=status, execution_count=execution_count, summary=summary
        )

    await _quietly(write)


async def _quietly(write: Callable[[], T]) -> T | None:
    try:
        return await asyncio.to_thread(write)
    except Exception as e:  # the ledger must not fail the execution it records
        log.warning("could not record a kernel execution: %s", e)
        return None


LEDGER_COLUMNS = (
    "started",
    "ended",
    "cell",
    "count",
    "origin",
    "run",
    "status",
    "source",
    "summary",
)


def ledger_row(execution: KernelExecution) -> list[object]:
    """One execution as a row of ``LEDGER_COLUMNS`` (``agi executions``, ``%agi executions``)."""
    e = execution
    origin = e.origin if e.origin == "user" else f"agent ({e.tool_call_id or 'python'})"
    summary = (e.summary or "").splitlines()
    return [
        e.started_at,
        e.ended_at or "",
        e.cell_id or "",
        "" if e.execution_count is None else e.execution_count,
        origin,
        e.run_id or "",
        e.status,
        e.source_hash or "",
        summary[0][:80] if summary else "",
    ]
