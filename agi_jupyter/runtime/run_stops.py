"""Ending runs from outside their attempt: cancel a run (here or in the store), and take over
the runs whose owner went silent (back to the queue, or failed with no attempts left).

A run that executes in this process is stopped through its task (``LocalRuns.cancel``); any
other is taken over in the store (a compare-and-set on its version, which bumps its epoch so its
old owner's fence stops holding) and ended here with an inline emitter. ``RunManager``
(``runtime.runs``) holds one ``RunStops`` and hands it its ``LocalRuns``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from agi_jupyter.errors import ErrorCode, RunTerminal
from agi_jupyter.records import Run, RunFence
from agi_jupyter.runtime import endings
from agi_jupyter.runtime.endings import cancel_error

if TYPE_CHECKING:
    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.runtime.local_runs import LocalRuns
    from agi_jupyter.runtime.runs import RunExecutor


def iso_in(seconds: float) -> str:
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def seconds_until(iso: str | None) -> float:
    """Seconds from now to the moment ``iso`` (0: none, or past)."""
    if not iso:
        return 0.0
    moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def is_stale(run: Run, stale_after: float) -> bool:
    """Whether the run's owner has not heartbeated within ``stale_after`` seconds."""
    if run.heartbeat_at is None:
        return True
    beat = datetime.fromisoformat(run.heartbeat_at.replace("Z", "+00:00"))
    return beat < datetime.now(UTC) - timedelta(seconds=stale_after)


class RunStops:
    """Cancels runs and takes over the stale ones. ``executors``: the run manager's, by run
    type (told about the runs of their type that were cancelled)."""

    def __init__(
        self, deps: RuntimeDeps, local: LocalRuns, executors: dict[str, RunExecutor]
    ) -> None:
        self.deps = deps
        self.local = local
        self.executors = executors

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
        if await self.local.cancel(run_id):
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
        if run.status == "running" and not is_stale(run, self.deps.stale_after):
            if not self.deps.store.update_run_if(run.id, run.version, status="cancelled"):
                return self.request_cancel(run_id)  # it changed under us: look again
            return self.deps.store.get_run(run_id)
        fence = self._take_over(run, status="cancelled")
        if fence is None:
            return self.request_cancel(run_id)
        return self._end(run, fence, "cancelled", cancel_error())

    def cancel_unclaimed(self, run_id: str) -> Run:
        """End a queued run whose task here was cancelled before it claimed it (store thread)."""
        run = self.deps.store.get_run(run_id)
        if run.is_terminal or run.status != "queued":
            return run
        fence = self._take_over(run, status="cancelled")
        if fence is None:
            return self.cancel_unclaimed(run_id)
        return self._end(run, fence, "cancelled", cancel_error())

    def recover_stale(self, limit: int) -> tuple[int, int]:
        """Runs whose owner went silent: back to the queue (taken over: the old owner's fence
        stops holding), or failed when no attempts are left. Returns (recovered, failed)
        (store thread)."""
        recovered = failed = 0
        cutoff = iso_in(-self.deps.stale_after)
        for run in self.deps.store.stale_runs(heartbeat_before=cutoff, limit=limit):
            if self.local.is_local(run.id):
                continue
            if run.attempt >= run.max_attempts:
                fence = self._take_over(run)
                if fence is not None:
                    error = {
                        "code": ErrorCode.RUN_ABANDONED,
                        "message": "the process running this run stopped and no attempts are left",
                    }
                    self._end(run, fence, "failed", error)
                    failed += 1
                continue
            if self.deps.store.update_run_if(
                run.id, run.version, status="queued", owner=None, next_attempt_at=None
            ):
                recovered += 1
        return recovered, failed

    def _take_over(self, run: Run, **changes: Any) -> RunFence | None:
        """Become the owner of a run no live process holds (CAS on its version): the fence to
        end it with, or None when it changed meanwhile."""
        if not self.deps.store.update_run_if(run.id, run.version, owner=self.deps.owner, **changes):
            return None
        return self.deps.store.get_run(run.id).fence

    def _end(self, run: Run, fence: RunFence, status: str, error: dict[str, Any]) -> Run:
        """End a run taken over (``fence``), writing inline."""
        return endings.finish(self.deps, run.id, self.local.emitter(run, fence), status, error)
