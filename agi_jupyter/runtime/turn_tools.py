"""The tool steps of an attempt: run a turn's tool calls, settle the calls that waited for a
person, and answer the calls a crash left without a result.

Each call's row is created before it runs (``waiting_approval`` for those the tool policy says a
person must decide), and its result is stored the moment it ends, in one trip to the store
thread with the row's update: a call that completed keeps its result whatever happens to its
siblings, and one that ran is recorded even when the run is cancelled meanwhile. Edits
(``Tool.in_order``) run one after another in the order the model made them.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from agi_jupyter import events as ev
from agi_jupyter.errors import ErrorCode
from agi_jupyter.kinds import Verdict
from agi_jupyter.records import (
    JSON,
    ImagePart,
    Message,
    Run,
    Session,
    ToolCall,
    ToolCallPart,
    ToolResultPart,
    utc_now,
)
from agi_jupyter.run_state import ExecutionOutcome, ParkedExecution
from agi_jupyter.runtime.endings import INTERRUPTED, AwaitingApproval, AwaitingExecution
from agi_jupyter.runtime.history import unanswered_tool_calls
from agi_jupyter.runtime.toolcalls import preview_call, run_tool
from agi_jupyter.tools.diffs import DIFF_KINDS
from agi_jupyter.tools.executor import OutcomeStatus, ToolOutcome
from agi_jupyter.tools.policy import ToolPolicy
from agi_jupyter.tools.registry import is_allowed

if TYPE_CHECKING:
    from agi_jupyter.agents import Agent
    from agi_jupyter.providers import base as pb
    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.runtime.emitter import RunEmitter


PNG = "image/png"


class ToolSteps:
    """The tool steps of ``AgentLoop`` attempts. Stateless between runs; one per loop."""

    def __init__(self, deps: RuntimeDeps) -> None:
        self.deps = deps

    async def run_tools(
        self,
        run: Run,
        session: Session,
        agent: Agent,
        allowed: list[str],
        assistant: Message,
        calls: list[pb.ToolCallEnd],
        emitter: RunEmitter,
        iteration: int | None = None,
    ) -> None:
        """Run the turn's calls concurrently; those the tool policy says a person must decide
        wait instead (``approval.requested``), and the run then waits for the decisions."""
        policy = ToolPolicy.for_session(agent, session, self.deps.config)
        asks = {
            c.tool_call_id
            for c in calls
            if c.parse_error is None
            and (tool := self.deps.registry.get(c.name)) is not None
            and is_allowed(c.name, allowed)
            and policy.decide(c.name, tool.trait, tool.default_verdict) == Verdict.ASK
        }
        rows = [
            await self.deps.stored(
                self.deps.store.create_tool_call,
                run.id,
                c.tool_call_id,
                c.name,
                self.deps.redactor.redact_json(c.arguments),
                message_id=assistant.id,
                status="waiting_approval" if c.tool_call_id in asks else "running",
                fence=emitter.fence,
            )
            for c in calls
        ]
        for call in calls:
            if call.tool_call_id in asks:
                diff = await preview_call(
                    self.deps, run, session, call.tool_call_id, call.name, call.arguments
                )
                emitter.emit(
                    ev.ApprovalRequested(
                        tool_call_id=call.tool_call_id,
                        name=call.name,
                        arguments=self.deps.redactor.redact_json(call.arguments),
                        review_mode=policy.review_mode,
                        diff=diff,
                    )
                )
        # A call may park the run on cells still running (``notebook.wait {park: true}``):
        # one per turn, and not beside calls that wait for a person.
        parks: dict[str, str] = {}
        await self._in_turn_order(
            [
                (
                    call.name,
                    functools.partial(
                        self._run_one_tool,
                        run,
                        session,
                        call.tool_call_id,
                        call.name,
                        call.arguments,
                        row.id,
                        allowed,
                        emitter,
                        iteration,
                        parse_error=call.parse_error,
                        parks=None if asks else parks,
                    ),
                )
                for call, row in zip(calls, rows, strict=True)
                if call.tool_call_id not in asks
            ]
        )
        if asks:
            raise AwaitingApproval(run.id)
        for call in calls:
            if call.tool_call_id in parks:
                raise AwaitingExecution(
                    run.id, call.tool_call_id, call.name, parks[call.tool_call_id]
                )

    async def _run_one_tool(
        self,
        run: Run,
        session: Session,
        tool_call_id: str,
        name: str,
        arguments: JSON,
        row_id: str,
        allowed: list[str],
        emitter: RunEmitter,
        iteration: int | None = None,
        *,
        parse_error: str | None = None,
        approved: bool = False,
        parks: dict[str, str] | None = None,
    ) -> None:
        """Run one call and store its result at once (not when its siblings end): a call
        that completed keeps its result whatever happens to the others, and a call that ran
        has its result stored even when the run is cancelled (closed) meanwhile. ``parks``:
        the turn's parked calls (call id -> execution handle), given when this call may park
        the run; a call that parked it stores no result (its answer comes when it resumes)."""
        store, fence = self.deps.store, emitter.fence

        def park(handle: str) -> bool:
            if parks is None or parks:
                return False
            parks[tool_call_id] = handle
            return True

        async def record(outcome: ToolOutcome) -> None:
            if parks and tool_call_id in parks:
                return  # the row stays running: the run waits for the cells

            def finished() -> None:
                store.update_tool_call(
                    row_id,
                    status=outcome.status,
                    result=outcome.result,
                    is_error=not outcome.ok,
                    started_at=outcome.started_at,
                    finished_at=outcome.finished_at,
                    fence=fence,
                )

            await self._save_tool_result(run, session, outcome, emitter, before=finished)

        await run_tool(
            self.deps,
            run,
            session,
            emitter,
            tool_call_id=tool_call_id,
            name=name,
            arguments=arguments,
            allowed=allowed,
            parse_error=parse_error,
            turn=iteration,
            approved=approved,
            record=record,
            park=None if parks is None else park,
        )

    async def settle_approvals(
        self,
        run: Run,
        session: Session,
        allowed: list[str],
        emitter: RunEmitter,
        iteration: int | None,
        waiting: list[ToolCall],
    ) -> None:
        """Execute the approved calls that waited (once: each is marked ``running`` before it
        starts, so an attempt that dies meanwhile leaves it to be answered as interrupted) and
        answer the denied ones with the denial; any call still undecided parks the run."""
        store, stored = self.deps.store, self.deps.stored
        if any(c.approval is None for c in waiting):
            raise AwaitingApproval(run.id)
        # The arguments as the model sent them (the rows hold their redacted copy).
        sent = {
            part.tool_call_id: part.arguments
            for message in await stored(store.list_messages, session.id)
            if message.run_id == run.id and message.role == "assistant"
            for part in message.parts
            if isinstance(part, ToolCallPart)
        }
        await self._in_turn_order(
            [
                (
                    call.name,
                    functools.partial(
                        self._settle_one,
                        run,
                        session,
                        call,
                        sent.get(call.tool_call_id, call.args),
                        allowed,
                        emitter,
                        iteration,
                    ),
                )
                for call in waiting
            ]
        )

    async def _in_turn_order(self, jobs: list[tuple[str, Callable[[], Awaitable[None]]]]) -> None:
        """Run a turn's calls (tool name, job) concurrently, except those of ``in_order``
        tools (edits of files and notebooks): they run one after another in the order the
        model made them, so their changes apply, are recorded and are undone in that order."""
        registry = self.deps.registry

        def in_order(name: str) -> bool:
            tool = registry.get(name)
            return tool is not None and tool.in_order

        ordered = [job for name, job in jobs if in_order(name)]

        async def one_after_another() -> None:
            for job in ordered:
                await job()

        tasks = [asyncio.ensure_future(one_after_another())]
        tasks += [asyncio.ensure_future(job()) for name, job in jobs if not in_order(name)]
        await _all_of(tasks)

    async def _settle_one(
        self,
        run: Run,
        session: Session,
        call: ToolCall,
        arguments: JSON,
        allowed: list[str],
        emitter: RunEmitter,
        iteration: int | None,
    ) -> None:
        approval = call.approval or {}
        decision = str(approval.get("decision"))
        message = approval.get("message")
        emitter.emit(
            ev.ApprovalDecided(
                tool_call_id=call.tool_call_id,
                name=call.name,
                decision=decision,
                message=str(message) if message else None,
                door=approval.get("door"),
                by=approval.get("by"),
            )
        )
        store, stored = self.deps.store, self.deps.stored
        if decision != "deny":
            await stored(store.update_tool_call, call.id, status="running", fence=emitter.fence)
            await self._run_one_tool(
                run,
                session,
                call.tool_call_id,
                call.name,
                arguments,
                call.id,
                allowed,
                emitter,
                iteration,
                approved=True,
            )
            return
        text = "A person denied this tool call; it was not run."
        if message:
            text += f" Their message: {message}"
        error: JSON = {"code": ErrorCode.TOOL_DENIED, "message": text}
        now = utc_now()
        outcome = ToolOutcome(
            tool_call_id=call.tool_call_id,
            name=call.name,
            status="denied",
            ok=False,
            output=text,
            result={"ok": False, "output": text, "error": error},
            arguments=call.args,
            error=error,
            started_at=now,
            finished_at=now,
        )
        await stored(
            store.update_tool_call,
            call.id,
            status="denied",
            result=outcome.result,
            is_error=True,
            finished_at=now,
            fence=emitter.fence,
        )
        await self._save_tool_result(run, session, outcome, emitter)

    async def _save_tool_result(
        self,
        run: Run,
        session: Session,
        outcome: ToolOutcome,
        emitter: RunEmitter,
        *,
        before: Callable[[], None] | None = None,
    ) -> None:
        """Store the result message (after ``before``, in the same trip to the store thread)
        and emit it."""
        artifact_id = outcome.artifact.id if outcome.artifact else None
        part = ToolResultPart(
            tool_call_id=outcome.tool_call_id,
            name=outcome.name,
            output=outcome.output,
            is_error=not outcome.ok,
            artifact_id=artifact_id,
            status=outcome.status,
            images=[ImagePart(mime=a.mime or PNG, artifact_id=a.id) for a in outcome.images],
        )
        store, fence = self.deps.store, emitter.fence

        def write() -> None:
            if before is not None:
                before()
            store.add_message(session.id, "tool", [part], run_id=run.id, fence=fence)

        await self.deps.stored(write)
        summary = None
        if outcome.artifact is not None:
            a = outcome.artifact
            summary = {"id": a.id, "kind": a.kind, "title": a.title, "size": a.size}
            if a.kind in DIFF_KINDS and a.data:
                summary["summary"] = a.data.get("summary")
        emitter.emit(
            ev.ToolCallOutput(
                tool_call_id=outcome.tool_call_id,
                name=outcome.name,
                ok=outcome.ok,
                output=outcome.output,
                status=outcome.status,
                artifact=summary,
            )
        )

    async def answer_parked(
        self,
        run: Run,
        session: Session,
        parked: ParkedExecution,
        messages: list[Message],
        emitter: RunEmitter,
    ) -> bool:
        """Store the answer of the ``notebook.wait`` call that parked the run: the cells'
        result, or what became of them (``parked.outcome``; none: interrupted). Once: a call
        answered already (an attempt that resumed the run before this one) is left as it is.
        Returns whether it wrote the answer."""
        unanswered = {call.tool_call_id for _, call in unanswered_tool_calls(messages)}
        if parked.tool_call_id not in unanswered:
            return False
        answer = parked.outcome or ExecutionOutcome(INTERRUPTED, False)
        store, stored = self.deps.store, self.deps.stored
        rows = await stored(store.list_tool_calls, run_id=run.id)
        row = next((c for c in rows if c.tool_call_id == parked.tool_call_id), None)
        now = utc_now()
        status: OutcomeStatus = "completed" if answer.ok else "failed"
        result: JSON = {"ok": answer.ok, "output": answer.output, "data": dict(answer.data)}
        error: JSON | None = None
        if not answer.ok:
            first = answer.output.strip().splitlines()[:1] or ["the execution failed"]
            error = result["error"] = {"code": ErrorCode.TOOL_ERROR, "message": first[0][:500]}
        outcome = ToolOutcome(
            tool_call_id=parked.tool_call_id,
            name=parked.name,
            status=status,
            ok=answer.ok,
            output=answer.output,
            result=result,
            arguments={} if row is None else row.args,
            error=error,
            started_at=parked.since,
            finished_at=now,
        )

        def finished() -> None:
            if row is not None:
                store.update_tool_call(
                    row.id,
                    status=status,
                    result=result,
                    is_error=not answer.ok,
                    finished_at=now,
                    fence=emitter.fence,
                )

        await self._save_tool_result(run, session, outcome, emitter, before=finished)
        return True

    async def answer_dangling_tool_calls(
        self, run: Run, messages: list[Message], emitter: RunEmitter
    ) -> None:
        """Give tool calls interrupted by a crash an error result, so history stays valid."""
        unanswered = list(unanswered_tool_calls(messages))
        if not unanswered:
            return
        store, stored = self.deps.store, self.deps.stored
        rows = {
            c.tool_call_id: c
            for c in await stored(store.list_tool_calls, session_id=run.session_id)
        }
        for message, call in unanswered:
            part = ToolResultPart(
                tool_call_id=call.tool_call_id,
                name=call.name,
                output=INTERRUPTED,
                is_error=True,
                status="failed",
            )
            row = rows.get(call.tool_call_id)
            if row is not None and row.status in ("pending", "running"):
                await stored(
                    store.update_tool_call,
                    row.id,
                    status="failed",
                    is_error=True,
                    fence=emitter.fence,
                )
            await stored(
                store.add_message,
                message.session_id,
                "tool",
                [part],
                run_id=run.id,
                fence=emitter.fence,
            )
            emitter.emit(
                ev.ToolCallOutput(
                    tool_call_id=call.tool_call_id,
                    name=call.name,
                    ok=False,
                    output=part.output,
                    status="failed",
                )
            )


async def _all_of(tasks: list[asyncio.Task[None]]) -> None:
    """Wait for every task; when one fails or this task is cancelled, cancel the rest and
    still wait for all of them before raising. (``asyncio.gather`` raises at the first
    cancelled child: the attempt's ending then settled a sibling call as ``cancelled`` while
    that call, which had run, was still storing its result: the result was lost.)"""
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            if not task.cancelling():  # (once: a second cancel would cut a call's cleanup)
                task.cancel()
        while not all(task.done() for task in tasks):
            try:
                await asyncio.wait(tasks)
            except asyncio.CancelledError:
                continue  # (a second cancellation: the first is raised below)
        raise
