"""What other parties do to runs: cancel them, release them at a graceful stop, and the tick
that recovers runs whose owner went silent and claims the due ones.

A part of ``RunManager`` (``runtime.runs``), which composes it: driving a run (claim, attempt,
endings) lives there, stopping and finding runs here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from agi_jupyter.errors import ErrorCode, RunTerminal
from agi_jupyter.records import Run, RunFence

if TYPE_CHECKING:
    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.runtime.emitter import RunEmitter
    from agi_jupyter.runtime.lease import LeaseKeeper
    from agi_jupyter.runtime.runs import RunExecutor

log = logging.getLogger(__name__)

Stop = Literal["release", "lost"]


@dataclass
class TickResult:
    executed: int = 0
    recovered: int = 0
    failed_stale: int = 0
    skipped: int = 0
    webhook_events: int = 0  # webhook deliveries processed (deep research)
    completed_background: int = 0  # parked runs completed by a webhook or a poll

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def iso_in(seconds: float) -> str:
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class RunStops:
    """The cancel, release and tick part of ``RunManager`` (a mixin: ``RunManager`` sets the
    attributes below and defines the methods declared for type checking)."""

    deps: RuntimeDeps
    executors: dict[str, RunExecutor]
    leases: LeaseKeeper
    _tasks: dict[str, asyncio.Task[Run]]
    _stops: dict[str, Stop]

    if TYPE_CHECKING:

        def spawn(
            self,
            run_id: str,
            *,
            wait_for_session: bool = True,
            claimed: RunFence | None = None,
            created: Run | None = None,
        ) -> asyncio.Task[Run]: ...
        def is_local(self, run_id: str) -> bool: ...
        def _is_stale(self, run: Run) -> bool: ...
        def _emitter(
            self, run: Run, fence: RunFence | None = None, *, on_loop: bool = False
        ) -> RunEmitter: ...
        def _finish(
            self, run_id: str, emitter: RunEmitter, status: str, error: dict[str, Any] | None
        ) -> Run: ...

    def _take_over(self, run: Run, **changes: Any) -> RunFence | None:
        """Become the owner of a run no live process holds (CAS on its version): the fence to
        end it with, or None when it changed meanwhile."""
        if not self.deps.store.update_run_if(run.id, run.version, owner=self.deps.owner, **changes):
            return None
        return self.deps.store.get_run(run.id).fence

    def _cancel_unclaimed(self, run_id: str) -> Run:
        run = self.deps.store.get_run(run_id)
        if run.is_terminal or run.status != "queued":
            return run
        fence = self._take_over(run, status="cancelled")
        if fence is None:
            return self._cancel_unclaimed(run_id)
        return self._finish(run_id, self._emitter(run, fence), "cancelled", cancel_error())

    # --- cancel and release --------------------------------------------------------------------

    async def cancel(self, run_id: str) -> Run:
        """Cancel a run: here if we run it, else by taking it over in the store.

        Raises ``RunTerminal`` for a run that had already ended."""
        if (await self.deps.stored(self.deps.store.get_run, run_id)).is_terminal:
            raise RunTerminal(f"run {run_id} has already ended")
        run = await self._cancel(run_id)
        executor = self.executors.get(run.type)
        if executor is not None and run.status == "cancelled":
            await executor.on_cancelled(run)
        return run

    async def _cancel(self, run_id: str) -> Run:
        task = self._tasks.get(run_id)
        if task is not None:
            if self._stops.get(run_id) == "release":
                del self._stops[run_id]  # an explicit cancel wins over a release
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task}, timeout=30)
            run = await self.deps.stored(self.deps.store.get_run, run_id)
            if run.status != "queued":
                return run
            # A task cancelled before its first step never ran a line: the run is still
            # queued, and nobody else will end it.
        return await self.deps.stored(self.request_cancel, run_id)

    def request_cancel(self, run_id: str) -> Run:
        """Cancel a run that this process does not execute, from any thread, without the
        runtime loop: a run with a live owner elsewhere is marked ``cancelled`` and its owner
        ends it at its next heartbeat; any other run is taken over and ended here."""
        run = self.deps.store.get_run(run_id)
        if run.is_terminal:
            return run
        if run.status == "running" and not self._is_stale(run):
            if not self.deps.store.update_run_if(run.id, run.version, status="cancelled"):
                return self.request_cancel(run_id)  # it changed under us: look again
            return self.deps.store.get_run(run_id)
        fence = self._take_over(run, status="cancelled")
        if fence is None:
            return self.request_cancel(run_id)
        return self._finish(run_id, self._emitter(run, fence), "cancelled", cancel_error())

    async def release_all(self, grace: float = 10.0) -> None:
        """Hand every run this process drives back to the queue (a graceful stop): running
        ones are released (``queued``, due now, ``loop_state`` kept) for the next process or
        any tick to resume; queued ones stay queued."""
        tasks = list(self._tasks.items())
        for run_id, task in tasks:
            self._stops.setdefault(run_id, "release")
            task.cancel()
        if tasks:
            await asyncio.wait([task for _, task in tasks], timeout=grace)

    # --- tick ----------------------------------------------------------------------------------

    async def tick(self, *, max_runs: int = 10) -> TickResult:
        """Recover stale runs, then claim due queued runs and execute them (at most
        ``max_runs``), and wait for them.

        Claims are atomic (``store.claim_due_runs``): concurrent tickers in several processes
        take disjoint runs, the oldest due run of each session whose session is not busy; when
        a run ends, the next run of its session (if due) is claimed in turn."""
        result = TickResult()
        await self.deps.stored(self._recover_stale, result, max_runs)
        due = await self.deps.stored(self.deps.store.due_runs, limit=max_runs)
        result.skipped = sum(1 for run in due if self.is_local(run.id))
        started = 0
        running: set[asyncio.Task[Run]] = set()
        while True:
            exclude = list(self._tasks)  # (read here, on the loop that changes it)
            for run in await self.deps.stored(self._claim_due, max_runs - started, exclude):
                started += 1
                running.add(self.spawn(run.id, wait_for_session=False, claimed=run.fence))
            if not running:
                return result
            done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task.cancelled():
                    continue
                if task.exception() is not None:
                    log.error("a run of the tick failed", exc_info=task.exception())
                else:
                    run = task.result()
                    if run.owner == self.deps.owner and run.is_terminal:
                        result.executed += 1

    def _claim_due(self, limit: int, exclude: list[str]) -> list[Run]:
        if limit <= 0:
            return []
        return self.deps.store.claim_due_runs(
            owner=self.deps.owner,
            stale_before=iso_in(-self.deps.stale_after),
            limit=limit,
            exclude=exclude,
        )

    def _recover_stale(self, result: TickResult, limit: int) -> None:
        """Runs whose owner went silent: back to the queue (taken over: the old owner's fence
        stops holding), or failed when no attempts are left."""
        cutoff = iso_in(-self.deps.stale_after)
        for run in self.deps.store.stale_runs(heartbeat_before=cutoff, limit=limit):
            if self.is_local(run.id):
                continue
            if run.attempt >= run.max_attempts:
                fence = self._take_over(run)
                if fence is not None:
                    error = {
                        "code": ErrorCode.RUN_ABANDONED,
                        "message": "the process running this run stopped and no attempts are left",
                    }
                    self._finish(run.id, self._emitter(run, fence), "failed", error)
                    result.failed_stale += 1
                continue
            if self.deps.store.update_run_if(
                run.id, run.version, status="queued", owner=None, next_attempt_at=None
            ):
                result.recovered += 1

    async def aclose(self) -> None:
        """Release the runs still executing here (see ``release_all``) and stop."""
        await self.release_all()
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for executor in self.executors.values():
            await executor.aclose()
        self.leases.close()


def cancel_error() -> dict[str, Any]:
    return {"code": ErrorCode.RUN_CANCELLED, "message": "the run was cancelled"}
