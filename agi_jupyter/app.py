"""The composition root and public Python API (DESIGN.md section 12).

``Agi`` wires config -> store -> providers -> tools -> agents -> runtime once per project, and
every front door (magics, widget, server, CLI) is a thin shell over its methods::

    agi = Agi(project="path/to/folder")
    ses = agi.new_session(agent="general", model="openai:gpt-5-mini")
    res = agi.ask("prompt", session=ses.id)          # RunResult: .text, .run, .messages, .usage
    for event in agi.stream("prompt", session=ses.id):   # section-4 events as dicts
        ...
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agi_jupyter import budget as budgets
from agi_jupyter import notebook
from agi_jupyter.agents import load_agents
from agi_jupyter.app_catalogue import CatalogueApi
from agi_jupyter.app_sessions import SessionsApi
from agi_jupyter.config import (
    Config,
    find_project,
    global_config_dir,
    load_config,
    reference_values,
)
from agi_jupyter.errors import (
    NoPendingApproval,
    RunTerminal,
    UsageError,
)
from agi_jupyter.mcp.config import load_mcp_servers, secrets_of
from agi_jupyter.mcp.servers import McpServers
from agi_jupyter.records import (
    JSON,
    Page,
    Part,
    Run,
    Session,
    TextPart,
    ToolCall,
    is_blank,
    part_to_dict,
    utc_now,
)
from agi_jupyter.research import DeepResearch, ResearchSettings
from agi_jupyter.runtime.bus import EventBus
from agi_jupyter.runtime.deps import ProviderPool, RuntimeDeps
from agi_jupyter.runtime.final_text import afinal_text_only, final_text_only
from agi_jupyter.runtime.follow import afollow_run, follow_run, is_new
from agi_jupyter.runtime.loop_thread import BackgroundLoop
from agi_jupyter.runtime.redacted_store import redacted_store
from agi_jupyter.runtime.result import RunResult as RunResult  # re-exported
from agi_jupyter.runtime.runs import RunManager, TickResult
from agi_jupyter.runtime.store_thread import StoreThread
from agi_jupyter.sdk.acp.settings import AcpAgents
from agi_jupyter.sdk.dispatch import SdkDispatch
from agi_jupyter.sdk.registry import default_adapters
from agi_jupyter.store import Store, create_store
from agi_jupyter.tools import Redactor, ToolRegistry, builtin_tools
from agi_jupyter.tools.policy import with_approved
from agi_jupyter.tools.redact import install_log_redaction

if TYPE_CHECKING:
    from agi_jupyter.tools import AnyTool


CANCEL_WAIT = 10.0  # seconds ``cancel`` waits for the runtime loop before recording the cancel
CONTROL_WAIT = 5.0  # seconds a caller waits for the runtime loop to take a control request


class Agi(SessionsApi, CatalogueApi):
    """One project's runtime: its store, providers, tools, agents and runs."""

    def __init__(
        self,
        project: str | Path | None = None,
        *,
        config: Mapping[str, Any] | None = None,
        traitlets: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        features: frozenset[str] = frozenset(),
        tools: Sequence[AnyTool] = (),
        research: ResearchSettings | None = None,
        notebooks: notebook.NotebookAccess | None = None,
    ) -> None:
        env = os.environ if env is None else env
        self.config: Config = load_config(
            find_project(project or Path.cwd()), overrides=config, traitlets=traitlets, env=env
        )
        self.project = self.config.project
        # How this front door reaches notebooks (the file, an open tab, the RTC document).
        self.notebooks: notebook.NotebookAccess = notebooks or notebook.HeadlessAccess()
        lookup = reference_values(env)  # what ${VAR} in MCP and ACP settings resolve from
        servers = load_mcp_servers(self.project, global_config_dir(env), lookup)
        agents = load_agents(self.project)
        acp = AcpAgents.resolve(self.config, agents, lookup)
        # One redactor for everything stored, streamed, shown or sent to a provider.
        self.redactor = Redactor(
            env,
            extra={**secrets_of(servers), **acp.secrets()},
            credentials=self.config.credentials,
            patterns=self.config.redact_patterns,
            allow=self.config.redact_allow,
        )
        install_log_redaction(self.redactor)
        self.store = self._open_store()
        registry = ToolRegistry(
            [*builtin_tools(), *notebook.notebook_tools(self.notebooks), *tools]
        )
        registry.load_project_tools(self.project, store=self.store)
        # MCP servers' tools (mcp.<server>.<tool>) join the registry when a run can reach them.
        self.mcp = McpServers(servers, registry, self.redactor)
        registry.sources.append(self.mcp)
        self.loop = BackgroundLoop()
        self.bus = EventBus()
        self.deps = RuntimeDeps(
            config=self.config,
            store=self.store,
            registry=registry,
            agents=agents,
            providers=ProviderPool(self.config),
            redactor=self.redactor,
            bus=self.bus,
            loop=self.loop,
            features=features,
            run_context=notebook.NotebookContext(self.notebooks, self.config.project),
            store_factory=self._open_store,
            store_thread=StoreThread(),
        )
        self.runs_manager = RunManager(self.deps)
        # Agent runs go through the session's SDK adapter (``native`` is our own loop).
        adapters = default_adapters(self.runs_manager.agent_loop, acp=acp)
        self.sdk = SdkDispatch(self.deps, adapters)
        self.runs_manager.agent_runner = self.sdk
        self.research_settings = research or ResearchSettings()
        self.deep_research = DeepResearch(self.deps, self.runs_manager, self.research_settings)
        self.runs_manager.executors["deep_research"] = self.deep_research

    def _open_store(self) -> Store:
        """A connection to the project's store, redacting what it writes (the lease keeper's
        thread opens its own)."""
        store = create_store(
            self.project,
            artifact_threshold=self.config.artifact_threshold,
            database_url=self.config.database_url,
            database_password=self.config.database_password,
            project_key=self.config.store_key,
        )
        return redacted_store(store, self.redactor)

    # --- runs ----------------------------------------------------------------------------------

    def submit(
        self,
        prompt: str | Sequence[Part],
        *,
        session: str | Session | None = None,
        model: str | None = None,
        agent: str | None = None,
        run_agent: str | None = None,
        thinking_level: str | None = None,
        max_iterations: int | None = None,
        execution_mode: str = "foreground_stream",
        start: bool = True,
        **run_fields: Any,
    ) -> Run:
        """Queue a run for ``prompt`` and (unless ``start=False``) start executing it here.

        ``agent`` switches the session to that agent; ``run_agent`` uses an agent for this run
        only (the session keeps its own). ``type="deep_research"`` runs use the configured deep
        research model unless ``model`` says otherwise (see ``research``). With
        ``input_message_id=<id of a stored user message>`` and an empty ``prompt`` (``()``),
        the run answers that message."""
        return self._submit(
            prompt,
            session=session,
            model=model,
            agent=agent,
            run_agent=run_agent,
            thinking_level=thinking_level,
            max_iterations=max_iterations,
            execution_mode=execution_mode,
            start=start,
            **run_fields,
        )[0]

    def _submit(
        self,
        prompt: str | Sequence[Part],
        *,
        session: str | Session | None = None,
        model: str | None = None,
        agent: str | None = None,
        run_agent: str | None = None,
        thinking_level: str | None = None,
        max_iterations: int | None = None,
        execution_mode: str = "foreground_stream",
        start: bool = True,
        **run_fields: Any,
    ) -> tuple[Run, int]:
        """``submit``, plus the seq after which the events of this message begin (not 0 when
        the message joined a running turn)."""
        if run_fields.get("type") == "deep_research":
            model = model or f"openai:{self.research_settings.model}"
            execution_mode = "background"
        ses = self._session_for(session, agent=agent, model=model)
        if run_agent is not None and run_agent != ses.agent:
            self._check_agent(run_agent)
            run_fields["agent"] = run_agent
        # Deep research runs are ours (background Responses), whatever the session's SDK.
        research = run_fields.get("type") == "deep_research"
        provider, model_name = self._model_for(ses, model, sdk=not research)
        parts: list[Part] = [TextPart(text=prompt)] if isinstance(prompt, str) else list(prompt)
        if not parts and run_fields.get("input_message_id"):
            pass  # the run answers a user message that is already stored
        elif not parts or all(isinstance(p, TextPart) and is_blank(p.text) for p in parts):
            raise UsageError("the prompt is empty")
        route = self.sdk.route(ses)
        own_run = bool(run_fields or model or agent)  # a run of its own was asked for
        if route == "queue_into" and not own_run and all(isinstance(p, TextPart) for p in parts):
            text = "".join(p.text for p in parts if isinstance(p, TextPart))
            joined = self.sdk.join_running_turn(ses, text)
            if joined is not None:
                return joined
        state: dict[str, Any] = {"input": [part_to_dict(p) for p in parts]} if parts else {}
        if max_iterations is not None:
            if max_iterations < 1:
                raise UsageError("max_iterations must be at least 1")
            state["max_iterations"] = max_iterations
        run = self.store.create_run(
            ses.id,
            provider=provider,
            model=model_name,
            thinking_level=thinking_level or ses.thinking_level,
            execution_mode=execution_mode,
            max_attempts=self.config.max_attempts,
            loop_state=state,
            notebook_path=run_fields.pop("notebook_path", ses.notebook_path),
            **run_fields,
        )
        if route == "interrupt":
            self._interrupt_active_runs(ses.id, keep=run.id)
        if start:
            # (A callback, not a coroutine: no task and no future of its own to start it.)
            self.loop.loop.call_soon_threadsafe(self._start_created, run)
        return run, 0

    def research(
        self,
        prompt: str | Sequence[Part],
        *,
        session: str | Session | None = None,
        model: str | None = None,
        start: bool = True,
        **run_fields: Any,
    ) -> Run:
        """Queue an OpenAI deep research run (DESIGN.md section 8) and return it at once.

        It runs in the background: a background Responses request, completed by webhook or by
        polling, ending in a ``deep_research_report`` artifact and an assistant message that
        references it. ``follow(run.id)`` shows its progress (``run.status`` waiting_webhook,
        processing_webhook, then ``message.completed`` and ``run.final``)."""
        spec = model or f"openai:{self.research_settings.model}"
        if self.config.resolve_model(spec)[0] != "openai":
            raise UsageError(f"deep research runs need an OpenAI model, not {spec!r}")
        return self.submit(
            prompt, session=session, model=spec, start=start, type="deep_research", **run_fields
        )

    def stream(
        self, prompt: str | Sequence[Part], *, final_only: bool = False, **options: Any
    ) -> Iterator[dict[str, Any]]:
        """Start a run and yield its events until ``run.final``, or until the run waits for an
        approval (a ``run.status`` ``waiting_approval`` event is then the last one: see
        ``pending_approvals`` and ``decide``). Stopping early is safe: the run goes on and
        persists. A retried attempt streams its turn again after an ``output.text.reset``
        (drop the text it discards); ``final_only``: hold each turn's deltas until the turn
        is kept, so only the final attempt's text is yielded (``runtime.final_text``)."""
        run, after_seq = self._submit(prompt, **options)
        events = follow_run(self.store, self.bus, run.id, after_seq=after_seq, fresh=is_new(run))
        return final_text_only(events) if final_only else events

    async def astream(
        self, prompt: str | Sequence[Part], *, final_only: bool = False, **options: Any
    ) -> AsyncIterator[dict[str, Any]]:
        """``stream`` for callers on their own asyncio loop."""
        run, after_seq = self._submit(prompt, **options)
        events = afollow_run(self.store, self.bus, run.id, after_seq=after_seq, fresh=is_new(run))
        async for event in afinal_text_only(events) if final_only else events:
            yield event

    def ask(self, prompt: str | Sequence[Part], **options: Any) -> RunResult:
        """Run ``prompt`` to the end and return the answer."""
        run_id = ""
        for event in self.stream(prompt, **options):
            run_id = event["run_id"]
        return self.result(run_id)

    def result(self, run_id: str) -> RunResult:
        run = self.store.get_run(run_id)
        messages = [m for m in self.store.list_messages(run.session_id) if m.run_id == run.id]
        answers = [m for m in messages if m.role == "assistant" and m.text]
        return RunResult(
            text=answers[-1].text if answers else "",
            run=run,
            messages=messages,
            usage={**run.usage, "cost_usd": run.cost_usd},
        )

    def replay(self, run_id: str, *, session: str, **run_fields: Any) -> Run:
        """Repeat the succeeded run ``run_id`` in ``session`` without calling a model: a new run
        marked ``replayed_from`` with the recorded messages, tool calls and events copied (see
        ``runtime.replay``). ``run_fields`` are stored on the new run (``request_hash``,
        ``notebook_path``, ``cell_id``, ``execution_count``...)."""
        from agi_jupyter.runtime.replay import replay_run

        return replay_run(self.deps, run_id, session_id=session, **run_fields)

    def follow(self, run_id: str, *, after_seq: int = 0) -> Iterator[dict[str, Any]]:
        """Replay a run's persisted events after ``after_seq``, then follow it live."""
        self.store.get_run(run_id)
        return follow_run(self.store, self.bus, run_id, after_seq=after_seq)

    def afollow(self, run_id: str, *, after_seq: int = 0) -> AsyncIterator[dict[str, Any]]:
        self.store.get_run(run_id)
        return afollow_run(self.store, self.bus, run_id, after_seq=after_seq)

    def run(self, run_id: str) -> Run:
        return self.store.get_run(run_id)

    def runs(
        self, session_id: str | None = None, *, limit: int = 50, cursor: str | None = None
    ) -> Page[Run]:
        return self.store.list_runs(session_id=session_id, limit=limit, cursor=cursor)

    def cancel(self, run_id: str, *, wait: float = CANCEL_WAIT) -> Run:
        """Cancel a run; returns it (``cancelled`` unless it ended first).

        Waits at most ``wait`` seconds for the runtime loop to stop the run; if the loop is
        busy that long (a blocking import, a synchronous tool), the cancel is recorded in the
        store instead (the run shows ``cancelled`` at once) and the run stops as soon as the
        loop gets to it, or its lease keeper notices."""
        try:
            return self.loop.run(self.runs_manager.cancel(run_id), timeout=wait)
        except TimeoutError:
            return self.runs_manager.request_cancel(run_id)

    def pending_approvals(self, run_id: str) -> list[ToolCall]:
        """The run's tool calls waiting for a person's decision (none decided yet)."""
        return [
            c
            for c in self.store.list_tool_calls(run_id=run_id)
            if c.status == "waiting_approval" and c.approval is None
        ]

    def pending_budget(self, run_id: str) -> JSON | None:
        """The budget question the run waits on (``waiting_approval``, review mode ``ask``):
        ``reason``, ``budgets`` (each: scope, spent, limit), ``input_tokens_at_least`` (the
        bound of the refused call); None when it waits for no budget."""
        run = self.store.get_run(run_id)
        question = (run.loop_state or {}).get("budget_question")
        if run.status != "waiting_approval" or not question or question.get("decision"):
            return None
        return dict(question)

    def decide(
        self,
        run_id: str,
        decision: str,
        *,
        tool_call_id: str | None = None,
        message: str | None = None,
        resume: bool = True,
        budget: Mapping[str, Any] | None = None,
    ) -> list[ToolCall]:
        """Decide the run's tool calls waiting for approval (all, or ``tool_call_id``):
        ``approve``, ``deny`` (``message`` goes to the model with the denial) or
        ``approve_always`` (also approves the tool for the rest of the session). Once no call
        is left undecided the run is queued; ``resume``: and executed here (any other process
        that ticks may take it instead). Returns the calls decided; ``NoPendingApproval`` when
        nothing was waiting.

        A run waiting for a larger budget (its budget question, ``pending_budget``): approve
        with ``budget`` (``{"max_tokens": N, "max_usd": X}``, each given above the session's:
        else ``BudgetNotRaised``) raises the session's budget and queues the run; deny queues
        it to fail ``BUDGET_EXCEEDED``. Returns no calls then."""
        if decision not in ("approve", "deny", "approve_always"):
            raise UsageError(f"decision must be approve, deny or approve_always, not {decision!r}")
        run = self.store.get_run(run_id)
        if tool_call_id is None and self.pending_budget(run_id) is not None:
            self._decide_budget(run, decision, budget, message)
            if resume and self.store.get_run(run_id).status == "queued":
                self.loop.submit(self.runs_manager.resume(run_id))
            return []
        if budget is not None:
            raise NoPendingApproval(f"run {run_id} waits for no budget decision")
        waiting = [
            c
            for c in self.pending_approvals(run_id)
            if tool_call_id is None or c.tool_call_id == tool_call_id
        ]
        if not waiting:
            which = f"tool call {tool_call_id} of run" if tool_call_id else "run"
            raise NoPendingApproval(f"{which} {run_id} has no tool call waiting for a decision")
        if decision == "approve_always":
            session = self.store.get_session(run.session_id)
            tool_config = with_approved(session.tool_config, sorted({c.name for c in waiting}))
            self.store.update_session(session.id, tool_config=tool_config)
        verdict = {"decision": decision, "message": message, "decided_at": utc_now()}
        decided = self.store.decide_tool_calls(run_id, verdict, tool_call_id=tool_call_id)
        if not decided:
            raise NoPendingApproval(f"run {run_id} was decided meanwhile")
        if resume and self.store.get_run(run_id).status == "queued":
            self.loop.submit(self.runs_manager.resume(run_id))
        return decided

    def _decide_budget(
        self, run: Run, decision: str, budget: Mapping[str, Any] | None, message: str | None
    ) -> None:
        """Answer the run's budget question: the session's budget raised first (a decision
        that loses the race below leaves it raised, as asked), then the answer written into
        the question and the run queued, on its version (one decision wins)."""
        state = dict(run.loop_state or {})
        answer: JSON = {"decision": "deny" if decision == "deny" else "approve"}
        if decision != "deny":
            session = self.store.get_session(run.session_id)
            new = budgets.raised(budgets.session_budget(session), budgets.Budget.parse(budget))
            self.update_session(session.id, budget=new.to_dict())
            answer["budget"] = new.to_dict()
        answer.update(message=message, decided_at=utc_now())
        state["budget_question"] = {**state["budget_question"], "decision": answer}
        if not self.store.update_run_if(
            run.id, run.version, status="queued", next_attempt_at=utc_now(), loop_state=state
        ):
            raise NoPendingApproval(f"run {run.id} was decided meanwhile")

    def undo(
        self, run_id: str, *, force: bool = False, turn: int | None = None
    ) -> notebook.UndoResult:
        """Restore the notebooks and files the run changed as they were before it — or before
        its turn ``turn`` (that turn and the later ones are undone; ``notebook.undo``)."""
        return self.loop.run(
            notebook.undo_run(
                self.store, self.notebooks, self.project, run_id, force=force, turn=turn
            )
        )

    def tick(self, *, max_runs: int = 10, max_webhook_events: int = 50) -> TickResult:
        """Process webhook events and due polls of deep research runs, recover stalled runs and
        execute due queued runs (safe in several processes)."""
        return self.loop.run(self._tick(max_runs, max_webhook_events))

    async def atick(self, *, max_runs: int = 10, max_webhook_events: int = 50) -> TickResult:
        """``tick`` for callers on their own asyncio loop (e.g. tornado's)."""
        future = self.loop.submit(self._tick(max_runs, max_webhook_events))
        return await asyncio.wrap_future(future)

    async def _tick(self, max_runs: int, max_webhook_events: int) -> TickResult:
        events, completed = await self.deep_research.tick(
            max_runs=max_runs, max_webhook_events=max_webhook_events
        )
        result = await self.runs_manager.tick(max_runs=max_runs)
        result.webhook_events, result.completed_background = events, completed
        return result

    async def _spawn(self, run_id: str) -> None:
        self.runs_manager.spawn(run_id)

    def _start_created(self, run: Run) -> None:
        """Start driving a run just created (on the loop), without reading it again."""
        self.runs_manager.spawn(run.id, created=run)

    def _interrupt_active_runs(self, session_id: str, *, keep: str) -> None:
        # A run waiting for an approval is interrupted too: the new message replaces the turn.
        active = self.store.list_runs(
            session_id=session_id, statuses=["queued", "running", "waiting_approval"], limit=20
        ).items
        for run in active:
            if run.id != keep:
                with contextlib.suppress(RunTerminal):  # it may have ended meanwhile
                    with contextlib.suppress(TimeoutError):  # a clean SDK stop first, if it can
                        self.loop.run(self.sdk.abort(run.id), timeout=CONTROL_WAIT)
                    self.cancel(run.id)

    # --- lifecycle ---------------------------------------------------------------------------

    def load_default_model(self) -> None:
        """Create the default model's client now (importing its SDK) on the runtime's loop,
        where runs use it, instead of in the first run. Raises what creating it raises (no
        key, a bad setting): callers that only warm up ignore it, the first run reports it."""

        async def load() -> None:
            provider, _model = self.config.resolve_model()
            self.deps.providers.get(provider)

        self.loop.run(load())

    def close(self) -> None:
        """Release the runs still executing here and free resources. A released run goes
        back to the queue (``queued``, due at once, ``loop_state`` kept) and is resumed by
        the next process that ticks, not waiting out the staleness window; only ``cancel``
        ends a run ``cancelled``."""
        if self.loop.in_loop_thread():
            raise RuntimeError("Agi.close() cannot be called from the runtime loop")
        try:
            self.loop.run(self._aclose(), timeout=30)
        finally:
            self.loop.close()
            if self.deps.store_thread is not None:
                self.deps.store_thread.close()
            self.store.close()

    async def _aclose(self) -> None:
        await self.runs_manager.aclose()
        await self.sdk.aclose()
        await self.deps.registry.aclose()  # stops the MCP servers
        await self.deps.providers.aclose()
        await self.notebooks.aclose()

    def __enter__(self) -> Agi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
