"""Runs: list and create (background, deep research), stream, read, cancel, replay events,
and a run's artifacts."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any

from agi_jupyter.records import MentionPart, Part, Run
from agi_jupyter.runtime.follow import is_new, stored_event_to_dict
from agi_jupyter.server.handlers.base import AgiHandler, protected
from agi_jupyter.server.handlers.messages import ImagesBodyHandler, input_parts
from agi_jupyter.server.handlers.replies import events_of, reply_to_run, seq_of
from agi_jupyter.server.mentions import mention_parts
from agi_jupyter.server.models import (
    ApprovalDecision,
    CancelRequest,
    PageQuery,
    RunCreate,
    RunEventsQuery,
    RunStreamCreate,
)
from agi_jupyter.server.responses import (
    ApprovalList,
    ApprovalResult,
    ArtifactList,
    CancelResponse,
    PendingApproval,
    RunPage,
    RunResponse,
)
from agi_jupyter.server.streaming import Format, dumps

if TYPE_CHECKING:
    from agi_jupyter.app import Agi


def _options(body: RunCreate | RunStreamCreate) -> dict[str, Any]:
    options: dict[str, Any] = {
        "model": body.model,
        "agent": body.agent,
        "thinking_level": body.thinking_level,
        "max_iterations": body.max_iterations,
    }
    if body.system_prompt is not None:
        options["system_prompt"] = body.system_prompt
    return options


def _input(
    agi: Agi, session_id: str, body: RunCreate | RunStreamCreate, mentioned: Sequence[MentionPart]
) -> tuple[list[Part], dict[str, Any]]:
    """The run's prompt, its images and its mentions' parts (the model lets images and
    mentions come only with an ``input``)."""
    parts, fields = agi.run_input(
        session_id, input=body.input, input_message_id=body.input_message_id
    )
    return [*parts, *input_parts(body.images), *mentioned], fields


def _create(agi: Agi, session_id: str, body: RunCreate, mentioned: Sequence[MentionPart]) -> Run:
    parts, fields = _input(agi, session_id, body, mentioned)
    options = {**_options(body), **fields}
    if body.type == "deep_research":
        return agi.research(parts, session=session_id, **options)
    return agi.submit(parts, session=session_id, execution_mode="background", **options)


def _start_stream(
    agi: Agi, session_id: str, body: RunStreamCreate, mentioned: Sequence[MentionPart]
) -> Run:
    parts, fields = _input(agi, session_id, body, mentioned)
    return agi.submit(parts, session=session_id, **_options(body), **fields)


class SessionRunsHandler(ImagesBodyHandler):
    @protected
    async def get(self, session_id: str) -> None:
        query = self.query(PageQuery)
        agi = await self.agi()
        await self.call(agi.session, session_id)
        page = await self.page(agi.runs, session_id, limit=query.page_size, cursor=query.cursor)
        self.reply(RunPage(runs=page.items, next_cursor=page.next_cursor))

    @protected
    async def post(self, session_id: str) -> None:
        body = self.body(RunCreate)
        agi = await self.agi()
        mentioned = await mention_parts(self, agi, body.mentions)
        run = await self.call(_create, agi, session_id, body, mentioned)
        self.reply(RunResponse(run=run), status=202)


class SessionRunsStreamHandler(ImagesBodyHandler):
    @protected
    async def post(self, session_id: str) -> None:
        body = self.body(RunStreamCreate)
        fmt = self.format("ndjson")
        agi = await self.agi()
        mentioned = await mention_parts(self, agi, body.mentions)
        run = await self.call(_start_stream, agi, session_id, body, mentioned)
        await reply_to_run(self, agi, run.id, fmt, fresh=is_new(run))


class RunHandler(AgiHandler):
    @protected
    async def get(self, run_id: str) -> None:
        agi = await self.agi()
        self.reply(RunResponse(run=await self.call(agi.run, run_id)))


class RunCancelHandler(AgiHandler):
    @protected
    async def post(self, run_id: str) -> None:
        body = self.body(CancelRequest)
        agi = await self.agi()
        run = await self.call(agi.cancel, run_id)
        running = agi.interrupt_cells if body.interrupt else agi.running_cells
        self.reply(CancelResponse(run=run, cells=await self.call(running, run_id)))


class RunApprovalsHandler(AgiHandler):
    """The run's tool calls waiting for a person, and the decisions on them. A decision that
    leaves none undecided queues the run and wakes this server's runner, whose tick resumes
    it (or any other process that ticks first)."""

    @protected
    async def get(self, run_id: str) -> None:
        agi = await self.agi()
        run = await self.call(agi.run, run_id)
        calls = await self.call(agi.pending_approvals, run_id)
        diffs = await self.call(agi.approval_diffs, run_id) if calls else {}
        approvals = [
            PendingApproval(
                tool_call_id=c.tool_call_id,
                name=c.name,
                arguments=c.args,
                created_at=c.created_at,
                diff=diffs.get(c.tool_call_id),
            )
            for c in calls
        ]
        question = await self.call(agi.pending_budget, run_id)
        self.reply(ApprovalList(run=run, approvals=approvals, budget=question))

    @protected
    async def post(self, run_id: str) -> None:
        body = self.body(ApprovalDecision)
        agi = await self.agi()
        decided = await self.call(
            agi.decide,
            run_id,
            body.decision,
            tool_call_id=body.tool_call_id,
            message=body.message,
            resume=False,
            budget=None if body.budget is None else body.budget.model_dump(exclude_none=True),
            door=body.door,
            by=self.user_name(),
        )
        run = await self.call(agi.run, run_id)
        if run.status == "queued":
            self.agi_app.runner.wake()
        self.reply(ApprovalResult(run=run, decided=[c.tool_call_id for c in decided]))


class RunEventsHandler(AgiHandler):
    """Persisted events after ``after_seq`` (replay), and with ``follow`` the live ones until
    ``run.final``: a UI resumes after a refresh. SSE ids are seqs (``Last-Event-ID`` works)."""

    @protected
    async def get(self, run_id: str) -> None:
        query = self.query(RunEventsQuery)
        fmt = self.format("ndjson")
        after = query.after_seq
        last_id = self.request.headers.get("Last-Event-ID")
        if last_id and last_id.isascii() and last_id.isdigit() and len(last_id) < 19:
            after = max(after, int(last_id))  # a seq of this run (else: not ours, ignored)
        agi = await self.agi()
        await self.call(agi.run, run_id)
        if query.follow:
            await reply_to_events(self, agi, run_id, fmt, after)
            return
        stored = await self.call(agi.run_events, run_id, after_seq=after)
        events = [stored_event_to_dict(e) for e in stored]
        if fmt == "json":
            reply_events(self, events)
            return

        async def replay() -> AsyncGenerator[dict[str, Any], None]:
            for event in events:
                yield event

        await self.send_events(fmt, replay(), event_id=seq_of)


def reply_events(handler: AgiHandler, events: list[dict[str, Any]]) -> None:
    """A ``RunEvents`` body. Events are written as stored, not re-validated: an event type a
    newer writer added must not turn a replay into an error."""
    handler.finish(dumps({"events": events}))


async def reply_to_events(
    handler: AgiHandler, agi: Agi, run_id: str, fmt: Format, after_seq: int
) -> None:
    if fmt == "json":
        events = [e async for e in events_of(agi.afollow(run_id, after_seq=after_seq))]
        reply_events(handler, events)
        return
    await reply_to_run(handler, agi, run_id, fmt, after_seq=after_seq)


class RunArtifactsHandler(AgiHandler):
    @protected
    async def get(self, run_id: str) -> None:
        agi = await self.agi()
        await self.call(agi.run, run_id)
        artifacts = await self.call(agi.artifacts, run_id)
        self.reply(ArtifactList(artifacts=artifacts))
