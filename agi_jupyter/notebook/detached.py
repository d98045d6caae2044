"""Cells ``notebook.run`` started: waited for a while, then left running under a handle.

A ``CellsJob`` runs the cells of one ``notebook.run`` call, in order, on a task of its own:
each cell runs in the notebook's kernel to its end, and its outputs go into the notebook
(recorded as a change of the run, as before) whether anybody still waits for it or not. The
tool waits up to its ``timeout`` (``notebook_run_wait`` by default); a job still running
then is *not* interrupted: ``Executions`` keeps it under a handle, the tool answers with the
handle and the output so far, and ``notebook.wait`` / ``notebook.interrupt`` find it again.
Only an ``interrupt_after`` the agent set, ``notebook.interrupt``, or a cancel of the run that
asks for it (``Agi.cancel(run_id, interrupt=True)``) interrupt a cell: a run cancelled while
its ``notebook.run`` waits leaves the cells running, kept under their handle. While somebody
waits, the running cell's output streams as that call's live output.

Handles live with the ``Agi`` (in memory): a handle outlives its run, not its process.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from agi_jupyter.errors import ErrorCode, ToolError
from agi_jupyter.notebook import ledger
from agi_jupyter.notebook.access import NotebookAccess, NotebookTarget
from agi_jupyter.notebook.diff import diff_draft
from agi_jupyter.notebook.execution import CellRun, Emit, Execution
from agi_jupyter.notebook.images import images_of
from agi_jupyter.notebook.model import parse, summarize_outputs
from agi_jupyter.notebook.record import one_change_at_a_time, record_change
from agi_jupyter.notebook.render import render_execution
from agi_jupyter.records import ExecutionStatus
from agi_jupyter.tools.base import ToolContext, ToolResult

SETTLE_AFTER_INTERRUPT = 15.0
Ended = Callable[[str, CellRun, Execution], None]
"""Called as each cell ends (the ledger): the notebook path, the run, what it produced."""


@dataclass(frozen=True)
class Cell:
    id: str
    source: str


@dataclass(frozen=True, kw_only=True)
class RunningCells:
    """A run's ``notebook.run`` job still running: its handle, notebook, the cell running
    now, and whether a cancel interrupted that cell."""

    handle: str
    path: str
    cell_id: str | None
    interrupted: bool


class CellsJob:
    """The cells of one ``notebook.run`` call, run in order to the first failure."""

    def __init__(
        self,
        access: NotebookAccess,
        target: NotebookTarget,
        cells: list[Cell],
        ctx: ToolContext,
        *,
        interrupt_after: float | None,
    ) -> None:
        self.handle = f"ex-{uuid.uuid4().hex[:12]}"
        self.access, self.target, self.cells, self.ctx = access, target, cells, ctx
        self.interrupt_after = interrupt_after
        self.listener: Emit | None = None
        self.current: CellRun | None = None
        self.current_since = time.monotonic()
        self.started = time.monotonic()
        self.reports: list[str] = []
        self.shown: list[tuple[str, list[dict[str, Any]]]] = []  # the outputs of ended cells
        self.skipped: list[str] = []
        self.execution_ids: list[str] = []  # the ledger's rows of the cells started so far
        self.task: asyncio.Task[ToolResult] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name=f"notebook.run {self.handle}")
        # A job nobody waits for any more still ends; its failure is not an unseen error.
        self.task.add_done_callback(lambda task: task.cancelled() or task.exception())

    def listen(self, emit: Emit | None) -> None:
        self.listener = emit
        if self.current is not None:
            self.current.listener = emit

    async def interrupt(self) -> bool:
        """Interrupt the cell running now (the cells after it are not run)."""
        current = self.current
        return current is not None and await current.interrupt()

    def leave_running(self) -> None:
        """A cancellation of the job from now on stops following the cell, not the cell."""
        if self.current is not None:
            self.current.interrupt_on_cancel = False

    async def _run(self) -> ToolResult:
        ctx = self.ctx
        first_before: bytes | None = None
        last_after: bytes | None = None
        changes: list[dict[str, object]] = []
        ok, kind, path = True, "file", self.target.shown
        for cell in self.cells:
            run = CellRun(
                cell.source,
                cell.id,
                interrupt_after=self.interrupt_after,
                listener=self.listener,
                origin={"run_id": ctx.run_id or "", "tool_call_id": ctx.tool_call_id},
            )
            self.current, self.current_since = run, time.monotonic()
            started = await ledger.agent_started(ctx, self.target.shown, cell.id, cell.source)
            if started is not None:
                self.execution_ids.append(started)
            try:
                execution = await self.access.execute(self.target, run)
            except asyncio.CancelledError:
                # The call was cancelled: the cell was interrupted, or left running unfollowed.
                await asyncio.shield(self._ended(started, run.execution, "interrupted"))
                raise
            except Exception:  # no kernel, a server not ready: the row does not stay running
                await self._ended(started, run.execution, "error")
                raise
            await self._ended(started, execution, ledger.status_of(execution))
            doc = await self.access.open(self.target)  # the tab may have opened or closed
            kind, path = doc.kind, doc.path
            # What the agent's run printed goes into the notebook redacted, as it does
            # everywhere else (the notebook's snapshots in the store included).
            outputs = execution.outputs
            if ctx.redactor is not None:
                outputs = ctx.redactor.redact_json(outputs)
            async with one_change_at_a_time(doc.path):
                mutation = await doc.set_outputs(cell.id, outputs, execution.execution_count)
                recorded = await record_change(ctx, doc.path, mutation)
            first_before = first_before or mutation.before
            last_after = mutation.after
            changes.append(
                {
                    "cell_id": cell.id,
                    "receipt": mutation.receipt.to_dict(),
                    "execution_count": execution.execution_count,
                    "notebook_after_sha": recorded.after_sha,
                }
            )
            self.reports.append(render_execution(cell.id, execution, self.interrupt_after))
            self.shown.append((cell.id, execution.outputs))
            self.current = None
            if not execution.ok:
                ok = False
                break
        not_run = [c.id for c in self.cells[len(changes) :]]
        reports = list(self.reports)
        if not_run:
            reports.append(f"not run (an earlier cell failed): {', '.join(not_run)}")
        reports += self._skipped_note()
        draft = None
        if first_before is not None and last_after is not None and first_before != last_after:
            draft = diff_draft(parse(first_before), parse(last_after), path, kind)
        return ToolResult(
            output="\n\n".join(reports),
            ok=ok,
            data={
                "path": path,
                "backend": kind,
                "cells": changes,
                "not_run": not_run,
                "skipped": self.skipped,
                "handle": self.handle,
            },
            artifact=draft,
            images=images_of(self.shown),
        )

    async def _ended(
        self, started: str | None, execution: Execution, status: ExecutionStatus
    ) -> None:
        count, summary = execution.execution_count, ledger.summary_of(execution.outputs)
        await ledger.agent_ended(self.ctx, started, status, count, summary)

    def _skipped_note(self) -> list[str]:
        if not self.skipped:
            return []
        return [f"skipped (protected cells: the agent may not run them): {', '.join(self.skipped)}"]

    def pending(self, waited: float) -> ToolResult:
        """What a caller who stopped waiting is told: the handle and the output so far."""
        current = self.current
        done = len(self.reports)
        pending = [c.id for c in self.cells[done:]]
        lines = [
            f"still running after {waited:g} s (not interrupted): execution handle "
            f"{self.handle}; the cells go on in the kernel and their outputs go into the "
            "notebook when they end.",
            f'notebook.wait {{"handle": "{self.handle}"}} waits for the result; '
            f'notebook.interrupt {{"handle": "{self.handle}"}} stops it.',
        ]
        lines += self.reports
        if current is not None:
            running = time.monotonic() - self.current_since
            lines.append(f"cell {current.cell_id}: running for {running:.0f} s; output so far:")
            so_far = summarize_outputs(list(current.execution.outputs))
            lines += [f"- {line}" for line in so_far] or ["- (no output yet)"]
        else:
            lines.append(f"waiting for the kernel to run cell {pending[0]}" if pending else "")
        lines += self._skipped_note()
        shown = list(self.shown)
        if current is not None:
            shown.append((current.cell_id, list(current.execution.outputs)))
        return ToolResult(
            images=images_of(shown),
            output="\n".join(line for line in lines if line),
            data={
                "handle": self.handle,
                "path": self.target.shown,
                "running": current.cell_id if current is not None else None,
                "pending": pending,
                "elapsed": round(time.monotonic() - self.started, 1),
            },
        )


class Executions:
    """The ``notebook.run`` jobs still running, by handle (one table per ``Agi``)."""

    def __init__(self) -> None:
        self._jobs: dict[str, CellsJob] = {}

    def get(self, handle: str) -> CellsJob:
        job = self._jobs.get(handle)
        if job is None:
            raise ToolError(
                f"no running execution {handle!r} (it ended and its result was given, or it "
                "was started by another process)",
                code=ErrorCode.EXECUTION_NOT_FOUND,
            )
        return job

    def handles(self) -> list[str]:
        return list(self._jobs)

    def find(self, handle: str) -> CellsJob | None:
        return self._jobs.get(handle)

    def collect(self, job: CellsJob) -> ToolResult:
        """The result of a job that ended (given once: its handle is forgotten)."""
        task = job.task
        assert task is not None, "a job collected was started"
        assert task.done(), "a job collected has ended"
        self._jobs.pop(job.handle, None)
        if task.cancelled():
            return ToolResult(output="the execution was stopped before it ended", ok=False)
        error = task.exception()
        if error is not None:
            return ToolResult(
                output=f"the execution failed: {type(error).__name__}: {error}", ok=False
            )
        return task.result()

    async def wait(
        self, job: CellsJob, seconds: float, emit: Emit, *, interrupt_on_cancel: bool
    ) -> ToolResult:
        """Wait up to ``seconds`` for ``job``: its result, or (still running) its handle and
        output so far. A cancelled wait interrupts the job's cell only if
        ``interrupt_on_cancel``."""
        task = job.task
        assert task is not None, "a job waited for is started"
        job.listen(emit)
        try:
            await asyncio.wait({task}, timeout=seconds)
        except asyncio.CancelledError:
            if interrupt_on_cancel:
                task.cancel()
                self._jobs.pop(job.handle, None)
            elif not task.done():
                self._jobs[job.handle] = job  # left running: found again by its handle
            raise
        finally:
            job.listen(None)
        if not task.done():
            self._jobs[job.handle] = job
            return job.pending(seconds)
        self._jobs.pop(job.handle, None)
        return task.result()

    def of_run(self, run_id: str) -> list[RunningCells]:
        """The run's jobs whose cells still run (a cancel leaves them running)."""
        return [
            RunningCells(
                handle=job.handle,
                path=job.target.shown,
                cell_id=job.current.cell_id if job.current is not None else None,
                interrupted=False,
            )
            for job in self._jobs.values()
            if job.ctx.run_id == run_id and job.task is not None and not job.task.done()
        ]

    async def interrupt_run(self, run_id: str) -> list[RunningCells]:
        """Interrupt the cell running now in each of the run's jobs (the cells after it are
        not run); what was running, each marked ``interrupted`` when a cell was."""
        found = self.of_run(run_id)
        done = []
        for running in found:
            interrupted = await self._jobs[running.handle].interrupt()
            done.append(replace(running, interrupted=interrupted))
        return done

    async def interrupt(self, job: CellsJob, emit: Emit) -> ToolResult:
        """Interrupt the job's running cell and wait for what it produced until then."""
        interrupted = await job.interrupt()
        result = await self.wait(job, SETTLE_AFTER_INTERRUPT, emit, interrupt_on_cancel=False)
        if not interrupted:
            result.output = f"(no cell was running to interrupt)\n{result.output}"
        return result

    async def aclose(self) -> None:
        """Stop following the jobs (their cells are left running in their kernels)."""
        jobs, self._jobs = list(self._jobs.values()), {}
        for job in jobs:
            if job.task is not None and not job.task.done():
                job.leave_running()
                job.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await job.task
