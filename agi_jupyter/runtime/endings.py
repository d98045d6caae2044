"""How a run's attempt ends: finished, queued again for a retry, or released to another process.

Every write here goes through the owner's fence (``emitter.fence``): an owner that lost its run
changes nothing. What each ending leaves behind:

- **finished** (succeeded | failed | cancelled): the answer streamed so far is kept as a partial
  assistant message (status ``error``, ``meta.partial``) when the run failed or was cancelled;
  tool calls still pending or running end ``cancelled`` (cancelled run) or ``skipped`` /
  ``failed``, and each gets an error result message, so the stored conversation is complete;
  then the ``error`` event, the status, and ``run.final`` last.
- **queued again** (a retryable error with attempts left): the ``error`` event (``retryable``),
  ``output.text.reset`` (the text the unfinished turn streamed is discarded: the next attempt
  streams that turn again), then ``run.status: queued`` with the backoff in
  ``next_attempt_at``; ``loop_state`` is kept, so the next attempt resumes.
- **waiting for approval** (a tool call the policy says a person must decide): the calls
  wait in ``tool_calls`` (status ``waiting_approval``, arguments in the assistant message),
  and the run goes to ``waiting_approval`` with no owner: no tick claims it until every
  waiting call has a decision, which queues it (``store.decide_tool_calls``); the attempt
  that resumes it executes or refuses the calls before calling the model again. The park
  does not count as an attempt (``max_attempts`` grows by one).
- **waiting for a budget** (review mode ``ask``, the next model call would go over the
  session's budget): the question (``LoopState.budget_question``: the budgets that refused,
  spent, limit, the call's bound) is saved with the run in ``waiting_approval``, no owner, like
  a tool approval; a decision (``Agi.decide``: a larger budget, or deny) is written into it and
  queues the run, and the attempt that resumes it goes on (or fails ``BUDGET_EXCEEDED``).
- **waiting for cells** (``notebook.wait {park: true}`` on cells still running): the call's
  row stays ``running`` with no result, and the run goes to ``waiting_execution`` with no
  owner and the cells in ``LoopState.parked_on`` (``runtime.parking``); it is queued again
  with the call's answer in that state when the cells end, or when nobody follows them any
  more, and the attempt that resumes it stores that answer before calling the model. Not an
  attempt either.
- **released** (a graceful stop of this process): the tool calls in flight are answered as
  interrupted, ``output.text.reset`` as for a retry, and the run goes back to ``queued`` with
  no owner and ``next_attempt_at`` now, so the next process or any tick resumes it from
  ``loop_state`` at once.

The status events are emitted before the update that hands the run over (owner cleared: the
fence stops holding); ``run.final`` follows the terminal update, which keeps the owner.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from agi_jupyter import events as ev
from agi_jupyter.errors import ErrorCode, RunLost
from agi_jupyter.records import (
    JSON,
    Part,
    ReasoningPart,
    Run,
    TextPart,
    ToolCallStatus,
    ToolResultPart,
    utc_now,
)
from agi_jupyter.run_state import LoopState, ParkedExecution
from agi_jupyter.run_state_codec import to_json

if TYPE_CHECKING:
    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.runtime.emitter import RunEmitter

INTERRUPTED = (
    "The tool call was interrupted (the process running it stopped). "
    "Its effects are unknown; check before calling it again."
)
CANCELLED = "The tool call was cancelled with its run. Its effects are unknown."
SKIPPED = "The tool call was not run: its run ended first."


class AwaitingApproval(Exception):
    """Raised by an attempt that left tool calls waiting for a person's decision."""


class AwaitingExecution(Exception):
    """Raised by an attempt whose ``notebook.wait`` call parks the run on cells still
    running: that call (its id and tool name) and the execution handle."""

    def __init__(self, run_id: str, tool_call_id: str, name: str, handle: str) -> None:
        super().__init__(run_id)
        self.tool_call_id, self.name, self.handle = tool_call_id, name, handle


class AwaitingBudget(AwaitingApproval):
    """Raised by an attempt whose next model call needs a larger budget (review mode ``ask``):
    ``state`` is the run's loop state with the ``budget_question`` to save."""

    def __init__(self, run_id: str, state: LoopState) -> None:
        super().__init__(run_id)
        self.state = state


def run_to_dict(run: Run) -> dict[str, Any]:
    """A run as JSON (``run.final``): its fields, the state in its stored form."""
    return {**asdict(replace(run, loop_state=None)), "loop_state": to_json(run.loop_state)}


def finish(
    deps: RuntimeDeps, run_id: str, emitter: RunEmitter, status: str, error: JSON | None
) -> Run:
    """End the run with ``status``: partial answer, tool calls, ``error``, status, final."""
    if status in ("failed", "cancelled"):
        save_partial(deps, run_id, emitter)
    settle_tool_calls(deps, run_id, emitter, "cancelled" if status == "cancelled" else "failed")
    if error is not None:
        emitter.emit(
            ev.ErrorEvent(
                code=str(error.get("code")), message=str(error.get("message")), retryable=False
            )
        )
    now = utc_now()
    run = deps.store.update_run(
        run_id,
        status=status,
        error=error,
        completed_at=now,
        heartbeat_at=now,
        fence=emitter.fence,
    )
    with emitter.together():
        emitter.emit(ev.RunStatusEvent(status=status))
        emitter.emit(ev.RunFinal(run=run_to_dict(run)))
    return run


def requeue(deps: RuntimeDeps, run_id: str, emitter: RunEmitter, delay_at: str, error: JSON) -> Run:
    """Queue the run again for its next attempt at ``delay_at`` (a retryable error)."""
    emitter.emit(
        ev.ErrorEvent(code=str(error["code"]), message=str(error["message"]), retryable=True)
    )
    emit_reset(deps, run_id, emitter)
    emitter.emit(ev.RunStatusEvent(status="queued"))
    return deps.store.update_run(
        run_id,
        status="queued",
        owner=None,
        next_attempt_at=delay_at,
        error=error,
        fence=emitter.fence,
    )


def await_approval(deps: RuntimeDeps, run_id: str, emitter: RunEmitter) -> Run:
    """Park the run in ``waiting_approval`` (no owner) until its waiting calls are decided;
    queued at once if they all were decided meanwhile (a decision that came before the park
    found the run still running and could not queue it)."""
    run = park(deps, run_id, emitter, "waiting_approval")
    undecided = [
        c
        for c in deps.store.list_tool_calls(run_id=run_id)
        if c.status == "waiting_approval" and c.approval is None
    ]
    if not undecided and deps.store.update_run_if(
        run_id, run.version, status="queued", next_attempt_at=utc_now()
    ):
        return deps.store.get_run(run_id)
    return run


def await_budget(deps: RuntimeDeps, run_id: str, emitter: RunEmitter, state: LoopState) -> Run:
    """Park the run in ``waiting_approval`` (no owner) with its budget question in
    ``loop_state``, until a person answers it (``Agi.decide``). Not an attempt either."""
    return park(deps, run_id, emitter, "waiting_approval", loop_state=state)


def await_execution(
    deps: RuntimeDeps, run_id: str, emitter: RunEmitter, parked: ParkedExecution
) -> Run:
    """Park the run in ``waiting_execution`` (no owner) with the cells it waits for in
    ``loop_state``; its heartbeat is the follower's from now on (``runtime.parking``)."""
    state = deps.store.get_run(run_id).loop_state or LoopState()
    return park(
        deps,
        run_id,
        emitter,
        "waiting_execution",
        loop_state=replace(state, parked_on=parked),
        heartbeat_at=utc_now(),
    )


def park(deps: RuntimeDeps, run_id: str, emitter: RunEmitter, status: str, **changes: Any) -> Run:
    """Give the run up in a waiting ``status`` (no owner, not due) with ``changes``: announced
    first (the fence stops holding with the update); the wait is not an attempt
    (``max_attempts`` grows by one)."""
    emitter.emit(ev.RunStatusEvent(status=status))
    run = deps.store.get_run(run_id)
    return deps.store.update_run(
        run_id,
        status=status,
        owner=None,
        next_attempt_at=None,
        max_attempts=run.max_attempts + 1,
        fence=emitter.fence,
        **changes,
    )


def cancel_error() -> JSON:
    return {"code": ErrorCode.RUN_CANCELLED, "message": "the run was cancelled"}


def release(deps: RuntimeDeps, run_id: str, emitter: RunEmitter) -> Run:
    """Give the run back to the queue (this process is stopping): due now, ``loop_state`` kept.

    A cancel wins over a release, in either order: a run whose cancel another process asked
    for while this one owns it (``cancelled`` in the store, the owner unchanged) is ended
    ``cancelled`` here, not queued again (its owner stopping at that moment overwrote the
    cancel, and the next tick ran it to the end); released first, the run is queued, and the
    cancel ends it from the queue. The queueing is a compare-and-set on the version read with
    the cancel check (an unchanged version is an unchanged owner: the fence holds)."""
    store, fence = deps.store, emitter.fence
    run = store.get_run(run_id)
    if run.status != "cancelled":
        settle_tool_calls(deps, run_id, emitter, "cancelled", output=INTERRUPTED, keep_waiting=True)
        emit_reset(deps, run_id, emitter)
        emitter.emit(ev.RunStatusEvent(status="queued"))
    while run.status != "cancelled":
        if fence is not None and (run.owner, run.epoch) != (fence.owner, fence.epoch):
            raise RunLost(f"run {run_id} is no longer owned by {fence.owner}")
        if store.update_run_if(
            run_id, run.version, status="queued", owner=None, next_attempt_at=utc_now()
        ):
            return store.get_run(run_id)
        run = store.get_run(run_id)  # changed meanwhile (a heartbeat, or the cancel)
    return finish(deps, run_id, emitter, "cancelled", cancel_error())


def emit_reset(deps: RuntimeDeps, run_id: str, emitter: RunEmitter) -> None:
    """Tell every stream that the text of the unfinished model turn is discarded: the next
    attempt (``run.attempt + 1``, counted by its claim) streams that turn again from its start
    (``output.text.reset``, before ``run.status: queued``)."""
    text, reasoning = emitter.partial()
    attempt = deps.store.get_run(run_id).attempt + 1
    emitter.emit(
        ev.TextReset(
            attempt=attempt,
            discarded_chars=len(text),
            discarded_reasoning_chars=len(reasoning),
        )
    )


def save_partial(deps: RuntimeDeps, run_id: str, emitter: RunEmitter) -> None:
    """Keep what the run streamed of an answer it never completed, as an ``error`` message
    marked ``partial`` (never sent back to a model; the history views show it)."""
    text, reasoning = emitter.partial()
    if not text and not reasoning:
        return
    run = deps.store.get_run(run_id)
    parts: list[Part] = []
    if reasoning:
        parts.append(ReasoningPart(text=reasoning))
    if text:
        parts.append(TextPart(text=text))
    meta: JSON = {"provider": run.provider, "model": run.model, "partial": True}
    message = deps.store.add_message(
        run.session_id,
        "assistant",
        parts,
        run_id=run_id,
        status="error",
        meta=meta,
        fence=emitter.fence,
    )
    from agi_jupyter.runtime.agent_loop import message_to_dict

    emitter.emit(ev.MessageCompleted(message=message_to_dict(message)))


def settle_tool_calls(
    deps: RuntimeDeps,
    run_id: str,
    emitter: RunEmitter,
    status: ToolCallStatus,
    *,
    output: str | None = None,
    keep_waiting: bool = False,
) -> None:
    """No tool call of an ending attempt stays pending or running: each ends ``status``
    (pending ones ``skipped`` unless cancelled) with an error result in the session, so the
    stored conversation answers every call (and the views stop showing it as running).
    ``keep_waiting``: calls waiting for a decision keep waiting (a release: the attempt that
    resumes the run parks it again, or executes what was decided)."""
    settled = ("pending", "running") if keep_waiting else ("pending", "running", "waiting_approval")
    store = deps.store
    run = store.get_run(run_id)
    for call in store.list_tool_calls(run_id=run_id):
        if call.status not in settled:
            continue
        final: ToolCallStatus = status
        if call.status in ("pending", "waiting_approval") and status != "cancelled":
            final = "skipped"
        text = output or (CANCELLED if final == "cancelled" else SKIPPED)
        if final == "failed":
            text = INTERRUPTED
        store.update_tool_call(
            call.id, status=final, is_error=True, finished_at=utc_now(), fence=emitter.fence
        )
        part = ToolResultPart(
            tool_call_id=call.tool_call_id, name=call.name, output=text, is_error=True, status=final
        )
        store.add_message(run.session_id, "tool", [part], run_id=run_id, fence=emitter.fence)
        emitter.emit(
            ev.ToolCallOutput(
                tool_call_id=call.tool_call_id, name=call.name, ok=False, output=text, status=final
            )
        )
