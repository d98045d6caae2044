"""The agent loop of one run attempt (seed 004): model -> tools -> model, until it stops.

Each turn: build the request (system prompt, history, offered tools), stream the provider's
events out as section-4 events, persist the assistant message, then run the turn's tool calls
concurrently and persist each result as soon as its call ends. ``loop_state`` (the iteration,
usage and cost so far) is saved with the assistant message and again after the tools, and the
conversation itself is the stored messages: an attempt that resumes a run (after a crash, a
takeover or a release) calls the model again with what is stored, so a completed tool call is
never run twice; calls left without a result are answered as interrupted. Every write passes the
owner's fence (``emitter.fence``). Provider errors propagate to the caller
(``runs.RunManager``), which owns retries and the run's status.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agi_jupyter import budget as budgets
from agi_jupyter import events as ev
from agi_jupyter.agents import PROJECT_TOOLS, build_system_prompt
from agi_jupyter.errors import BudgetExceeded, Conflict, ProviderError, RunLost, UsageError
from agi_jupyter.kinds import ReviewMode, SdkName, ToolRunner
from agi_jupyter.providers import base as pb
from agi_jupyter.providers.catalog import cost_usd, lookup, reads_images
from agi_jupyter.providers.hosted import check_hosted_tools
from agi_jupyter.records import (
    JSON,
    Compaction,
    HostedToolPart,
    Message,
    Part,
    ReasoningPart,
    Run,
    RunFence,
    Session,
    TextPart,
    ToolCall,
    ToolCallPart,
    ToolCallStatus,
    part_to_dict,
    session_for_run,
    utc_now,
)
from agi_jupyter.run_state import LoopProgress, LoopState, ParkedExecution, UsageTotals
from agi_jupyter.run_state_codec import usage_to_json
from agi_jupyter.runtime import tool_images
from agi_jupyter.runtime.compaction import (
    COMPACTION_FAILED,
    CompactionOutcome,
    Compactor,
    known_window,
)
from agi_jupyter.runtime.context import (
    KEEP_AFTER_COMPACTION,
    ContextAssembler,
    ContextLimits,
    RequestContext,
)
from agi_jupyter.runtime.endings import AwaitingBudget
from agi_jupyter.runtime.history import unanswered_tool_calls
from agi_jupyter.runtime.run_stops import iso_in
from agi_jupyter.runtime.toolnames import ToolNames
from agi_jupyter.runtime.turn_tools import ToolSteps
from agi_jupyter.tools.policy import ToolPolicy

TOOLS_UNSUPPORTED = "TOOLS_UNSUPPORTED"

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agi_jupyter.agents import Agent
    from agi_jupyter.providers.server_caps import ServerCaps
    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.runtime.emitter import RunEmitter
    from agi_jupyter.store import Store
    from agi_jupyter.tools import AnyTool, ToolRegistry

log = logging.getLogger(__name__)

# (the run's tool calls, the session's messages, the budget statuses or None, the session's
# compaction in use): attempt_inputs
AttemptInputs = tuple[
    list[ToolCall], list[Message], list[budgets.BudgetStatus] | None, Compaction | None
]
# (the budget statuses, the session's messages, its compaction in use) before a model call
TurnInputs = tuple[list[budgets.BudgetStatus], list[Message], Compaction | None]


@dataclass
class TurnResult:
    text: str = ""
    reasoning: list[ReasoningPart] = field(default_factory=list)
    tool_calls: list[pb.ToolCallEnd] = field(default_factory=list)
    # The provider's own tools' calls, run inside the response (not ours to run).
    hosted: list[pb.HostedToolCall] = field(default_factory=list)
    usage: pb.Usage | None = None  # None: the server sent no usage (unknown, not zero)
    finish: pb.Finish | None = None
    response_id: str | None = None
    context_window: int | None = None  # the model's, read when the answer was truncated
    context: RequestContext | None = None  # what the request sent, and how full it was
    # The write of ``response_id`` to the run, under way beside the stream.
    recording: asyncio.Future[None] | None = field(default=None, repr=False)

    @property
    def truncated(self) -> bool:
        """The answer stopped at a token limit (``finish_reason: length``), not because the
        model was done: the output token limit, or a full context window."""
        return self.finish is not None and self.finish.reason == "length"

    @property
    def paused(self) -> bool:
        """Anthropic paused a long turn of its server tools (``stop_reason: pause_turn``): the
        answer so far, sent back as it is, lets the model continue its turn."""
        return self.finish is not None and self.finish.raw_reason == "pause_turn"

    @property
    def context_tokens(self) -> int | None:
        return None if self.usage is None else self.usage.input_tokens + self.usage.output_tokens

    @property
    def context_full(self) -> bool:
        """Truncated because prompt and answer filled the context window (a local server's
        ``n_ctx``), not at the output token limit."""
        used, window = self.context_tokens, self.context_window
        return self.truncated and used is not None and window is not None and used + 1 >= window


@dataclass
class AttemptResult:
    text: str
    usage: dict[str, Any]
    cost_usd: float | None  # None: a turn's cost is unknown (no usage, or no catalog price)
    iterations: int
    max_iterations_reached: bool = False


# Tasks due this soon (or overdue) are in a run's system prompt: the heartbeat's default
# interval (``AgiExtensionApp.heartbeat_interval``), so a task the next heartbeat will act on
# is one the agent already knows of.
DUE_HORIZON = 300.0  # seconds


class AgentLoop:
    """Runs one attempt of an ``agent`` run. Stateless between runs; one per ``Agi``."""

    def __init__(self, deps: RuntimeDeps) -> None:
        self.deps = deps
        self.tools = ToolSteps(deps)
        self.compactor = Compactor(deps)

    async def run_attempt(
        self,
        run: Run,
        emitter: RunEmitter,
        read: Session | None = None,
        inputs: AttemptInputs | None = None,
    ) -> AttemptResult:
        """``read``: the run's session as the caller just read it, ``inputs``: what
        ``attempt_inputs`` read for it in the same trip (None: read here)."""
        deps = self.deps
        store, stored = deps.store, deps.stored
        if read is None:
            read = await stored(store.get_session, run.session_id)
        session = session_for_run(read, run)
        agent = self._agent(session)
        allowed = self._allowed(agent, session)
        await deps.registry.prepare(allowed)  # starts the MCP servers the agent can reach
        policy = ToolPolicy.for_session(agent, session, deps.config)
        tools = deps.registry.offered(allowed, deps.features_for(session), policy)
        hosted = self._hosted_tools(run, session)
        system = run.system_prompt  # the run's snapshot (seed 001 §7.3), or given whole
        if system is None:
            system = await self._system_prompt(run, session, agent, tools)
            await stored(store.update_run, run.id, fence=emitter.fence, system_prompt=system)
        provider = await deps.providers.aget(run.provider or "fake")
        await self._reset_after_takeover(run, emitter)
        state = run.loop_state or LoopState()
        self._answered_budget(run, state)
        parked = state.parked_on
        state = replace(state, budget_question=None, parked_on=None)  # (saved with a turn)
        done = state.progress
        usage_total = UsageTotals() if done is None else done.usage
        cost_total: float | None = 0.0 if done is None else done.cost_usd
        # Calls that waited for a person: executed or refused now, as decided (the model
        # turn that made them is not repeated); still undecided: the run waits again.
        # (One trip to the store thread for both reads when no call waited.)
        if inputs is None:
            inputs = await stored(self.attempt_inputs, run, session)
        calls, messages, statuses, compaction = inputs
        # The first model call's inputs, when they were read in that trip.
        first: TurnInputs | None = None if statuses is None else (statuses, messages, compaction)
        # Resumed from cells it waited for: their answer to the call that parked the run.
        messages = await self._answer_parked(run, session, parked, messages, emitter)
        waiting = [c for c in calls if c.status == "waiting_approval"]
        if waiting:
            turn_of_calls = None if done is None else done.iteration
            await self.tools.settle_approvals(
                run, session, allowed, emitter, turn_of_calls, waiting
            )
            messages = await stored(store.list_messages, session.id)
        await self.tools.answer_dangling_tool_calls(run, messages, emitter)
        max_iterations = state.max_iterations or deps.config.max_iterations
        offer = deps.registry.generation
        names, specs = self._specs(tools)
        await self._warn_tools_unsupported(run, session, len(specs), emitter)
        extras = deps.config.request_extras.body_for(run.provider or "", run.model or "")
        known = await self._known_window(run)
        limits = ContextLimits.of(
            deps.config, run.provider or "", run.model or "", known, agent.max_output_tokens
        )
        configured = deps.config.model_settings(run.provider or "", run.model or "")
        temperature = configured.temperature if agent.temperature is None else agent.temperature
        assembler = ContextAssembler(limits, system, specs)
        text = ""
        for iteration in range(state.iteration + 1, max_iterations + 1):
            if emitter.iteration != iteration:  # (the first may be out: ``first_iteration``)
                emitter.emit(ev.Iteration(iteration=iteration, max_iterations=max_iterations))
            if deps.registry.generation != offer:  # a server changed its tools: the new list
                offer = deps.registry.generation
                tools = deps.registry.offered(allowed, deps.features_for(session), policy)
                names, specs = self._specs(tools)
                assembler = ContextAssembler(limits, system, specs)
            # One trip to the store thread for what the request needs (each costs a wake-up
            # of that thread and of the loop: the time to the first token).
            if first is not None:
                (found, history, compaction), first = first, None
            else:
                found, history, compaction = await stored(self._turn_inputs, session)
            self._check_budget(run, state, emitter, found, policy.review_mode)
            history = await self._tool_images(run, history)
            context, compacted = await self._request_context(
                run, session, assembler, (history, compaction), emitter
            )
            usage_total, cost_total = add_compaction(usage_total, cost_total, compacted)
            request = pb.ProviderRequest(
                model=run.model or "",
                messages=[names.encode_message(m) for m in context.messages],
                system=system,
                tools=specs,
                thinking_level=run.thinking_level,
                max_output_tokens=limits.max_output_tokens,
                temperature=temperature,
                idempotency_key=f"{run.id}-{run.attempt}-{iteration}",
                extra_body=extras,
                cache_key=session.id,
                cache_breakpoint=context.stable,
                hosted_tools=hosted,
                vector_store_ids=vector_store_ids(session),
            )
            turn = await self._stream_turn(run, provider, request, emitter, names)
            turn.context = context
            if turn.truncated:
                turn.context_window = await self._context_window(run)
            usage = turn.usage
            cost = None if usage is None else cost_usd(run.provider or "", run.model or "", usage)
            usage_total = add_turn_usage(usage_total, turn)
            cost_total = add_turn_cost(cost_total, cost)
            text = turn.text
            # Saved before the tools run, in the assistant message's trip to the store thread:
            # a resumed attempt continues after this model turn.
            state = replace(
                state,
                max_iterations=max_iterations,
                progress=LoopProgress(
                    iteration,
                    usage_total,
                    cost_total,
                    # For the budget check of the next call (budget.py): its prompt resends at
                    # least this one's (a call without usage leaves the run's usage unknown).
                    last_input_tokens=turn.usage.input_tokens if turn.usage else 0,
                ),
            )
            # (Nothing else emits on the emitter between turns: the block may await.)
            with emitter.together():
                assistant = await self._save_turn(run, session, turn, cost, emitter, state)
            if turn.tool_calls:
                await self.tools.run_tools(
                    run, session, agent, allowed, assistant, turn.tool_calls, emitter, iteration
                )
                await self._save_state(run, state, emitter)
            if not turn.tool_calls and not turn.paused:
                return AttemptResult(text, usage_to_json(usage_total), cost_total, iteration)
        return AttemptResult(text, usage_to_json(usage_total), cost_total, max_iterations, True)

    async def _answer_parked(
        self,
        run: Run,
        session: Session,
        parked: ParkedExecution | None,
        messages: list[Message],
        emitter: RunEmitter,
    ) -> list[Message]:
        """Store the answer of the call that parked the run on cells (``runtime.parking``),
        if it did; the session's messages after it. (A parked call is unanswered: the
        attempt's first reads left the first model call's inputs to be read again.)"""
        if parked is None:
            return messages
        await self.tools.answer_parked(run, session, parked, messages, emitter)
        return await self.deps.stored(self.deps.store.list_messages, session.id)

    async def _save_state(self, run: Run, state: LoopState, emitter: RunEmitter) -> None:
        await self.deps.stored(self._write_state, run, state, emitter.fence)

    def _specs(self, tools: list[AnyTool]) -> tuple[ToolNames, list[pb.ToolSpec]]:
        """The names of every registered tool (a call to a tool not offered is refused by its
        real name) and the request's specs of ``tools``."""
        names = ToolNames([t.name for t in self.deps.registry.all()])
        return names, [names.encode_spec(t.spec()) for t in tools]

    async def _system_prompt(
        self, run: Run, session: Session, agent: Agent, tools: list[AnyTool]
    ) -> str:
        """What the run is told: the agent's and the session's prompts, bootstrap files, tool
        contexts, the tasks due within ``DUE_HORIZON`` seconds or overdue, and the notebook's
        context. Composed at the run's first attempt and snapshotted on the run."""
        deps = self.deps
        due = await deps.stored(deps.store.due_tasks, before=iso_in(DUE_HORIZON))
        system = build_system_prompt(
            agent,
            deps.config.project,
            tool_prompts=[t.prompt for t in tools if t.prompt],
            session_prompt=session.system_prompt,
            due_tasks=due,
            now=utc_now(),
        )
        if deps.run_context is not None:
            context = await deps.run_context(run, session, [t.name for t in tools])
            # The notebook's outline quotes its cells: redacted like every tool result.
            system = f"{system}\n\n{deps.redactor.redact_text(context)}" if context else system
        return system

    def _write_state(self, run: Run, state: LoopState, fence: RunFence | None) -> None:
        """Save the loop state, the usage and the cost so far on the run (store thread)."""
        progress = state.progress
        if progress is None:
            raise ValueError("a loop state is saved after a model turn: it has progress")
        self.deps.store.update_run(
            run.id,
            loop_state=state,
            usage=usage_to_json(progress.usage),
            cost_usd=progress.cost_usd,
            fence=fence,
        )

    # --- budgets -----------------------------------------------------------------------------

    def _turn_inputs(self, session: Session) -> TurnInputs:
        """(budget statuses, the session's messages, its compaction) before a model call
        (store thread)."""
        store = self.deps.store
        messages = store.list_messages(session.id)
        return self._statuses_now(session), messages, store.latest_compaction(session.id)

    # --- the context of a request --------------------------------------------------------------

    async def _request_context(
        self,
        run: Run,
        session: Session,
        assembler: ContextAssembler,
        inputs: tuple[list[Message], Compaction | None],
        emitter: RunEmitter,
    ) -> tuple[RequestContext, CompactionOutcome | None]:
        """The context of the next request: the window over the history, compacted first
        when older messages fall out of it (and the config allows)."""
        history, compaction = inputs
        context = assembler.assemble(history, compaction)
        if not context.overflow or not self.deps.config.compaction:
            return context, None
        compacted = await self._compact(run, session, assembler, history, context, emitter)
        if compacted is None:
            return context, None
        return assembler.assemble(history, compacted.record), compacted

    async def _compact(
        self,
        run: Run,
        session: Session,
        assembler: ContextAssembler,
        history: list[Message],
        context: RequestContext,
        emitter: RunEmitter,
    ) -> CompactionOutcome | None:
        """Fold the older messages that no longer fit into a new compaction (a model call of
        its own, with its usage and cost); a failure is a ``notice``, and the request goes
        with the plain window (None)."""
        try:
            outcome = await self.compactor.compact(
                session_id=session.id,
                provider_name=run.provider or "fake",
                model=run.model or "",
                assembler=assembler,
                history=history,
                previous=context.compaction,
                keep=KEEP_AFTER_COMPACTION,
                run_id=run.id,
                fence=emitter.fence,
            )
        except (ProviderError, UsageError) as error:
            emitter.emit(
                ev.Notice(
                    code=COMPACTION_FAILED,
                    message=(
                        f"the {context.left_out} older messages that no longer fit the context "
                        f"could not be summarized ({error.message}); this request leaves them "
                        "out without a summary"
                    ),
                )
            )
            return None
        if outcome is not None:
            record = outcome.record
            emitter.emit(
                ev.CompactionEvent(
                    compaction_id=record.id,
                    message_count=record.message_count,
                    through_message_id=record.through_message_id,
                    input_tokens=record.input_tokens,
                    output_tokens=record.output_tokens,
                    cost_usd=record.cost_usd,
                )
            )
        return outcome

    async def _tool_images(self, run: Run, history: list[Message]) -> list[Message]:
        """The tool results' images inlined for a model that reads them, else left out."""
        if not tool_images.has_images(history):
            return history
        deps = self.deps
        if not reads_images(run.provider or "", run.model or "", deps.config.model_vision):
            return tool_images.without_images(history)
        return await deps.stored(tool_images.with_image_data, deps.store, history)

    def _check_budget(
        self,
        run: Run,
        state: LoopState,
        emitter: RunEmitter,
        found: list[budgets.BudgetStatus],
        review_mode: str = ReviewMode.ASK,
    ) -> None:
        """Refuse the next model call when it would go over a budget: ``BUDGET_EXCEEDED``, or
        in review mode ``ask`` the run waits for a person to raise the session's budget
        (``AwaitingBudget``) when a larger one can help (a session budget refused, with
        measured spend)."""
        if not found:
            return
        info = lookup(run.provider or "", run.model or "")
        done = state.progress
        call = budgets.NextCall(
            input_tokens_at_least=0 if done is None else done.last_input_tokens,
            cheapest_usd_per_mtok=None if info is None else info.cached_input_per_mtok,
            usage_unknown=done is not None and done.usage.unknown_turns > 0,
        )
        refused = [
            (status, reason)
            for status in found
            if (reason := budgets.refusal(status, call)) is not None
        ]
        if not refused:
            return
        asking = review_mode == ReviewMode.ASK and all(
            budgets.raisable(status, call) for status, _ in refused
        )
        for status, reason in refused:
            emitter.emit(budget_event(status, exceeded=True, asking=asking, reason=reason))
        if not asking:
            raise BudgetExceeded(refused[0][1])
        question = budgets.question([s for s, _ in refused], call, refused[0][1])
        raise AwaitingBudget(run.id, replace(state, budget_question=question))

    def _answered_budget(self, run: Run, state: LoopState) -> None:
        """Take up the answer to the run's budget question as its attempt starts: a denial
        fails the run (``BUDGET_EXCEEDED``); an approval raised the session's budget (the
        check before the next call reads it); still unanswered: the run waits again."""
        question = state.budget_question
        if question is None:
            return
        if question.decision is None:
            raise AwaitingBudget(run.id, state)
        if question.decision.decision == "deny":
            raise BudgetExceeded(f"{question.reason} (a larger budget was denied)")

    def _statuses_now(self, session: Session) -> list[budgets.BudgetStatus]:
        """The budgets that apply and what was spent (store calls: on the store thread)."""
        deps = self.deps
        current = deps.store.get_session(session.id)
        return budgets.statuses(deps.store, current, deps.config.budgets)

    async def _reset_after_takeover(self, run: Run, emitter: RunEmitter) -> None:
        """An attempt that took the run over from a process that died mid-turn: that process
        stored deltas (``persist_deltas``) no ending took back, and a follower in another
        process showed them; this attempt streams the turn again, so ``output.text.reset``
        first. (A retry or a release already sent theirs: nothing is left to take back.)"""
        if run.attempt <= 1 or not self.deps.config.persist_deltas:
            return
        text, reasoning = await self.deps.stored(unsettled_deltas, self.deps.store, run.id)
        if text or reasoning:
            emitter.emit(
                ev.TextReset(
                    attempt=run.attempt,
                    discarded_chars=text,
                    discarded_reasoning_chars=reasoning,
                )
            )

    # --- what the model's server says ---------------------------------------------------------

    async def _context_window(self, run: Run) -> int | None:
        """The model's context window: the config's (``models."provider:model"``), what its
        local server says (``n_ctx``), else the catalog's; None when none says."""
        configured = self.deps.config.model_settings(run.provider or "", run.model or "")
        return configured.context_window or await self._known_window(run)

    async def _known_window(self, run: Run) -> int | None:
        """The model's context window as its local server (``n_ctx``) or the catalog says."""
        return await known_window(self.deps, run.provider or "", run.model or "")

    async def _server_caps(self, run: Run) -> ServerCaps | None:
        try:
            return await self.deps.providers.server_caps(run.provider or "", run.model or "")
        except UsageError:
            return None

    async def _warn_tools_unsupported(
        self, run: Run, session: Session, offered: int, emitter: RunEmitter
    ) -> None:
        """Tools offered to a local model whose chat template has no place for them (its
        server says so): a ``notice``, once per session and model (kept in the session's
        ``metadata["agi_notices"]``), because the server drops them without a word."""
        if not offered:
            return
        caps = await self._server_caps(run)
        if caps is None or caps.supports_tools is not False:
            return
        key = f"{TOOLS_UNSUPPORTED}:{run.provider}:{run.model}"
        store = self.deps.store

        def first_time() -> bool:  # (store thread)
            current = store.get_session(session.id)
            said = dict(current.metadata.get("agi_notices") or {})
            if key in said:
                return False
            said[key] = run.id
            store.update_session(session.id, metadata={**current.metadata, "agi_notices": said})
            return True

        if not await self.deps.stored(first_time):
            return
        emitter.emit(
            ev.Notice(
                code=TOOLS_UNSUPPORTED,
                message=(
                    f"{run.provider}:{run.model} cannot take tools: {caps.source} says its chat "
                    f"template has no place for them, so the server drops the {offered} tools "
                    "offered and the model cannot call them (use a model or chat template "
                    "with tool support, e.g. llama-server --jinja)"
                ),
            )
        )

    # --- setup -------------------------------------------------------------------------------

    def _agent(self, session: Session) -> Agent:
        agent = self.deps.agents.get(session.agent)
        if agent is None:
            known = ", ".join(sorted(self.deps.agents))
            raise UsageError(f"unknown agent {session.agent!r} (known: {known})")
        return agent

    def _hosted_tools(self, run: Run, session: Session) -> tuple[str, ...]:
        """The session's hosted tools, each offered by the run's provider (a model changed
        since they were chosen: ``HostedToolUnsupported`` names the tool and the provider)."""
        chosen = hosted_tool_names(session)
        if not chosen:
            return ()
        provider = run.provider or ""
        wire = self.deps.config.provider(provider).wire
        return tuple(check_hosted_tools(provider, wire, chosen, vector_store_ids(session)))

    def _allowed(self, agent: Agent, session: Session) -> list[str]:
        return allowed_tool_names(agent, session, self.deps.registry)

    # --- streaming one model turn ------------------------------------------------------------

    async def _stream_turn(
        self,
        run: Run,
        provider: pb.Provider,
        request: pb.ProviderRequest,
        emitter: RunEmitter,
        names: ToolNames,
    ) -> TurnResult:
        turn = TurnResult()
        chunks: list[str] = []
        try:
            await self._read_turn(run, provider.stream(request), emitter, names, turn, chunks)
        finally:
            # The response id is stored as soon as known, beside the stream (the first text
            # delta does not wait for a trip to the store thread); its write ends with the turn.
            if turn.recording is not None:
                await turn.recording
        turn.text = "".join(chunks)
        if turn.text:
            emitter.emit(ev.TextDone(text=turn.text))
        return turn

    async def _read_turn(
        self,
        run: Run,
        stream: AsyncIterator[pb.ProviderEvent],
        emitter: RunEmitter,
        names: ToolNames,
        turn: TurnResult,
        chunks: list[str],
    ) -> None:
        """Read one model turn's ``stream`` into ``turn`` (its text into ``chunks``), emitting
        as it goes."""
        # Deltas take the emitter's short path: no event object, coalesced per loop turn.
        async for event in stream:
            if isinstance(event, pb.TextDelta):
                chunks.append(event.text)
                emitter.emit_delta("output.text.delta", event.text)
            elif isinstance(event, pb.ReasoningDelta):
                emitter.emit_delta("reasoning.delta", event.text)
            elif isinstance(event, pb.ReasoningDone):
                turn.reasoning.append(
                    ReasoningPart(
                        text=event.text,
                        signature=event.signature,
                        provider_data=event.provider_data,
                    )
                )
                emitter.emit(ev.ReasoningDone(text=event.text))
            elif isinstance(event, pb.ToolCallStart):
                name = names.decode(event.name)
                emitter.emit(ev.ToolCallStarted(tool_call_id=event.tool_call_id, name=name))
            elif isinstance(event, pb.ToolCallArgsDelta):
                emitter.emit(
                    ev.ToolCallArgumentsDelta(tool_call_id=event.tool_call_id, delta=event.delta)
                )
            elif isinstance(event, pb.ToolCallEnd):
                turn.tool_calls.append(replace(event, name=names.decode(event.name)))
                emitter.emit(
                    ev.ToolCallArgumentsDone(
                        tool_call_id=event.tool_call_id, arguments=event.arguments
                    )
                )
            elif isinstance(event, pb.HostedToolCall):
                turn.hosted.append(event)
                emit_hosted_call(emitter, event)
            elif isinstance(event, pb.Usage):
                turn.usage = event
            elif isinstance(event, pb.ResponseId):
                turn.response_id = event.id
                turn.recording = asyncio.ensure_future(
                    self._record_response_id(run, event.id, emitter)
                )
            elif isinstance(event, pb.Finish):
                turn.finish = event

    async def _record_response_id(self, run: Run, response_id: str, emitter: RunEmitter) -> None:
        """Store the provider's id of the response in progress as soon as the stream names it
        (seed 001 §9.5: a webhook or an operator finds the run by it). An id another run holds
        already (a local server that reuses ids) stays on the message only."""
        store = self.deps.store
        try:
            await self.deps.stored(
                store.update_run, run.id, fence=emitter.fence, provider_response_id=response_id
            )
        except RunLost:
            raise
        except Conflict:
            log.info("run %s: response id %s belongs to another run", run.id, response_id)

    async def _save_turn(
        self,
        run: Run,
        session: Session,
        turn: TurnResult,
        cost: float | None,
        emitter: RunEmitter,
        state: LoopState,
    ) -> Message:
        """Store the assistant message and the usage of a model turn, then the run's loop
        ``state`` after it, in one trip to the store thread; emit the message, the usage and
        the budgets' spent and remaining."""
        parts: list[Part] = [*turn.reasoning, *(hosted_part(c) for c in turn.hosted)]
        if turn.text:
            parts.append(TextPart(text=turn.text))
        parts.extend(
            ToolCallPart(tool_call_id=c.tool_call_id, name=c.name, arguments=c.arguments)
            for c in turn.tool_calls
        )
        meta: JSON = {
            "provider": run.provider,
            "model": run.model,
            "usage": None
            if turn.usage is None
            else {
                "input_tokens": turn.usage.input_tokens,
                "output_tokens": turn.usage.output_tokens,
                "cached_input_tokens": turn.usage.cached_input_tokens,
            },
            "cost_usd": cost,
            "stop_reason": turn.finish.reason if turn.finish else None,
            "sdk": SdkName.NATIVE,
        }
        if turn.truncated:
            meta["truncated"] = True
        if turn.context_full:
            meta.update(
                context_full=True,
                context_window=turn.context_window,
                context_tokens=turn.context_tokens,
            )
        if turn.response_id:
            meta["response_id"] = turn.response_id
        gauge = turn.context.gauge() if turn.context is not None else {}
        if gauge:
            meta["context"] = gauge
        store, fence, usage = self.deps.store, emitter.fence, turn.usage

        def write() -> tuple[Message, list[budgets.BudgetStatus]]:
            message = store.add_message(
                session.id, "assistant", parts, run_id=run.id, meta=meta, fence=fence
            )
            for call in turn.hosted:
                record_hosted_call(store, run.id, message.id, call, fence)
            if usage is not None:
                store.add_session_usage(
                    session.id,
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    cached_input_tokens=usage.cached_input_tokens,
                    cost_usd=cost or 0.0,
                    fence=fence,
                )
            self._write_state(run, state, fence)
            return message, self._statuses_now(session)

        message, found = await self.deps.stored(write)
        emitter.emit(ev.MessageCompleted(message=message_to_dict(message)))
        if usage is not None:
            emitter.emit(
                ev.UsageEvent(
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    cost_usd=cost,
                    cached_input_tokens=usage.cached_input_tokens,
                    context_tokens=gauge.get("tokens"),
                    context_window=gauge.get("window"),
                    compacts_at=gauge.get("compacts_at"),
                )
            )
        for status in found:
            emitter.emit(budget_event(status))
        return message

    # --- the attempt's inputs --------------------------------------------------------------

    def first_iteration(self, run: Run, inputs: AttemptInputs) -> ev.Iteration | None:
        """The ``iteration`` event of the attempt's first model call, when ``inputs`` (read
        in the claim's trip) are that call's: no call waited and none was left unanswered, so
        nothing is emitted before it. The run manager writes it there with the attempt's
        first events (one transaction, no write of its own beside the model request);
        ``run_attempt`` then does not emit it again. None when it must come from the loop."""
        if inputs[2] is None:
            return None
        state = run.loop_state or LoopState()
        iteration = state.iteration + 1
        max_iterations = state.max_iterations or self.deps.config.max_iterations
        if iteration > max_iterations:
            return None
        return ev.Iteration(iteration=iteration, max_iterations=max_iterations)

    def attempt_inputs(self, run: Run, session: Session) -> AttemptInputs:
        """(the run's tool calls, the session's messages, the budget statuses) as an attempt
        starts (store thread). The statuses only when no call waited and none was left
        unanswered: nothing is then written before the first model call, whose inputs these
        are (one trip fewer before the first token); else None."""
        store = self.deps.store
        calls, messages = store.list_tool_calls(run_id=run.id), store.list_messages(session.id)
        compaction = store.latest_compaction(session.id)
        if any(c.status == "waiting_approval" for c in calls):
            return calls, messages, None, compaction
        if unanswered_tool_calls(messages):
            return calls, messages, None, compaction
        return calls, messages, self._statuses_now(session), compaction


def add_turn_usage(total: UsageTotals, turn: TurnResult) -> UsageTotals:
    """A run's usage with a model turn added. A turn whose server sent no usage makes the
    totals unknown (``None``), never zero (``UsageTotals.add``); a turn cut at a token limit
    marks the run ``truncated``, and ``context_full`` (with the window and the tokens) when
    the context window was full."""
    usage = turn.usage
    tokens = None if usage is None else (usage.input_tokens, usage.output_tokens)
    context = (turn.context_window, turn.context_tokens) if turn.context_full else None
    return total.add(tokens, truncated=turn.truncated, context=context)


def unsettled_deltas(store: Store, run_id: str) -> tuple[int, int]:
    """(text, reasoning) characters of the run's stored deltas that no stored assistant message
    and no ``output.text.reset`` settled: what an attempt that died mid-turn had shown."""
    text = reasoning = 0
    for event in store.list_run_events(run_id):
        if event.type == "output.text.delta":
            text += len(str(event.payload.get("delta", "")))
        elif event.type == "reasoning.delta":
            reasoning += len(str(event.payload.get("delta", "")))
        elif event.type == "output.text.reset" or (
            event.type == "message.completed"
            and (event.payload.get("message") or {}).get("role") == "assistant"
        ):
            text = reasoning = 0
    return text, reasoning


def add_compaction(
    usage: UsageTotals, cost: float | None, compacted: CompactionOutcome | None
) -> tuple[UsageTotals, float | None]:
    """A run's usage and cost with a compaction's model call added (if one was made)."""
    if compacted is None:
        return usage, cost
    return usage.add(compacted.tokens), add_turn_cost(cost, compacted.cost_usd)


def add_turn_cost(total: float | None, cost: float | None) -> float | None:
    """A run's cost after a turn: unknown (None) as soon as one turn's is — a server that sent
    no usage, or a model without a catalog price — never a sum that counts it as 0."""
    return None if total is None or cost is None else total + cost


def allowed_tool_names(agent: Agent, session: Session | None, registry: ToolRegistry) -> list[str]:
    """The names/globs an agent may use in a session: its own list, ``@project`` expanded to
    the project tools, plus the session's extra tools."""
    names = list(agent.tools)
    if session is not None:
        names.extend(str(t) for t in session.tool_config.get("extra_tools") or [])
    if PROJECT_TOOLS in names:
        names.remove(PROJECT_TOOLS)
        names.extend(registry.project_tools)
    return names


def hosted_tool_names(session: Session) -> list[str]:
    """The provider-hosted tools the session turned on (``tool_config.hosted_tools``)."""
    return [str(t) for t in session.tool_config.get("hosted_tools") or []]


def vector_store_ids(session: Session) -> tuple[str, ...]:
    """The vector stores the session's ``file_search`` searches."""
    return tuple(str(v) for v in session.tool_config.get("vector_store_ids") or [])


def emit_hosted_call(emitter: RunEmitter, call: pb.HostedToolCall) -> None:
    """A hosted tool's call as every door shows a tool call: started (``tool_type``
    ``hosted``), its arguments, its output, at once (the provider ran it already)."""
    call_id = call.tool_call_id
    emitter.emit(
        ev.ToolCallStarted(tool_call_id=call_id, name=call.name, tool_type=ev.HOSTED_TOOL_TYPE)
    )
    emitter.emit(ev.ToolCallArgumentsDone(tool_call_id=call_id, arguments=call.input))
    emitter.emit(
        ev.ToolCallOutput(
            tool_call_id=call_id,
            name=call.name,
            ok=not call.is_error,
            output=call.output,
            status="failed" if call.is_error else "completed",
        )
    )


def hosted_part(call: pb.HostedToolCall) -> HostedToolPart:
    return HostedToolPart(
        tool_call_id=call.tool_call_id,
        name=call.name,
        api=call.api,
        input=call.input,
        output=call.output,
        is_error=call.is_error,
        echo=call.echo,
    )


def record_hosted_call(
    store: Store, run_id: str, message_id: str, call: pb.HostedToolCall, fence: RunFence | None
) -> None:
    """A hosted tool's call as a tool call of the run, ended as the provider ended it and
    marked as run by the provider (store thread)."""
    status: ToolCallStatus = "failed" if call.is_error else "completed"
    row = store.create_tool_call(
        run_id,
        call.tool_call_id,
        call.name,
        call.input,
        message_id=message_id,
        status=status,
        fence=fence,
    )
    now = utc_now()
    store.update_tool_call(
        row.id,
        executed_by=ToolRunner.PROVIDER,
        result=call.output,
        is_error=call.is_error,
        started_at=now,
        finished_at=now,
        fence=fence,
    )


def budget_event(
    status: budgets.BudgetStatus,
    *,
    exceeded: bool = False,
    asking: bool = False,
    reason: str | None = None,
) -> ev.BudgetEvent:
    return ev.BudgetEvent(
        scope=status.scope,
        notebook_path=status.notebook_path,
        max_tokens=status.budget.max_tokens,
        max_usd=status.budget.max_usd,
        spent_tokens=status.spent_tokens,
        spent_usd=status.spent_usd,
        remaining_tokens=status.remaining_tokens,
        remaining_usd=status.remaining_usd,
        exceeded=exceeded,
        asking=asking,
        reason=reason,
    )


def message_to_dict(message: Message) -> dict[str, Any]:
    return {
        "id": message.id,
        "session_id": message.session_id,
        "run_id": message.run_id,
        "role": message.role,
        "status": message.status,
        "text": message.text,
        "meta": message.meta,
        "parts": [part_to_dict(p) for p in message.parts],
        "created_at": message.created_at,
        "updated_at": message.updated_at,
    }
