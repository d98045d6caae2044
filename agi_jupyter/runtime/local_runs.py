"""The runs this process executes: their tasks, the fence and emitter of the attempt holding
each, and why a task is being cancelled when that is not a cancel of the run.

``RunManager`` (``runtime.runs``) drives the runs it registers here; ``RunStops``
(``runtime.run_stops``) cancels them through it; both make their emitters here, so that an
emitter whose write finds its run taken over stops that run's task (``lost``).

A task is cancelled for one of three reasons: the run was cancelled (no stop recorded: the
attempt ends the run ``cancelled``), this process is stopping (``release``: the run goes back
to the queue) or another process took the run over (``lost``: nothing more is written).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Literal

from agi_jupyter.records import Run, RunFence
from agi_jupyter.runtime.emitter import RunEmitter

if TYPE_CHECKING:
    from agi_jupyter.runtime.deps import RuntimeDeps

Stop = Literal["release", "lost"]

# A resumed attempt numbers its events this far past the last stored one: live events of the
# attempt before it that were never stored (deltas not flushed yet when its process stalled or
# died) may still have reached followers, which would take new events with those seqs for
# duplicates.
RESUME_SEQ_GAP = 1000

CANCEL_WAIT = 30.0  # how long a cancel waits for the run's task to end


class LocalRuns:
    """The runs executing in this process (all methods but ``emitter`` run on the loop)."""

    def __init__(self, deps: RuntimeDeps) -> None:
        self.deps = deps
        self._tasks: dict[str, asyncio.Task[Run]] = {}
        self._stops: dict[str, Stop] = {}  # why a run's task is being cancelled, if not a cancel
        self._fences: dict[str, RunFence] = {}  # the runs an attempt holds here, by id
        self._emitters: dict[str, RunEmitter] = {}

    # --- tasks -------------------------------------------------------------------------------

    def task(self, run_id: str) -> asyncio.Task[Run] | None:
        return self._tasks.get(run_id)

    def add(self, run_id: str, task: asyncio.Task[Run]) -> None:
        """``task`` drives the run now; forgotten when it ends (unless replaced meanwhile)."""
        self._tasks[run_id] = task

        def forget(done: asyncio.Task[Run]) -> None:
            if self._tasks.get(run_id) is done:
                del self._tasks[run_id]

        task.add_done_callback(forget)

    def is_local(self, run_id: str) -> bool:
        return run_id in self._tasks

    def ids(self) -> list[str]:
        return list(self._tasks)

    def __bool__(self) -> bool:
        return bool(self._tasks)

    # --- why a task stops ----------------------------------------------------------------------

    def stop(self, run_id: str) -> Stop | None:
        """Why the run's task is being cancelled (None: a cancel of the run, or not at all)."""
        return self._stops.get(run_id)

    def stopping(self, run_id: str) -> bool:
        return run_id in self._stops

    def stopped(self, run_id: str) -> None:
        """The run's task is done with its stop."""
        self._stops.pop(run_id, None)

    # --- the attempts holding their runs -------------------------------------------------------

    def hold(self, fence: RunFence, emitter: RunEmitter) -> None:
        self._fences[fence.run_id], self._emitters[fence.run_id] = fence, emitter

    def drop(self, run_id: str) -> None:
        self._fences.pop(run_id, None)
        self._emitters.pop(run_id, None)

    def emitter(
        self, run: Run, fence: RunFence | None = None, *, on_loop: bool = False
    ) -> RunEmitter:
        """An emitter continuing the run's stored events. ``fence``: the owner's (its writes
        are fenced, and one that finds the run taken over stops the run's task here);
        ``on_loop``: the emitter of an attempt on the runtime loop, writing through the store
        thread; else it writes inline (endings made from any thread)."""
        deps = self.deps
        events = deps.store.list_run_events(run.id)
        last = events[-1].seq if events else 0
        if fence is not None and run.attempt > 1:  # (the claim counted this attempt)
            last += RESUME_SEQ_GAP
        return RunEmitter(
            deps.store,
            deps.bus,
            run_id=run.id,
            session_id=run.session_id,
            persist_deltas=deps.config.persist_deltas,
            last_seq=last,
            redactor=deps.redactor,
            fence=fence,
            on_lost=(lambda: self.lost(fence)) if fence is not None else None,
            writer=deps.store_thread if on_loop else None,
        )

    # --- stopping tasks ------------------------------------------------------------------------

    def lost(self, fence: RunFence | None) -> None:
        """Another process took the run over: stop its task at once, writing nothing more."""
        if fence is None or self._fences.get(fence.run_id) != fence:
            return
        self._stops[fence.run_id] = "lost"
        emitter = self._emitters.get(fence.run_id)
        if emitter is not None:
            emitter.lost = True
        task = self._tasks.get(fence.run_id)
        if task is not None and task is not asyncio.current_task():
            task.cancel()  # (inside the task, the ``RunLost`` being raised stops it)

    def cancel_asked(self, fence: RunFence) -> None:
        """The run's cancel was asked for by another process: its task ends it here."""
        if self._fences.get(fence.run_id) != fence or fence.run_id in self._stops:
            return
        task = self._tasks.get(fence.run_id)
        if task is not None:
            task.cancel()

    async def cancel(self, run_id: str) -> bool:
        """Cancel the run's task, if it has one here, and wait (``CANCEL_WAIT`` at most) for it
        to end the run; whether it had one. A cancel wins over a release."""
        task = self._tasks.get(run_id)
        if task is None:
            return False
        if self._stops.get(run_id) == "release":
            del self._stops[run_id]
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({task}, timeout=CANCEL_WAIT)
        return True

    async def release_all(self, grace: float = 10.0) -> None:
        """Stop every task with ``release`` (its run goes back to the queue: queued, due now,
        ``loop_state`` kept, for the next process or any tick to resume), waiting ``grace`` at
        most for them to end."""
        tasks = list(self._tasks.items())
        for run_id, task in tasks:
            self._stops.setdefault(run_id, "release")
            task.cancel()
        if tasks:
            await asyncio.wait([task for _, task in tasks], timeout=grace)

    async def close(self) -> None:
        """Cancel the tasks still running (after ``release_all``) and wait for them."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
