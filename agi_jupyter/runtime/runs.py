"""Durable runs (DESIGN.md section 7): claim, execute, retry, cancel, release, recover, tick.

    queued -> running -> succeeded | failed | cancelled
    running --(retryable provider error, attempts left)--> queued (next_attempt_at = backoff)
    running --(this process stops gracefully: release)--> queued (next_attempt_at = now)
    running --(owner silent for stale_after: a tick takes it over)--> queued
    running --(a tool call waits for a person: no owner)--> waiting_approval
    running --(notebook.wait parks on cells still running: no owner)--> waiting_execution
    waiting_approval --(every waiting call decided: store.decide_tool_calls)--> queued
    waiting_execution --(the cells ended, or nobody follows them: runtime.parking)--> queued

A run is executed by whoever wins its claim (``store.claim_run`` with the version it read, or a
tick's ``store.claim_due_runs``), which makes that process the run's owner and gives it a fence
(run id, owner, epoch). Every write the owner makes carries the fence (see ``emitter.fence``),
so once another process took the run over, the old owner's next write fails with ``RunLost``
and it stops without writing anything more. The owner's heartbeat runs on its own thread
(``lease.LeaseKeeper``), so a busy runtime loop cannot make a live owner look dead. A run's
prompt waits in ``loop_state`` while the run is queued and becomes the session's user message
when the run starts, so messages are stored in conversation order even when runs of a session
queue up behind each other.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agi_jupyter import events as ev
from agi_jupyter.aio import complete, regardless
from agi_jupyter.errors import AgiError, ErrorCode, RunLost
from agi_jupyter.kinds import SdkName
from agi_jupyter.notebook.detached import Executions
from agi_jupyter.records import Message, Run, RunFence, Session, session_for_run
from agi_jupyter.runtime import endings
from agi_jupyter.runtime.agent_loop import AgentLoop, AttemptInputs, AttemptResult, message_to_dict
from agi_jupyter.runtime.emitter import RunEmitter
from agi_jupyter.runtime.endings import cancel_error, run_to_dict
from agi_jupyter.runtime.lease import LeaseKeeper
from agi_jupyter.runtime.local_runs import LocalRuns
from agi_jupyter.runtime.parking import ParkedRuns
from agi_jupyter.runtime.run_stops import RunStops, is_stale, iso_in, seconds_until

if TYPE_CHECKING:
    from agi_jupyter.runtime.deps import RuntimeDeps

log = logging.getLogger(__name__)
# Runs with no owner that hold their session's later runs back (conversation order).
WAITING = ("waiting_approval", "waiting_execution")

__all__ = ["RunManager", "TickResult", "run_to_dict"]


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


class RunExecutor(Protocol):
    """Executes the runs of one ``Run.type`` other than ``agent`` (e.g. ``deep_research``).

    ``start`` is called on the runtime loop with the claimed, ``running`` run (its user message
    already stored); it either ends the run through ``RunManager.finish`` or parks it in a
    waiting status (``waiting_webhook``) and returns it. Raising an ``AgiError`` goes through
    the usual retry policy. ``on_cancelled`` is told about runs of its type that were cancelled.
    It makes no store call on the loop: ``RuntimeDeps.stored`` for a call, ``emitter.section``
    for code that calls the store and emits (its ending).
    """

    async def start(self, run: Run, emitter: RunEmitter) -> Run: ...
    async def on_cancelled(self, run: Run) -> None: ...
    async def aclose(self) -> None: ...


class AttemptRunner(Protocol):
    """Runs one attempt of an ``agent`` run: ``AgentLoop`` itself, or the SDK dispatch that
    picks the session's adapter (``sdk.dispatch.SdkDispatch``, wired by ``app.Agi``)."""

    async def run_attempt(
        self,
        run: Run,
        emitter: RunEmitter,
        session: Session | None = None,
        inputs: AttemptInputs | None = None,
    ) -> AttemptResult: ...


@dataclass
class _Claim:
    """A run this process claimed, set up in the claim's trip to the store thread."""

    fence: RunFence
    run: Run
    emitter: RunEmitter
    begun: _Begun | Exception  # ``_begin``'s result or error


@dataclass
class _Begun:
    """What an attempt's first trip to the store thread read and wrote (``_begin``)."""

    session: Session
    message: Message | None  # the user message made of the queued prompt, if any
    run: Run
    inputs: AttemptInputs | None  # the native loop's first reads, made in the same trip


class RunManager:
    """Executes runs on the runtime loop: claims them, drives their attempts and ends them, and
    the tick that finds due and stale runs. All coroutines here run on that loop. The runs
    executing here: ``local`` (``LocalRuns``); cancelling runs and taking over stale ones:
    ``stops`` (``RunStops``)."""

    def __init__(self, deps: RuntimeDeps, executions: Executions | None = None) -> None:
        self.deps = deps
        self.agent_loop = AgentLoop(deps)
        self.agent_runner: AttemptRunner = self.agent_loop
        self.executors: dict[str, RunExecutor] = {}  # by run type; ``agent`` runs: agent_runner
        self.leases = LeaseKeeper(deps.open_store, deps.heartbeat_interval, shared=deps.store)
        self.local = LocalRuns(deps)
        self.stops = RunStops(deps, self.local, self.executors)
        self._session_locks: dict[str, asyncio.Lock] = {}
        # Runs parked on cells still running (``notebook.wait {park: true}``), and their jobs.
        self.parking = ParkedRuns(deps, self, executions or Executions())

    # --- driving a run -----------------------------------------------------------------------

    def is_local(self, run_id: str) -> bool:
        return self.local.is_local(run_id)

    def has_local_runs(self) -> bool:
        """Whether any run is executing in this process."""
        return bool(self.local)

    def spawn(
        self,
        run_id: str,
        *,
        wait_for_session: bool = True,
        claimed: RunFence | None = None,
        created: Run | None = None,
    ) -> asyncio.Task[Run]:
        """Start driving a run in this process (on the loop); returns the existing task if any.
        ``claimed``: the run was claimed already (a tick), with this fence. ``created``: the
        run as its creator just stored it (``Agi.submit``): the first read is skipped (a trip
        to the store thread before the first token; the claim's trip reads it again).

        A tick's claim is made on the store thread, so a task started here meanwhile (a
        ``submit``) may find the run claimed and be about to return: the claimed run is then
        driven by a task that starts once that one ended, never dropped."""
        task = self.local.task(run_id)
        if task is not None and claimed is None and not task.done():
            return task
        coro = self._drive(run_id, wait_for_session, claimed, created)
        if task is not None:
            coro = self._after(task, coro)
        task = asyncio.get_running_loop().create_task(coro)
        self.local.add(run_id, task)
        return task

    async def resume(self, run_id: str) -> None:
        """Drive a run a decision queued again, once the task of the attempt that left it
        waiting for the approval has ended: that attempt's ending may still be on the store
        thread, and ``spawn`` would hand back its task, which ends without driving the run."""
        previous = self.local.task(run_id)
        if previous is not None:
            await asyncio.wait({previous})
        self.spawn(run_id)

    @staticmethod
    async def _after(previous: asyncio.Task[Run], coro: Coroutine[Any, Any, Run]) -> Run:
        """``coro`` once ``previous`` ended; a cancellation that comes meanwhile is delivered
        to it (the claimed run's attempt then ends the run), not lost with the claim."""
        await complete(asyncio.wait({previous}))
        return await coro

    async def _drive(
        self,
        run_id: str,
        wait_for_session: bool,
        claimed: RunFence | None,
        created: Run | None = None,
    ) -> Run:
        try:
            return await self._drive_until_done(run_id, wait_for_session, claimed, created)
        finally:
            self.local.stopped(run_id)

    async def _drive_until_done(
        self,
        run_id: str,
        wait_for_session: bool,
        claimed: RunFence | None,
        created: Run | None = None,
    ) -> Run:
        store, stored = self.deps.store, self.deps.stored
        if claimed is not None:
            created = None  # (the claimed attempt may have changed it)
            run = await self._execute_claimed(claimed)
            if run.status != "queued" or self.local.stopping(run_id):
                return run
        while True:
            # A run just created is queued: its claim (``_claim_if_free``) reads it again.
            run = created if created is not None else await stored(store.get_run, run_id)
            created = None
            if run.status != "queued":
                return run
            try:
                await asyncio.sleep(seconds_until(run.next_attempt_at))
                lock = self._session_locks.setdefault(run.session_id, asyncio.Lock())
                async with lock:
                    # One trip: whether the session is free, the claim, the attempt's setup
                    # and its first writes. (A claim made is never dropped: see aio.complete.)
                    claim = await complete(stored(self._claim_if_free, run))
                    while claim == "busy":
                        if not wait_for_session:
                            return await stored(store.get_run, run_id)
                        await asyncio.sleep(0.25)
                        claim = await complete(stored(self._claim_if_free, run))
                    if claim is None:
                        return await stored(store.get_run, run_id)
                    run = await self._execute_claimed(claim.fence, claim)
            except asyncio.CancelledError:
                if self.local.stopping(run_id):  # released before it was claimed: stays queued
                    return await stored(store.get_run, run_id)
                return await stored(self.stops.cancel_unclaimed, run_id)
            if run.status != "queued" or self.local.stopping(run_id):
                return run

    def _claim_if_free(self, run: Run) -> _Claim | Literal["busy"] | None:
        """Claim the run if its session is free (``"busy"`` if not) and the run still queued
        (None if not), and set its attempt up: one trip to the store thread."""
        if self._session_busy_elsewhere(run):
            return "busy"
        current = self.deps.store.get_run(run.id)
        if current.status != "queued":
            return None
        fence = self.deps.store.claim_run(current.id, current.version, owner=self.deps.owner)
        if fence is None:
            return None
        return self._setup(fence)

    def _session_busy_elsewhere(self, run: Run) -> bool:
        """Whether another process is running a run of this session, or an earlier run of it
        waits for an approval (store thread)."""
        found = self.deps.store.list_runs(
            session_id=run.session_id, statuses=["running", *WAITING], limit=5
        )
        return any(
            r.id != run.id
            and (
                (
                    r.status == "running"
                    and r.owner != self.deps.owner
                    and not is_stale(r, self.deps.stale_after)
                )
                or (r.status in WAITING and r.created_at < run.created_at)
            )
            for r in found.items
        )

    async def _execute_claimed(self, fence: RunFence, claim: _Claim | None = None) -> Run:
        """Execute one attempt of a run this process just claimed with ``fence``; ``claim``:
        the attempt's setup when it was made in the claim's trip."""
        run_id = fence.run_id
        # The run is ours from the claim on: a cancellation that comes while its emitter is
        # made is delivered again once the attempt can end the run (``_attempt``).
        if claim is None:
            claim = await complete(self.deps.stored(self._setup, fence))
        run, emitter = claim.run, claim.emitter
        emitter.publish_deferred()  # the events written in the claim's trip
        self.local.hold(fence, emitter)
        loop = asyncio.get_running_loop()

        def on_lost() -> None:  # (these two are called on the lease keeper's thread)
            loop.call_soon_threadsafe(self.local.lost, fence)

        def on_cancel() -> None:
            loop.call_soon_threadsafe(self.local.cancel_asked, fence)

        self.leases.hold(fence, on_lost=on_lost, on_cancel=on_cancel)
        try:
            return await self._attempt(run, emitter, claim.begun)
        except RunLost:
            emitter.mark_lost()
            log.warning("run %s was taken over by another process; stopped here", run_id)
            return await regardless(self.deps.stored(self.deps.store.get_run, run_id))
        finally:
            self.leases.drop(fence)
            self.local.drop(run_id)

    def _setup(self, fence: RunFence) -> _Claim:
        """The claimed run, its emitter, and the attempt's first writes (``_begin``), whose
        error is raised in ``_attempt`` (store thread)."""
        run = self.deps.store.get_run(fence.run_id)
        emitter = self.local.emitter(run, fence, on_loop=True)
        # The attempt's first events are written here too, and published once the trip is
        # back on the loop (``_execute_claimed``): no trip of their own, whose write would
        # compete with the model request for the GIL. (A write that finds the run taken over
        # marks the emitter lost; ``on_lost`` then finds no fence of this run held yet.)
        emitter.defer()
        begun: _Begun | Exception
        try:
            begun = self._begin(run, fence)
            self._announce(emitter, begun)
        except Exception as e:  # (an AgiError ends the run; RunLost stops it)
            begun = e
        return _Claim(fence, run, emitter, begun)

    def _announce(self, emitter: RunEmitter, begun: _Begun) -> None:
        """The attempt's first events, stored in one transaction after its user message: the
        run's metadata (first attempt), ``running``, the user message, and for a run of the
        native loop whose first model call's inputs were read here its ``iteration``
        (``AgentLoop.first_iteration``) (store thread)."""
        run, session = begun.run, begun.session
        with emitter.together():
            if emitter.seq == 0:
                emitter.emit(
                    ev.RunMeta(
                        session_id=run.session_id,
                        agent=run.agent or session.agent,
                        provider=run.provider or "",
                        model=run.model or "",
                        attempt=run.attempt,
                    )
                )
            emitter.emit(ev.RunStatusEvent(status="running"))
            if begun.message is not None:
                emitter.emit(ev.MessageCompleted(message=message_to_dict(begun.message)))
            first = (
                None if begun.inputs is None else self.agent_loop.first_iteration(run, begun.inputs)
            )
            if first is not None:
                emitter.emit(first)

    async def _attempt(self, run: Run, emitter: RunEmitter, begun: _Begun | Exception) -> Run:
        """One attempt of a claimed run (the claim counted it in ``run.attempt``); ``begun``:
        what ``_begin`` did in the claim's trip (or the error it raised)."""
        try:
            # The session (for the run's metadata and the attempt), the queued prompt turned
            # into the session's user message and the attempt's first events, read and written
            # in the claim's trip (``_begin``, ``_announce``).
            if isinstance(begun, Exception):
                raise begun
            session, run = begun.session, begun.run
            executor = self.executors.get(run.type)
            if executor is not None:
                return await executor.start(run, emitter)
            result = await self.agent_runner.run_attempt(run, emitter, session, begun.inputs)
        except asyncio.CancelledError:
            stop = self.local.stop(run.id)
            if stop == "lost":
                raise RunLost(f"run {run.id} was taken over") from None
            if stop == "release":
                return await regardless(
                    emitter.section(endings.release, self.deps, run.id, emitter)
                )
            return await regardless(
                emitter.section(self._finish, run.id, emitter, "cancelled", cancel_error())
            )
        except endings.AwaitingBudget as e:
            return await regardless(
                emitter.section(endings.await_budget, self.deps, run.id, emitter, e.state)
            )
        except endings.AwaitingExecution as e:
            parked = self.parking.parked(run.id, e.tool_call_id, e.name, e.handle)
            try:
                run = await regardless(
                    emitter.section(endings.await_execution, self.deps, run.id, emitter, parked)
                )
            finally:
                self.parking.follow(run)  # (not parked: nothing to follow)
            return run
        except endings.AwaitingApproval:
            return await regardless(
                emitter.section(endings.await_approval, self.deps, run.id, emitter)
            )
        except RunLost:
            raise
        except AgiError as e:
            return await regardless(emitter.section(self._after_error, run.id, emitter, e))
        except Exception as e:
            log.exception("run %s failed with an unexpected error", run.id)
            error = {"code": ErrorCode.INTERNAL_ERROR, "message": f"{type(e).__name__}: {e}"}
            return await regardless(emitter.section(self._finish, run.id, emitter, "failed", error))
        return await regardless(emitter.section(self._succeed, run.id, emitter, result))

    def _begin(self, run: Run, fence: RunFence | None) -> _Begun:
        """The run's session, the queued prompt turned into the session's user message (once
        per run), and for a run of our own loop its first reads (store thread)."""
        store = self.deps.store
        session = store.get_session(run.session_id)
        message = None
        state = run.loop_state
        if state is not None and state.input and not run.input_message_id:
            message = store.add_message(
                run.session_id, "user", list(state.input), run_id=run.id, fence=fence
            )
            run = store.update_run(
                run.id,
                input_message_id=message.id,
                loop_state=replace(state, input=()),
                fence=fence,
            )
        inputs = None
        effective = session_for_run(session, run)
        if run.type not in self.executors and effective.sdk == SdkName.NATIVE:
            # Read now, not in a trip of their own once the attempt starts: nothing this
            # attempt does before its first model call writes what they read.
            inputs = self.agent_loop.attempt_inputs(run, effective)
        return _Begun(session, message, run, inputs)

    # --- endings -----------------------------------------------------------------------------

    def _succeed(self, run_id: str, emitter: RunEmitter, result: AttemptResult) -> Run:
        error = None
        if result.max_iterations_reached:
            error = {
                "code": ErrorCode.MAX_ITERATIONS_REACHED,
                "message": f"stopped after {result.iterations} iterations with tool calls pending",
            }
        if self.deps.store.get_run(run_id).status == "cancelled":  # asked for meanwhile
            return self._finish(run_id, emitter, "cancelled", cancel_error())
        return self._finish(run_id, emitter, "succeeded", error)

    def _after_error(self, run_id: str, emitter: RunEmitter, error: AgiError) -> Run:
        run = self.deps.store.get_run(run_id)
        if run.status == "cancelled":  # its cancel was asked for meanwhile
            return self._finish(run_id, emitter, "cancelled", cancel_error())
        if error.retryable and run.attempt < run.max_attempts:
            backoff = self.deps.config.retry_backoff
            delay = backoff[min(run.attempt, len(backoff)) - 1] if backoff else 0.0
            return endings.requeue(self.deps, run_id, emitter, iso_in(delay), error.to_dict())
        return self._finish(run_id, emitter, "failed", error.to_dict())

    def emitter_for(self, run: Run) -> RunEmitter:
        """An emitter continuing the run's persisted event sequence (for executors)."""
        return self.local.emitter(run)

    def finish(
        self, run_id: str, emitter: RunEmitter, status: str, error: dict[str, Any] | None
    ) -> Run:
        """End a run: ``error`` event (if any), status, ``run.final`` (for executors)."""
        return self._finish(run_id, emitter, status, error)

    def _finish(
        self, run_id: str, emitter: RunEmitter, status: str, error: dict[str, Any] | None
    ) -> Run:
        return endings.finish(self.deps, run_id, emitter, status, error)

    # --- stopping runs, the tick -----------------------------------------------------------------

    async def cancel(self, run_id: str) -> Run:
        """Cancel a run (``RunStops.cancel``); ``RunTerminal`` if it had already ended."""
        return await self.stops.cancel(run_id)

    def request_cancel(self, run_id: str) -> Run:
        """Cancel a run from any thread, without the loop (``RunStops.request_cancel``)."""
        return self.stops.request_cancel(run_id)

    async def release_all(self, grace: float = 10.0) -> None:
        """Hand every run this process drives back to the queue (a graceful stop): running
        ones are released (``queued``, due now, ``loop_state`` kept) for the next process or
        any tick to resume; queued ones stay queued."""
        await self.local.release_all(grace)

    async def tick(self, *, max_runs: int = 10) -> TickResult:
        """Recover stale runs, then claim due queued runs and execute them (at most
        ``max_runs``), and wait for them.

        Claims are atomic (``store.claim_due_runs``): concurrent tickers in several processes
        take disjoint runs, the oldest due run of each session whose session is not busy; when
        a run ends, the next run of its session (if due) is claimed in turn."""
        result = TickResult()
        stored = self.deps.stored
        result.recovered, result.failed_stale = await stored(self.stops.recover_stale, max_runs)
        # Runs parked on cells nobody follows any more: queued, told what became of them.
        result.recovered += await self.parking.tick(max_runs)
        due = await stored(self.deps.store.due_runs, limit=max_runs)
        result.skipped = sum(1 for run in due if self.is_local(run.id))
        started = 0
        running: set[asyncio.Task[Run]] = set()
        while True:
            exclude = self.local.ids()  # (read here, on the loop that changes it)
            for run in await stored(self._claim_due, max_runs - started, exclude):
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

    async def aclose(self) -> None:
        """Release the runs still executing here (see ``release_all``) and stop."""
        await self.local.release_all()
        await self.parking.aclose()  # (after: an attempt that parked meanwhile is followed)
        await self.local.close()
        for executor in self.executors.values():
            await executor.aclose()
        self.leases.close()
