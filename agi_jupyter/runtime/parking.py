"""Runs parked on cells that outlive their wait (``waiting_execution``), and how they resume.

    running --(notebook.wait {park: true}, the cells still run)--> waiting_execution (no owner)
    waiting_execution --(the cells ended: this process followed them)--> queued
    waiting_execution --(notebook_park_limit passed: they still run)--> queued
    waiting_execution --(nobody follows them: their process stopped; a tick)--> queued
    waiting_execution --(cancel)--> cancelled (the cells left running, or interrupted)

The run waits with no owner and no model call; ``LoopState.parked_on`` names the
``notebook.wait`` call that parked it (its row stays ``running``), the execution handle, and
the process following the cells (``follower``: ``RuntimeDeps.owner``). That process holds the
cells' job (``notebook.detached.Executions``, in memory) and beats the run's heartbeat while
it follows them, so a closed browser or a stopped kernel client changes nothing: the run is
resumed through the store, not by whoever watched it.

Resuming is two compare-and-sets on the run's version: the first writes the call's answer
into ``parked_on.outcome`` (the winner of concurrent resumers: the follower, ticks in any
process), then ``run.status: queued`` is emitted and the second queues the run, due now, for
this process's runner or any tick to claim. The attempt that claims it stores that answer as
the call's result before it calls the model (``ToolSteps.answer_parked``). A resumer that
died between the two leaves an answer and a stale heartbeat: the next tick queues the run.

A tick resumes the parked runs nobody follows: the follower let go (a graceful stop sets
``follower`` to None), or its heartbeat is older than ``stale_after`` (a killed process), or the
wait passed ``until`` by ``stale_after``. Kernels started by a Jupyter server or by agi never
outlive that process (``tests/server/test_kernel_outlives_server.py``): the run is told the
kernel is gone, with what the ledger knows of the cells.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from agi_jupyter import events as ev
from agi_jupyter.records import Run, utc_now
from agi_jupyter.run_state import ExecutionOutcome, ParkedExecution
from agi_jupyter.runtime.run_stops import is_stale, iso_in, seconds_until

if TYPE_CHECKING:
    from collections.abc import Callable

    from agi_jupyter.notebook.detached import CellsJob, Executions
    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.runtime.runs import RunManager

    # What a parked run's call answers, made from the run and its cells (store thread).
    Answer = Callable[[Run, ParkedExecution], ExecutionOutcome]

log = logging.getLogger(__name__)

PARKED = "waiting_execution"


class ParkedRuns:
    """The runs of this process parked on cells, and the tick's share for all parked runs.
    Coroutines run on the runtime loop; ``_``-methods named for the store thread run there."""

    def __init__(self, deps: RuntimeDeps, manager: RunManager, executions: Executions) -> None:
        self.deps = deps
        self.manager = manager
        self.executions = executions
        self._following: dict[str, asyncio.Task[None]] = {}
        self._closing = False  # this process stops: no run is followed from now on
        self._parking: set[str] = set()  # runs parking here now, followed once parked

    # --- parking ----------------------------------------------------------------------------

    def parked(self, run_id: str, tool_call_id: str, name: str, handle: str) -> ParkedExecution:
        """What the run's state keeps of the cells it waits for (on the loop); the run counts
        as followed here from now on (a tick meanwhile leaves it alone), ``follow`` next."""
        self._parking.add(run_id)
        job = self.executions.find(handle)
        now = utc_now()
        return ParkedExecution(
            handle=handle,
            path="" if job is None else job.target.shown,
            tool_call_id=tool_call_id,
            name=name,
            since=now,
            until=iso_in(self.deps.config.notebook_park_limit),
            follower=self.deps.owner,
            execution_ids=() if job is None else tuple(job.execution_ids),
        )

    def follow(self, run: Run) -> None:
        """Follow the cells ``run`` (just parked here) waits for, until it resumes."""
        self._parking.discard(run.id)
        state = run.loop_state
        if self._closing or run.status != PARKED or state is None or state.parked_on is None:
            return  # (closing: the run is let go by its stale heartbeat)
        parked = state.parked_on
        task = asyncio.get_running_loop().create_task(self._follow(run, parked))
        self._following[run.id] = task
        task.add_done_callback(lambda _t: self._following.pop(run.id, None))

    async def _follow(self, run: Run, parked: ParkedExecution) -> None:
        job = self.executions.find(parked.handle)
        if job is None or job.task is None:  # (ended and collected meanwhile: told as gone)
            await self._resume(run.id, parked, self._gone)
            return
        # The cells' output goes on streaming as the parked call's live output.
        emitter = await self.deps.stored(self.manager.local.emitter, run, None, on_loop=True)

        def live(channel: str, chunk: str) -> None:
            event = ev.ToolCallDelta(tool_call_id=parked.tool_call_id, channel=channel, chunk=chunk)
            with contextlib.suppress(Exception):  # best effort: never into the cell's run
                emitter.emit(event)

        job.listen(live)
        try:
            waiting = await self._until_ended(run.id, parked, job)
        finally:
            job.listen(None)
            with contextlib.suppress(Exception):  # (its events stored before the resume's)
                await emitter.drain()
        if waiting == "ended":
            await self._resume(run.id, parked, self._result_of(job))
        elif waiting == "limit":
            waited = f"{self.deps.config.notebook_park_limit:g}"
            await self._resume(run.id, parked, functools.partial(_still_running, job, waited))

    async def _until_ended(
        self, run_id: str, parked: ParkedExecution, job: CellsJob
    ) -> Literal["ended", "limit", "dropped"]:
        """Wait for the cells, beating the run's heartbeat: until they ended, the wait
        reached ``until``, or the run no longer waits on them (``dropped``: cancelled)."""
        assert job.task is not None
        task, beat = job.task, self.deps.heartbeat_interval
        while not task.done():
            left = seconds_until(parked.until)
            if left <= 0:
                return "limit"
            await asyncio.wait({task}, timeout=min(beat, left))
            if not task.done() and not await self.deps.stored(self._beat, run_id, parked.handle):
                return "dropped"
        # (cancelled: this process stopped following the cells, which go on in their kernel)
        return "dropped" if task.cancelled() else "ended"

    def _result_of(self, job: CellsJob) -> Answer:
        """The answer of a parked call whose cells ended: their result (the handle is
        forgotten), as ``notebook.wait`` would have given it."""
        result = self.executions.collect(job)
        redact = self.deps.redactor
        outcome = ExecutionOutcome(
            redact.redact_text(result.output), result.ok, redact.redact_json(result.data or {})
        )
        return lambda _r, _p: outcome

    def _beat(self, run_id: str, handle: str) -> bool:
        """The follower's heartbeat on the parked run; False once it no longer waits on
        ``handle`` with this process following (store thread)."""
        store = self.deps.store
        run = store.get_run(run_id)
        parked = _parked_on(run)
        if parked is None or parked.handle != handle or parked.outcome is not None:
            return False
        if parked.follower != self.deps.owner:
            return False
        store.update_run_if(run.id, run.version, heartbeat_at=utc_now())  # (lost: next beat)
        return True

    async def _resume(self, run_id: str, parked: ParkedExecution, answer: Answer) -> None:
        if await self.deps.stored(self._answer, run_id, parked.handle, answer):
            await self.manager.resume(run_id)  # (once the attempt that parked it ended)

    # --- resuming (store thread) --------------------------------------------------------------

    def _answer(self, run_id: str, handle: str, answer: Answer) -> bool:
        """Write the call's answer into the parked run (the first CAS), then queue it; whether
        this call did (store thread)."""
        store = self.deps.store
        for _ in range(5):  # a heartbeat may move the version between the read and the CAS
            run = store.get_run(run_id)
            parked = _parked_on(run)
            if parked is None or parked.handle != handle or parked.outcome is not None:
                return False
            state = run.loop_state
            assert state is not None
            outcome = answer(run, parked)
            done = replace(parked, outcome=outcome, follower=None)
            if store.update_run_if(
                run.id,
                run.version,
                loop_state=replace(state, parked_on=done),
                heartbeat_at=utc_now(),
            ):
                return self._queue(run_id)
        return False

    def _queue(self, run_id: str) -> bool:
        """Queue a parked run whose answer is written (the second CAS), due now (store
        thread)."""
        store = self.deps.store
        run = store.get_run(run_id)
        parked = _parked_on(run)
        if parked is None or parked.outcome is None:
            return False
        self.manager.emitter_for(run).emit(ev.RunStatusEvent(status="queued"))
        run = store.get_run(run_id)
        return store.update_run_if(run.id, run.version, status="queued", next_attempt_at=utc_now())

    def _gone(self, run: Run, parked: ParkedExecution) -> ExecutionOutcome:
        """What a run parked on cells nobody follows any more is told: the kernel is gone
        with the process that followed them, and what the ledger knows of the cells."""
        rows = []
        if parked.path and parked.execution_ids:
            wanted = set(parked.execution_ids)
            rows = [e for e in self.deps.store.list_executions(parked.path) if e.id in wanted]
        lines = [
            f"The cells of execution {parked.handle} in {parked.path or 'the notebook'} are "
            "no longer followed: the process that ran them stopped (a server restart or "
            "shutdown), and the notebook's kernel is gone with it (a kernel started by a "
            "Jupyter server or by agi does not outlive that process). What the cells computed "
            "in that kernel is lost; run them again if it is needed.",
        ]
        for row in rows:
            if row.status == "running":
                lines.append(
                    f"cell {row.cell_id}: started {row.started_at}, never ended (no output "
                    "recorded)"
                )
            else:
                summary = (row.summary or "(no output)").replace("\n", "\n  ")
                lines.append(
                    f"cell {row.cell_id}: {row.status} (execution {row.execution_count}), "
                    f"ended {row.ended_at}; its output:\n  {summary}"
                )
        if not rows:
            lines.append("The ledger has no record of the cells.")
        data = {
            "handle": parked.handle,
            "path": parked.path,
            "kernel": "gone",
            "executions": [{"id": r.id, "cell_id": r.cell_id, "status": r.status} for r in rows],
        }
        return ExecutionOutcome("\n".join(lines), False, data)

    # --- the tick's share ---------------------------------------------------------------------

    async def tick(self, limit: int) -> int:
        """Queue the parked runs nobody follows (see the module's docstring), due now for the
        tick's claims; how many."""
        followed = set(self._following) | self._parking
        return len(await self.deps.stored(self._orphans, limit, followed))

    def _orphans(self, limit: int, followed: set[str]) -> list[str]:
        """Resume the parked runs nobody follows; their ids (store thread)."""
        store, stale_after = self.deps.store, self.deps.stale_after
        resumed: list[str] = []
        for run in store.list_runs(statuses=[PARKED], limit=max(limit, 50)).items:
            if run.id in followed or len(resumed) >= limit:
                continue
            parked = _parked_on(run)
            if parked is None:
                continue
            if parked.outcome is not None:  # answered by a resumer that stopped before queueing
                if is_stale(run, stale_after) and self._queue(run.id):
                    resumed.append(run.id)
                continue
            unfollowed = (
                parked.follower is None
                or parked.follower == self.deps.owner  # (its follower here ended)
                or is_stale(run, stale_after)
                or seconds_until(parked.until) + stale_after <= 0
            )
            if unfollowed and self._answer(run.id, parked.handle, self._gone):
                resumed.append(run.id)
        return resumed

    async def aclose(self) -> None:
        """Stop following (this process stops): each run parked here is let go (``follower``
        None), so the next tick anywhere resumes it at once, told what became of its cells."""
        self._closing = True
        tasks = list(self._following.items())
        for _run_id, task in tasks:
            task.cancel()
        for run_id, task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            try:
                await self.deps.stored(self._let_go, run_id)
            except Exception as e:  # a store that went away: the stale heartbeat tells it too
                log.warning("could not let go of parked run %s: %s", run_id, e)

    def _let_go(self, run_id: str) -> None:
        store = self.deps.store
        for _ in range(5):
            run = store.get_run(run_id)
            parked = _parked_on(run)
            if parked is None or parked.outcome is not None or parked.follower != self.deps.owner:
                return
            state = run.loop_state
            assert state is not None
            free = replace(state, parked_on=replace(parked, follower=None))
            if store.update_run_if(run.id, run.version, loop_state=free):
                return


def _parked_on(run: Run) -> ParkedExecution | None:
    """The cells a run parked in ``waiting_execution`` waits for (None: it does not wait)."""
    if run.status != PARKED or run.loop_state is None:
        return None
    return run.loop_state.parked_on


def _still_running(job: CellsJob, waited: str, _run: Run, _parked: object) -> ExecutionOutcome:
    pending = job.pending(float(waited))
    text = (
        f"The run waited {waited} s (notebook_park_limit) and resumed: the cells are still "
        "running (not interrupted).\n" + pending.output
    )
    return ExecutionOutcome(text, True, pending.data or {})
