"""Durable runs (DESIGN.md section 7): claim, execute, retry, cancel, recover, tick.

    queued -> running -> succeeded | failed | cancelled
    running --(retryable provider error, attempts left)--> queued (next_attempt_at = backoff)

A run is executed by whoever wins the optimistic claim (``store.claim_run`` with the version it
read), so ticks in several processes never execute a run twice. The owner keeps ``heartbeat_at``
fresh; a tick recovers runs whose owner went silent. A run's prompt waits in ``loop_state`` while
the run is queued and becomes the session's user message when the run starts, so messages are
stored in conversation order even when runs of a session queue up behind each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from agi_jupyter import events as ev
from agi_jupyter.errors import AgiError, RunTerminal
from agi_jupyter.records import Run, part_from_dict, utc_now
from agi_jupyter.runtime.emitter import RunEmitter
from agi_jupyter.runtime.runner import AgentLoop, AttemptResult, message_to_dict

if TYPE_CHECKING:
    from agi_jupyter.runtime.deps import RuntimeDeps

log = logging.getLogger(__name__)


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


def run_to_dict(run: Run) -> dict[str, Any]:
    return asdict(run)


def _iso_in(seconds: float) -> str:
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _seconds_until(iso: str | None) -> float:
    if not iso:
        return 0.0
    moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


class RunExecutor(Protocol):
    """Executes the runs of one ``Run.type`` other than ``agent`` (e.g. ``deep_research``).

    ``start`` is called on the runtime loop with the claimed, ``running`` run (its user message
    already stored); it either ends the run through ``RunManager.finish`` or parks it in a
    waiting status (``waiting_webhook``) and returns it. Raising an ``AgiError`` goes through
    the usual retry policy. ``on_cancelled`` is told about runs of its type that were cancelled.
    """

    async def start(self, run: Run, emitter: RunEmitter) -> Run: ...
    async def on_cancelled(self, run: Run) -> None: ...
    async def aclose(self) -> None: ...


class AttemptRunner(Protocol):
    """Runs one attempt of an ``agent`` run: ``AgentLoop`` itself, or the SDK dispatch that
    picks the session's adapter (``sdk.dispatch.SdkDispatch``, wired by ``app.Agi``)."""

    async def run_attempt(self, run: Run, emitter: RunEmitter) -> AttemptResult: ...


class RunManager:
    """Executes runs on the runtime loop. All coroutines here run on that loop."""

    def __init__(self, deps: RuntimeDeps) -> None:
        self.deps = deps
        self.agent_loop = AgentLoop(deps)
        self.agent_runner: AttemptRunner = self.agent_loop
        self.executors: dict[str, RunExecutor] = {}  # by run type; ``agent`` runs: agent_runner
        self._tasks: dict[str, asyncio.Task[Run]] = {}
        self._session_locks: dict[str, asyncio.Lock] = {}

    # --- driving a run -----------------------------------------------------------------------

    def is_local(self, run_id: str) -> bool:
        return run_id in self._tasks

    def has_local_runs(self) -> bool:
        """Whether any run is executing in this process."""
        return bool(self._tasks)

    def spawn(
        self, run_id: str, *, wait_for_session: bool = True, claimed: bool = False
    ) -> asyncio.Task[Run]:
        """Start driving a run in this process (on the loop); returns the existing task if any.
        ``claimed``: the run was claimed for this process already (``claim_due_runs``)."""
        task = self._tasks.get(run_id)
        if task is None:
            drive = self._drive(run_id, wait_for_session, claimed=claimed)
            task = asyncio.get_running_loop().create_task(drive)
            self._tasks[run_id] = task
            task.add_done_callback(lambda _t: self._tasks.pop(run_id, None))
        return task

    async def _drive(self, run_id: str, wait_for_session: bool, *, claimed: bool = False) -> Run:
        store = self.deps.store
        while True:
            run = store.get_run(run_id)
            if run.status != ("running" if claimed else "queued"):
                return run
            try:
                await asyncio.sleep(0 if claimed else _seconds_until(run.next_attempt_at))
                lock = self._session_locks.setdefault(run.session_id, asyncio.Lock())
                async with lock:
                    if not claimed and not await self._claim(run, wait_for_session):
                        return store.get_run(run_id)
                    claimed = False  # a retry is claimed again
                    run = await self._execute_claimed(run_id)
            except asyncio.CancelledError:
                return self._cancel_unclaimed(run_id)
            if run.status != "queued":
                return run

    async def _claim(self, run: Run, wait_for_session: bool) -> bool:
        """Claim a queued run for this process, once no other process runs its session."""
        if not await self._session_free_elsewhere(run, wait_for_session):
            return False
        run = self.deps.store.get_run(run.id)
        return run.status == "queued" and self.deps.store.claim_run(
            run.id, run.version, owner=self.deps.owner
        )

    async def _session_free_elsewhere(self, run: Run, wait: bool) -> bool:
        """Whether no other process is running a run of this session (waits if ``wait``)."""
        while True:
            busy = [
                r
                for r in self.deps.store.list_runs(
                    session_id=run.session_id, statuses=["running"], limit=5
                ).items
                if r.id != run.id and r.owner != self.deps.owner and not self._is_stale(r)
            ]
            if not busy:
                return True
            if not wait:
                return False
            await asyncio.sleep(0.25)

    def _is_stale(self, run: Run) -> bool:
        """Whether the run's owner has not heartbeated within ``stale_after``."""
        if run.heartbeat_at is None:
            return True
        beat = datetime.fromisoformat(run.heartbeat_at.replace("Z", "+00:00"))
        return beat < datetime.now(UTC) - timedelta(seconds=self.deps.stale_after)

    def _emitter(self, run: Run) -> RunEmitter:
        events = self.deps.store.list_run_events(run.id)
        return RunEmitter(
            self.deps.store,
            self.deps.bus,
            run_id=run.id,
            session_id=run.session_id,
            persist_deltas=self.deps.config.persist_deltas,
            last_seq=events[-1].seq if events else 0,
            redactor=self.deps.redactor,
        )

    async def _execute_claimed(self, run_id: str) -> Run:
        store = self.deps.store
        run = store.get_run(run_id)
        run = store.update_run(run_id, attempt=run.attempt + 1, next_attempt_at=None)
        emitter = self._emitter(run)
        if emitter.seq == 0:
            emitter.emit(
                ev.RunMeta(
                    session_id=run.session_id,
                    agent=run.agent or store.get_session(run.session_id).agent,
                    provider=run.provider or "",
                    model=run.model or "",
                    attempt=run.attempt,
                )
            )
        emitter.emit(ev.RunStatusEvent(status="running"))
        run = self._add_input_message(run, emitter)
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(run_id))
        try:
            executor = self.executors.get(run.type)
            if executor is not None:
                return await executor.start(run, emitter)
            result = await self.agent_runner.run_attempt(run, emitter)
        except asyncio.CancelledError:
            return self._finish(run_id, emitter, "cancelled", _cancel_error())
        except AgiError as e:
            return self._after_error(run_id, emitter, e)
        except Exception as e:
            log.exception("run %s failed with an unexpected error", run_id)
            error = {"code": "INTERNAL_ERROR", "message": f"{type(e).__name__}: {e}"}
            return self._finish(run_id, emitter, "failed", error)
        finally:
            heartbeat.cancel()
        return self._succeed(run_id, emitter, result)

    def _add_input_message(self, run: Run, emitter: RunEmitter) -> Run:
        """Turn the queued prompt into the session's user message (once per run)."""
        if run.input_message_id:
            return run
        state = dict(run.loop_state or {})
        parts = [part_from_dict(p) for p in state.pop("input", [])]
        if not parts:
            return run
        message = self.deps.store.add_message(run.session_id, "user", parts, run_id=run.id)
        emitter.emit(ev.MessageCompleted(message=message_to_dict(message)))
        return self.deps.store.update_run(run.id, input_message_id=message.id, loop_state=state)

    async def _heartbeat(self, run_id: str) -> None:
        """Keep ``heartbeat_at`` fresh; if the run was taken away (cancelled elsewhere), stop it."""
        while True:
            await asyncio.sleep(self.deps.heartbeat_interval)
            if not self.deps.store.heartbeat(run_id, self.deps.owner):
                task = self._tasks.get(run_id)
                if task is not None:
                    task.cancel()
                return

    # --- endings -----------------------------------------------------------------------------

    def _succeed(self, run_id: str, emitter: RunEmitter, result: AttemptResult) -> Run:
        error = None
        if result.max_iterations_reached:
            error = {
                "code": "MAX_ITERATIONS_REACHED",
                "message": f"stopped after {result.iterations} iterations with tool calls pending",
            }
        return self._finish(run_id, emitter, "succeeded", error)

    def _after_error(self, run_id: str, emitter: RunEmitter, error: AgiError) -> Run:
        run = self.deps.store.get_run(run_id)
        if error.retryable and run.attempt < run.max_attempts:
            backoff = self.deps.config.retry_backoff
            delay = backoff[min(run.attempt, len(backoff)) - 1] if backoff else 0.0
            emitter.emit(ev.ErrorEvent(code=error.code, message=error.message, retryable=True))
            run = self.deps.store.update_run(
                run_id,
                status="queued",
                owner=None,
                next_attempt_at=_iso_in(delay),
                error=error.to_dict(),
            )
            emitter.emit(ev.RunStatusEvent(status="queued"))
            return run
        return self._finish(run_id, emitter, "failed", error.to_dict())

    def emitter_for(self, run: Run) -> RunEmitter:
        """An emitter continuing the run's persisted event sequence (for executors)."""
        return self._emitter(run)

    def finish(
        self, run_id: str, emitter: RunEmitter, status: str, error: dict[str, Any] | None
    ) -> Run:
        """End a run: ``error`` event (if any), status, ``run.final`` (for executors)."""
        return self._finish(run_id, emitter, status, error)

    def _finish(
        self, run_id: str, emitter: RunEmitter, status: str, error: dict[str, Any] | None
    ) -> Run:
        if error is not None:
            emitter.emit(
                ev.ErrorEvent(
                    code=str(error.get("code")),
                    message=str(error.get("message")),
                    retryable=False,
                )
            )
        self._settle_tool_calls(run_id)
        run = self.deps.store.update_run(
            run_id, status=status, error=error, completed_at=utc_now(), heartbeat_at=utc_now()
        )
        emitter.emit(ev.RunStatusEvent(status=status))
        emitter.emit(ev.RunFinal(run=run_to_dict(run)))
        return run

    def _settle_tool_calls(self, run_id: str) -> None:
        """No tool call of an ended run stays pending or running."""
        for call in self.deps.store.list_tool_calls(run_id=run_id):
            if call.status in ("pending", "running"):
                status = "skipped" if call.status == "pending" else "failed"
                self.deps.store.update_tool_call(
                    call.id, status=status, is_error=True, finished_at=utc_now()
                )

    def _cancel_unclaimed(self, run_id: str) -> Run:
        run = self.deps.store.get_run(run_id)
        if run.is_terminal:
            return run
        return self._finish(run_id, self._emitter(run), "cancelled", _cancel_error())

    # --- cancel --------------------------------------------------------------------------------

    async def cancel(self, run_id: str) -> Run:
        """Cancel a run: here if we run it, else by taking it over in the store.

        Raises ``RunTerminal`` for a run that had already ended."""
        if self.deps.store.get_run(run_id).is_terminal:
            raise RunTerminal(f"run {run_id} has already ended")
        run = await self._cancel(run_id)
        executor = self.executors.get(run.type)
        if executor is not None and run.status == "cancelled":
            await executor.on_cancelled(run)
        return run

    async def _cancel(self, run_id: str) -> Run:
        task = self._tasks.get(run_id)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task}, timeout=30)
            return self.deps.store.get_run(run_id)
        run = self.deps.store.get_run(run_id)
        if run.is_terminal:
            return run
        if not self.deps.store.update_run_if(run.id, run.version, status="cancelled"):
            return await self._cancel(run_id)  # it changed under us: look again
        if run.status == "running" and not self._is_stale(run):
            return self.deps.store.get_run(run_id)  # the live owner finishes it at its heartbeat
        return self._finish(run_id, self._emitter(run), "cancelled", _cancel_error())

    # --- tick ----------------------------------------------------------------------------------

    async def tick(self, *, max_runs: int = 10) -> TickResult:
        """Recover stale runs, then claim and execute up to ``max_runs`` due queued runs, and
        wait for them. A claim takes one run per session (``claim_due_runs``), so whenever a
        run ends the tick claims again: a session's queue drains within one tick."""
        result = TickResult()
        tasks = [
            self.spawn(r.id, wait_for_session=False) for r in self._recover_stale(result, max_runs)
        ]
        running: set[asyncio.Future[Run]] = set(tasks)
        while True:
            if len(tasks) < max_runs:
                fresh = self._claim_due(result, max_runs - len(tasks))
                tasks.extend(fresh)
                running.update(fresh)
            if not running:
                break
            _, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done() and not task.cancelled():
                run = task.result()
                if run.owner == self.deps.owner and run.is_terminal:
                    result.executed += 1
        return result

    def _claim_due(self, result: TickResult, limit: int) -> list[asyncio.Task[Run]]:
        """Claim due runs for this process (one statement: ticks of other processes take other
        runs meanwhile) and start them."""
        tasks = []
        for run in self.deps.store.claim_due_runs(owner=self.deps.owner, limit=limit):
            if self.is_local(run.id):  # its task here is about to claim it: hand it back
                self.deps.store.update_run_if(
                    run.id, run.version, status="queued", owner=None, heartbeat_at=None
                )
                result.skipped += 1
                continue
            tasks.append(self.spawn(run.id, claimed=True))
        return tasks

    def _recover_stale(self, result: TickResult, limit: int) -> list[Run]:
        cutoff = _iso_in(-self.deps.stale_after)
        recovered = []
        for run in self.deps.store.stale_runs(heartbeat_before=cutoff, limit=limit):
            if self.is_local(run.id):
                continue
            if run.attempt >= run.max_attempts:
                if self.deps.store.update_run_if(run.id, run.version, owner=self.deps.owner):
                    error = {
                        "code": "RUN_ABANDONED",
                        "message": "the process running this run stopped and no attempts are left",
                    }
                    self._finish(run.id, self._emitter(run), "failed", error)
                    result.failed_stale += 1
                continue
            if self.deps.store.update_run_if(
                run.id, run.version, status="queued", owner=None, next_attempt_at=None
            ):
                result.recovered += 1
                recovered.append(self.deps.store.get_run(run.id))
        return recovered

    async def aclose(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for executor in self.executors.values():
            await executor.aclose()


def _cancel_error() -> dict[str, Any]:
    return {"code": "RUN_CANCELLED", "message": "the run was cancelled"}
