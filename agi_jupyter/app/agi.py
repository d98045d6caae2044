"""The composition root and public Python API (DESIGN.md section 12).

``Agi`` wires config -> store -> providers -> tools -> agents -> runtime once per project, and
every front door (magics, widget, server, CLI, MCP server) is a thin shell over its methods:
none of them reaches the store itself. ``Agi`` runs, decides and undoes runs; its sessions,
catalogue and run records are parts it holds (``Sessions``, ``Catalogue``, ``RunRecords``)
and delegates to::

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
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agi_jupyter import budget as budgets
from agi_jupyter import notebook
from agi_jupyter.agents import Agent, load_agents
from agi_jupyter.app import attachments, heartbeat
from agi_jupyter.app.attachments import ImageSource
from agi_jupyter.app.catalogue import Catalogue
from agi_jupyter.app.run_records import RunRecords
from agi_jupyter.app.sessions import RunInput, Sessions
from agi_jupyter.completion.prompt import CompletionRequest
from agi_jupyter.completion.service import Completions, Suggestion
from agi_jupyter.config import (
    Config,
    find_project,
    global_config_dir,
    load_config,
    reference_values,
)
from agi_jupyter.errors import (
    Conflict,
    ErrorCode,
    ModelReadsNoImages,
    NoPendingApproval,
    PathOutsideProject,
    RunTerminal,
    ToolError,
    UsageError,
)
from agi_jupyter.kinds import DecisionDoor, SdkName
from agi_jupyter.mcp.config import load_mcp_servers, secrets_of
from agi_jupyter.mcp.servers import McpServers
from agi_jupyter.mentions import Mention, MentionResolver
from agi_jupyter.notebook import review
from agi_jupyter.notebook.detached import RunningCells
from agi_jupyter.notebook.stale import StaleCell, stale_cells
from agi_jupyter.records import (
    JSON,
    Artifact,
    Compaction,
    ExecutionStatus,
    KernelExecution,
    MentionPart,
    Message,
    Page,
    Part,
    QueueMode,
    Role,
    Run,
    RunEvent,
    Session,
    Task,
    TaskStatus,
    TextPart,
    ToolCall,
    is_blank,
    utc_now,
)
from agi_jupyter.research import DeepResearch, ResearchSettings, WebhookDelivery, store_delivery
from agi_jupyter.run_state import BudgetDecision, ExternalCall, LoopState
from agi_jupyter.run_state_codec import question_to_json
from agi_jupyter.runtime.bus import EventBus
from agi_jupyter.runtime.deps import ProviderPool, RuntimeDeps
from agi_jupyter.runtime.final_text import afinal_text_only, final_text_only
from agi_jupyter.runtime.follow import RunCursor, SessionItem, SessionMark, is_new
from agi_jupyter.runtime.history import HistoryView
from agi_jupyter.runtime.loop_thread import BackgroundLoop
from agi_jupyter.runtime.redacted_store import redacted_store
from agi_jupyter.runtime.result import RunResult
from agi_jupyter.runtime.runs import RunManager, TickResult
from agi_jupyter.runtime.store_thread import StoreThread
from agi_jupyter.runtime.toolcalls import preview_call
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
# Seconds between reads of an external call's run driven by another process (it claimed it first).
EXTERNAL_CALL_POLL = 0.05
UNDER_WAY = frozenset({"queued", "running"})
CONTROL_WAIT = 5.0  # seconds a caller waits for the runtime loop to take a control request


ONE_SHOT_TITLE = "one-shot"


class Agi:
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
        # The cells notebook.run left running, by handle (notebook.wait / notebook.interrupt).
        self.executions_running = notebook.Executions()
        notebook_tools = notebook.notebook_tools(self.notebooks, self.executions_running)
        registry = ToolRegistry([*builtin_tools(), *notebook_tools, *tools])
        registry.load_project_tools(self.project, store=self.store)
        # MCP servers' tools (mcp.<server>.<tool>) join the registry when a run can reach them.
        self.mcp = McpServers(servers, registry, self.redactor, self.project)
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
        self.runs_manager = RunManager(self.deps, self.executions_running)
        # Agent runs go through the session's SDK adapter (``native`` is our own loop).
        adapters = default_adapters(self.runs_manager.agent_loop, acp=acp)
        self.sdk = SdkDispatch(self.deps, adapters)
        self.runs_manager.agent_runner = self.sdk
        self.research_settings = research or ResearchSettings()
        self.deep_research = DeepResearch(self.deps, self.runs_manager, self.research_settings)
        self.runs_manager.executors["deep_research"] = self.deep_research
        self._sessions = Sessions(
            self.config, self.store, agents, self.sdk, self.bus, self.redactor
        )
        self._catalogue = Catalogue(
            self.config,
            self.store,
            agents,
            registry,
            features,
            self.sdk,
            self.mcp,
            self.loop,
        )
        self._records = RunRecords(self.store, self.bus)
        self.completions = Completions(self.deps)
        self.mentions = MentionResolver(self.project, self.notebooks, self.mcp)

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
        images: Sequence[ImageSource] = (),
        **run_fields: Any,
    ) -> Run:
        """Queue a run for ``prompt`` and (unless ``start=False``) start executing it here.

        ``agent`` switches the session to that agent; ``run_agent`` uses an agent for this run
        only (the session keeps its own). ``type="deep_research"`` runs use the configured deep
        research model unless ``model`` says otherwise (see ``research``). With
        ``input_message_id=<id of a stored user message>`` and an empty ``prompt`` (``()``),
        the run answers that message. ``images``: images attached to the prompt (paths or
        bytes; PNG, JPEG, GIF or WebP), for a model that reads images (``app.attachments``)."""
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
            images=images,
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
        images: Sequence[ImageSource] = (),
        **run_fields: Any,
    ) -> tuple[Run, int]:
        """``submit``, plus the seq after which the events of this message begin (not 0 when
        the message joined a running turn)."""
        if run_fields.get("type") == "deep_research":
            model = model or f"openai:{self.research_settings.model}"
            execution_mode = "background"
        ses = self._sessions.session_for(session, agent=agent, model=model)
        if run_agent is not None and run_agent != ses.agent:
            self._sessions.check_agent(run_agent)
            run_fields["agent"] = run_agent
        # Deep research runs are ours (background Responses), whatever the session's SDK.
        research = run_fields.get("type") == "deep_research"
        provider, model_name = self._sessions.model_for(ses, model, sdk=not research)
        parts: list[Part] = [TextPart(text=prompt)] if isinstance(prompt, str) else list(prompt)
        parts += attachments.image_parts(images)
        if not parts and run_fields.get("input_message_id"):
            pass  # the run answers a user message that is already stored
        elif not parts or all(isinstance(p, TextPart) and is_blank(p.text) for p in parts):
            raise UsageError("the prompt is empty")
        if attachments.has_images(parts):
            self._check_images(ses, provider, model_name)
            parts = attachments.stored_images(self.store, ses.id, parts)
        route = self.sdk.route(ses)
        own_run = bool(run_fields or model or agent)  # a run of its own was asked for
        if route == "queue_into" and not own_run and all(isinstance(p, TextPart) for p in parts):
            text = "".join(p.text for p in parts if isinstance(p, TextPart))
            joined = self.sdk.join_running_turn(ses, text)
            if joined is not None:
                return joined
        if max_iterations is not None and max_iterations < 1:
            raise UsageError("max_iterations must be at least 1")
        state = LoopState(input=tuple(parts), max_iterations=max_iterations)
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

    def _check_images(self, session: Session, provider: str, model: str) -> None:
        """Images go to a native session's model that reads them, else are refused."""
        if session.sdk != SdkName.NATIVE:
            raise ModelReadsNoImages(
                f"a session on the {session.sdk} SDK is sent text only: attach images in a "
                "native session"
            )
        attachments.check_vision(provider, model, self.config.model_vision)

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
        events = self._records.follow(run.id, after_seq=after_seq, fresh=is_new(run))
        return final_text_only(events) if final_only else events

    async def astream(
        self, prompt: str | Sequence[Part], *, final_only: bool = False, **options: Any
    ) -> AsyncIterator[dict[str, Any]]:
        """``stream`` for callers on their own asyncio loop."""
        run, after_seq = self._submit(prompt, **options)
        events = self._records.afollow(run.id, after_seq=after_seq, fresh=is_new(run))
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
        return self._records.follow(run_id, after_seq=after_seq)

    def afollow(self, run_id: str, *, after_seq: int = 0) -> AsyncGenerator[dict[str, Any], None]:
        self.store.get_run(run_id)
        return self._records.afollow(run_id, after_seq=after_seq)

    def run(self, run_id: str) -> Run:
        return self.store.get_run(run_id)

    def runs(
        self, session_id: str | None = None, *, limit: int = 50, cursor: str | None = None
    ) -> Page[Run]:
        return self.store.list_runs(session_id=session_id, limit=limit, cursor=cursor)

    def cancel(self, run_id: str, *, wait: float = CANCEL_WAIT, interrupt: bool = False) -> Run:
        """Cancel a run; returns it (``cancelled`` unless it ended first).

        Waits at most ``wait`` seconds for the runtime loop to stop the run; if the loop is
        busy that long (a blocking import, a synchronous tool), the cancel is recorded in the
        store instead (the run shows ``cancelled`` at once) and the run stops as soon as the
        loop gets to it, or its lease keeper notices.

        Cells the run's ``notebook.run`` started are left running in their kernel (under
        their handle, ``running_cells``) unless ``interrupt``: then the cell running now in
        each is interrupted (those this process started: the one that runs the run)."""
        try:
            run = self.loop.run(self.runs_manager.cancel(run_id), timeout=wait)
        except TimeoutError:
            run = self.runs_manager.request_cancel(run_id)
        if interrupt:
            self.interrupt_cells(run_id)
        return run

    def interrupt_cells(self, run_id: str) -> list[RunningCells]:
        """Interrupt the cell running now in each of the run's ``notebook.run`` jobs still
        running in this process; what was running, ``interrupted`` when a cell was."""
        return self.loop.run(self.executions_running.interrupt_run(run_id))

    def running_cells(self, run_id: str) -> list[RunningCells]:
        """The run's ``notebook.run`` cells still running in this process (a cancelled run
        leaves them running)."""
        return self.loop.run(self._running_cells(run_id))

    async def _running_cells(self, run_id: str) -> list[RunningCells]:
        return self.executions_running.of_run(run_id)  # (read on the loop that changes it)

    def pending_approvals(self, run_id: str) -> list[ToolCall]:
        """The run's tool calls waiting for a person's decision (none decided yet)."""
        return [
            c
            for c in self._records.tool_calls(run_id)
            if c.status == "waiting_approval" and c.approval is None
        ]

    def approval_diffs(self, run_id: str) -> dict[str, str | None]:
        """Per tool call waiting for a decision: the unified diff of what it would change
        (a notebook cell, a file), computed now without applying it; None when it cannot
        tell (``Tool.preview``)."""
        calls = self.pending_approvals(run_id)
        if not calls:
            return {}
        run = self.store.get_run(run_id)
        session = self.store.get_session(run.session_id)

        async def previews() -> dict[str, str | None]:
            return {
                c.tool_call_id: await preview_call(
                    self.deps, run, session, c.tool_call_id, c.name, c.args
                )
                for c in calls
            }

        return self.loop.run(previews())

    def pending_budget(self, run_id: str) -> JSON | None:
        """The budget question the run waits on (``waiting_approval``, review mode ``ask``):
        ``reason``, ``budgets`` (each: scope, spent, limit), ``input_tokens_at_least`` (the
        bound of the refused call); None when it waits for no budget."""
        run = self.store.get_run(run_id)
        question = None if run.loop_state is None else run.loop_state.budget_question
        if run.status != "waiting_approval" or question is None or question.decision:
            return None
        return question_to_json(question)

    def decide(
        self,
        run_id: str,
        decision: str,
        *,
        tool_call_id: str | None = None,
        message: str | None = None,
        resume: bool = True,
        budget: Mapping[str, Any] | None = None,
        door: DecisionDoor = DecisionDoor.REST,
        by: str | None = None,
    ) -> list[ToolCall]:
        """Decide the run's tool calls waiting for approval (all, or ``tool_call_id``):
        ``approve``, ``deny`` (``message`` goes to the model with the denial) or
        ``approve_always`` (also approves the tool for the rest of the session). Once no call
        is left undecided the run is queued; ``resume``: and executed here (any other process
        that ticks may take it instead). ``door`` and ``by`` (a user name) say where and by
        whom, stored with the decision and carried by ``approval.decided``. Returns the calls
        decided; ``NoPendingApproval`` when nothing was waiting, naming who decided first
        when another door won the race. ``approve_always`` for one call also decides the
        run's other waiting calls of that tool (door ``policy``: the session now allows it).

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
            raise NoPendingApproval(self._already_decided(run_id, tool_call_id))
        if decision == "approve_always":
            session = self.store.get_session(run.session_id)
            tool_config = with_approved(session.tool_config, sorted({c.name for c in waiting}))
            self.store.update_session(session.id, tool_config=tool_config)
        verdict = {
            "decision": decision,
            "message": message,
            "decided_at": utc_now(),
            "door": DecisionDoor(door),
            "by": by,
        }
        decided = self.store.decide_tool_calls(run_id, verdict, tool_call_id=tool_call_id)
        if not decided:
            raise NoPendingApproval(self._already_decided(run_id, tool_call_id))
        if decision == "approve_always" and tool_call_id is not None:
            names = {c.name for c in decided}
            by_policy = {"decision": "approve", "decided_at": utc_now(), "door": "policy"}
            for other in self.pending_approvals(run_id):
                if other.name in names:
                    self.store.decide_tool_calls(run_id, by_policy, tool_call_id=other.tool_call_id)
        if resume and self.store.get_run(run_id).status == "queued":
            self.loop.submit(self.runs_manager.resume(run_id))
        return decided

    def _already_decided(self, run_id: str, tool_call_id: str | None) -> str:
        """Why a decision found nothing to decide: the calls were decided already (by whom,
        where: the door that won a race), or the run never waited."""
        calls = [
            c
            for c in self.store.list_tool_calls(run_id=run_id)
            if c.approval and (tool_call_id is None or c.tool_call_id == tool_call_id)
        ]
        which = f"tool call {tool_call_id} of run" if tool_call_id else "run"
        none = f"{which} {run_id} has no tool call waiting for a decision"
        if not calls:
            return none
        last = calls[-1]
        return f"{none}: it was decided already: {last.name} {last.decided}"

    def _decide_budget(
        self, run: Run, decision: str, budget: Mapping[str, Any] | None, message: str | None
    ) -> None:
        """Answer the run's budget question: the session's budget raised first (a decision
        that loses the race below leaves it raised, as asked), then the answer written into
        the question and the run queued, on its version (one decision wins)."""
        raised: JSON | None = None
        if decision != "deny":
            session = self.store.get_session(run.session_id)
            new = budgets.raised(budgets.session_budget(session), budgets.Budget.parse(budget))
            self.update_session(session.id, budget=new.to_dict())
            raised = new.to_dict()
        answer = BudgetDecision(
            "deny" if decision == "deny" else "approve", utc_now(), raised, message
        )
        state = (run.loop_state or LoopState()).answered(answer)
        if not self.store.update_run_if(
            run.id, run.version, status="queued", next_attempt_at=utc_now(), loop_state=state
        ):
            raise NoPendingApproval(f"run {run.id} was decided meanwhile")

    def undo(
        self,
        run_id: str,
        *,
        force: bool | Sequence[str] = False,
        turn: int | None = None,
        changes: Sequence[str] | None = None,
        redo: bool = False,
    ) -> notebook.UndoResult:
        """Undo the run's changes by a merge per cell and file (``notebook.undo``): all of
        them, those of turns ``turn`` on, or the ``changes`` named (record ids of
        ``changes()``). A cell or file changed since is a conflict left as it is, unless
        ``force`` (True, or the cell ids / paths / change ids to force). ``redo``: make
        undone changes again."""
        return self.loop.run(
            notebook.undo_run(
                self.store,
                self.notebooks,
                self.project,
                run_id,
                force=force,
                turn=turn,
                changes=changes,
                redo=redo,
            )
        )

    def redo(
        self,
        run_id: str,
        *,
        force: bool | Sequence[str] = False,
        turn: int | None = None,
        changes: Sequence[str] | None = None,
    ) -> notebook.UndoResult:
        """Make the run's undone changes (or those named) again: ``undo(..., redo=True)``."""
        return self.undo(run_id, force=force, turn=turn, changes=changes, redo=True)

    def changes(self, run_id: str) -> list[notebook.ChangeRecord]:
        """The run's changes, one per cell of a notebook or per file, with their diffs and
        whether each is undone (``notebook.changes``)."""
        self.store.get_run(run_id)
        return notebook.run_changeset(self.store, run_id)

    def keep(
        self, run_id: str, changes: Sequence[str] | None = None
    ) -> list[notebook.ChangeRecord]:
        """Keep the run's changes (the ``changes`` named, else all): the user accepted them
        after review, so they are no longer shown for review (``notebook.review``). Returns
        the run's changes as they are now."""
        run = self.store.get_run(run_id)
        if not run.is_terminal:
            raise Conflict(
                f"run {run_id} is still {run.status}; keep its changes once it ended",
                code=ErrorCode.RUN_ACTIVE,
            )
        return review.keep_changes(self.store, run_id, changes)

    def changes_at(self, path: str, *, to_review: bool = False) -> list[notebook.ChangeRecord]:
        """The changes ended runs made to one notebook or file (relative to the project);
        ``to_review``: only those neither undone nor kept."""
        return review.changes_at(self.store, path, to_review=to_review)

    def undo_state(self, run_id: str) -> review.UndoState:
        """``undone`` / ``partly undone`` / ``""``: whether the run's changes were undone."""
        if not self.store.list_changes(run_id=run_id):
            return ""
        return review.undo_state(notebook.run_changeset(self.store, run_id))

    def protect_cell(self, path: str, cell_id: str, protected: bool = True) -> bool:
        """Mark the cell ``cell_id`` of the notebook ``path`` protected (agents may not run,
        edit or delete it), or not; whether it changed (``notebook.protect``)."""
        from agi_jupyter.notebook.protect import set_protected

        coro = set_protected(self.notebooks, self.project, path, cell_id, protected)
        return self.loop.run(coro)

    def executions(self, path: str, *, limit: int | None = None) -> list[KernelExecution]:
        """The ledger of the notebook ``path``'s kernel executions, oldest first (the last
        ``limit``): the user's, ``notebook.run``'s and the ``python`` tool's, with who ran
        each (``store/executions.py``). A path that names no notebook of the project (no
        such folder, a name the file system refuses) has none; one outside the project is
        ``PathOutsideProject``."""
        try:
            key = self._ledger_path(path)
        except PathOutsideProject:
            raise
        except (ToolError, OSError):
            return []
        return self.store.list_executions(key, limit=limit)

    def stale_cells(self, path: str) -> list[StaleCell]:
        """The code cells of the notebook ``path`` whose outputs may be out of date, from the
        ledger: changed since they last ran, or reading a name a later execution of another
        cell re-bound (``notebook.stale`` says the rule). None for a notebook the project does
        not have; one outside the project is ``PathOutsideProject``."""
        try:
            target = self.notebooks.locate(self.project, path)
            content = self.loop.run(self._read_notebook(target))
        except PathOutsideProject:
            raise
        except (ToolError, OSError):
            return []
        return stale_cells(content, self.store.list_executions(target.shown))

    async def _read_notebook(self, target: notebook.NotebookTarget) -> dict[str, Any]:
        return (await (await self.notebooks.open(target)).read()).notebook

    def record_execution(
        self,
        path: str,
        *,
        cell_id: str | None,
        source: str,
        started_at: str,
        status: ExecutionStatus,
        execution_count: int | None = None,
        summary: str | None = None,
    ) -> KernelExecution:
        """Record an execution the user ran (the kernel extension reports each cell)."""
        started = self.store.start_execution(
            self._ledger_path(path),
            origin="user",
            cell_id=cell_id,
            source_hash=notebook.source_hash(source),
            started_at=started_at,
        )
        return self.store.end_execution(
            started.id, status=status, execution_count=execution_count, summary=summary
        )

    def _ledger_path(self, path: str) -> str:
        """A notebook's path as the ledger keys it (as ``notebook.run`` names it)."""
        return self.notebooks.locate(self.project, path).shown

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

    def _active_runs(self, session_id: str, *, limit: int) -> list[Run]:
        """The session's runs under way: queued, running, or waiting (a decision, cells)."""
        statuses = ["queued", "running", "waiting_approval", "waiting_execution"]
        return self.store.list_runs(session_id=session_id, statuses=statuses, limit=limit).items

    def _interrupt_active_runs(self, session_id: str, *, keep: str) -> None:
        # A run waiting for an approval is interrupted too: the new message replaces the turn.
        for run in self._active_runs(session_id, limit=20):
            if run.id != keep:
                with contextlib.suppress(RunTerminal):  # it may have ended meanwhile
                    with contextlib.suppress(TimeoutError):  # a clean SDK stop first, if it can
                        self.loop.run(self.sdk.abort(run.id), timeout=CONTROL_WAIT)
                    self.cancel(run.id)

    # --- sessions (``Sessions``) ---------------------------------------------------------------

    def new_session(
        self,
        *,
        agent: str | None = None,
        model: str | None = None,
        title: str | None = None,
        system_prompt: str | None = None,
        thinking_level: str | None = None,
        queue_mode: QueueMode = "queue",
        notebook_path: str | None = None,
        tools: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        sdk: str | None = None,
        review_mode: str | None = None,
        permissions: Mapping[str, str] | None = None,
        budget: Mapping[str, Any] | None = None,
        hosted_tools: Sequence[str] = (),
        vector_store_ids: Sequence[str] = (),
    ) -> Session:
        """A new session. ``sdk`` picks the agent SDK that runs it (``native``, ``claude``,
        ``codex``, ``acp``; default: the agent's, else the configured ``default_sdk``).
        ``review_mode``: ``ask``, ``auto-edit`` or ``auto`` (default: the configured
        ``review_mode``, see README "Tool policy and review modes"); ``permissions``: the
        session's tool rules (name or glob -> allow | ask | deny), over the agent's.
        ``budget`` (``{"max_tokens": N, "max_usd": X}``) caps what its runs may spend
        (default: ``budgets.session`` of the config; see ``agi_jupyter.budget``).
        ``hosted_tools``: the provider's own tools its runs may use (``kinds.HostedTool``:
        ``web_search``, ``file_search``, ``code_interpreter``, ``code_execution``; default
        none), each one the model's provider offers (else ``HostedToolUnsupported``);
        ``vector_store_ids``: what ``file_search`` searches (required with it)."""
        return self._sessions.new(
            agent=agent,
            model=model,
            title=title,
            system_prompt=system_prompt,
            thinking_level=thinking_level,
            queue_mode=queue_mode,
            notebook_path=notebook_path,
            tools=tools,
            metadata=metadata,
            sdk=sdk,
            review_mode=review_mode,
            permissions=permissions,
            budget=budget,
            hosted_tools=hosted_tools,
            vector_store_ids=vector_store_ids,
        )

    def session(self, session_id: str) -> Session:
        return self._sessions.get(session_id)

    def update_session(
        self,
        session_id: str,
        *,
        agent: str | None = None,
        model: str | None = None,
        tools: Sequence[str] | None = None,
        review_mode: str | None = None,
        permissions: Mapping[str, str] | None = None,
        hosted_tools: Sequence[str] | None = None,
        vector_store_ids: Sequence[str] | None = None,
        **fields: Any,
    ) -> Session:
        """Change a session (title, agent, sdk, model, system_prompt, thinking_level, queue_mode,
        notebook_path, metadata, extra tools, review mode, tool permissions — replaced whole,
        hosted tools and vector store ids — replaced whole, budget — None removes it); session
        streams see ``session.updated``."""
        return self._sessions.update(
            session_id,
            agent=agent,
            model=model,
            tools=tools,
            review_mode=review_mode,
            permissions=permissions,
            hosted_tools=hosted_tools,
            vector_store_ids=vector_store_ids,
            **fields,
        )

    def delete_session(self, session_id: str) -> None:
        """Cancel the session's active runs, then delete it with everything it holds."""
        for run in self._sessions.active_runs(session_id):
            with contextlib.suppress(RunTerminal):
                self.cancel(run.id)
        self._sessions.delete(session_id)

    def sessions(self, *, limit: int = 50, cursor: str | None = None) -> Page[Session]:
        return self._sessions.page(limit=limit, cursor=cursor)

    def history(
        self, session_id: str, *, view: HistoryView = "simple", lazy: bool = True
    ) -> list[Message]:
        """A session's messages: ``simple`` (user and assistant text parts) or ``full``.

        ``lazy`` (the default): each message's ``meta`` and ``parts`` are decoded when first
        read, which makes reading roles and texts about as cheap as the SQL query; a caller
        that reads every message's parts pays about twice the decoding of ``lazy=False``
        (benchmarks/README.md, history_floor.py)."""
        return self._sessions.history(session_id, view=view, lazy=lazy)

    def messages(
        self, session_id: str, *, after_id: str | None = None, limit: int | None = None
    ) -> list[Message]:
        """A session's stored messages in order, with every part (the canonical history, not
        a view of it): after the message ``after_id`` (``NotFound`` if the session has no
        such message), at most ``limit``."""
        return self._sessions.messages(session_id, after_id=after_id, limit=limit)

    def append_message(self, session_id: str, parts: Sequence[Part]) -> Message:
        """Append a user message to a session without starting a run (seed 001 §11.8.3): a
        later run answers it (``submit((), input_message_id=...)``, or by default the last
        user message). Refused (``RUN_ACTIVE``) while a run of the session is under way: the
        message would land between that run's tool calls and their results."""
        active = self._active_runs(session_id, limit=1)
        if active:
            raise Conflict(
                f"run {active[0].id} of the session is {active[0].status}: wait for it or "
                "cancel it before appending a message",
                code=ErrorCode.RUN_ACTIVE,
            )
        stored = attachments.stored_images(self.store, session_id, parts)
        return self.store.add_message(session_id, "user", stored)

    def compact(self, session_id: str) -> Compaction | None:
        """Fold the session's messages before its last turn into a summary its model writes
        (``runtime/compaction.py``), sent in their place from the next request on; the
        history itself is not changed. None: there was nothing to fold. A failed model call
        raises its ``ProviderError``."""
        session = self.store.get_session(session_id)
        compactor = self.runs_manager.agent_loop.compactor
        outcome = self.loop.run(compactor.compact_session(session))
        return None if outcome is None else outcome.record

    def context(self, session_id: str) -> dict[str, Any]:
        """How full the session's context is: the gauge of its last model request
        (``gauge``: estimated ``tokens``, the ``window``, ``compacts_at``, the history
        ``messages`` sent and those ``left_out``; None before the first), how many
        ``compactions`` it has, and its input tokens with those read from a prompt cache."""
        session = self.store.get_session(session_id)
        messages = self.store.list_messages(session_id, lazy=True)
        gauge = next(
            (
                m.meta["context"]
                for m in reversed(messages)
                if m.role == "assistant" and m.meta.get("context")
            ),
            None,
        )
        return {
            "session_id": session.id,
            "gauge": gauge,
            "compactions": len(self.store.list_compactions(session_id)),
            "input_tokens": session.input_tokens,
            "cached_input_tokens": session.cached_input_tokens,
        }

    def compactions(self, session_id: str) -> list[Compaction]:
        """The session's compactions, oldest first (the last one is in use)."""
        self.store.get_session(session_id)
        return self.store.list_compactions(session_id)

    def run_input(
        self,
        session_id: str,
        *,
        input: str | None = None,
        input_message_id: str | None = None,
    ) -> RunInput:
        """What a new run of the session answers: the prompt ``input``, the stored user
        message ``input_message_id``, or (neither given) the session's last message when it
        is a user message nobody answered (else ``NoUserMessage``). Pass the result's
        ``prompt`` and ``fields`` to ``submit`` or ``research``."""
        return self._sessions.run_input(session_id, input, input_message_id)

    def notebook_budgets(self) -> dict[str, JSON]:
        """Every notebook budget by path: the config's, with those set from a front door
        (stored, ``set_notebook_budget``) over them."""
        return self._sessions.notebook_budgets()

    def set_notebook_budget(self, path: str, budget: Mapping[str, Any] | None) -> JSON | None:
        """Set the budget of the notebook ``path`` (relative to the project) for every process:
        stored, it wins over ``budgets.notebooks`` of the config. None (or empty) removes the
        stored one (a config budget then applies again). Returns the stored budget."""
        return self._sessions.set_notebook_budget(path, budget)

    def budget_statuses(self, session_id: str) -> list[budgets.BudgetStatus]:
        """The budgets that apply to the session's runs (its own, then its notebook's), each
        with what was spent against it."""
        return self._sessions.budget_statuses(session_id)

    def notebook_budget(self, path: str) -> budgets.BudgetStatus | None:
        """The budget of the notebook ``path`` (the stored one, else the config's) with what
        the notebook's sessions spent; None when no budget applies to it."""
        return self._sessions.notebook_budget(path)

    # --- conversations started for a caller -----------------------------------------------------

    def one_shot(
        self,
        prompt: str | None = None,
        *,
        messages: Sequence[tuple[Role, str]] | None = None,
        agent: str | None = None,
        model: str | None = None,
        sdk: str | None = None,
        system_prompt: str | None = None,
        thinking_level: str | None = None,
        max_iterations: int | None = None,
    ) -> Run:
        """Answer ``prompt``, or the short conversation ``messages`` ((role, text) pairs, at
        least one from the user), in a fresh session flagged ``metadata.one_shot``: the turns
        are stored in it and a run answering the last user turn is started and returned (the
        assistant turns after that one reach the model as they are: the start of its answer,
        which Anthropic models continue)."""
        if (prompt is None) == (messages is None):
            raise UsageError("give either prompt or messages")
        turns: list[tuple[Role, str]] = [("user", prompt)] if prompt is not None else []
        turns = turns or list(messages or [])
        last_user = max((i for i, (role, _) in enumerate(turns) if role == "user"), default=None)
        if last_user is None:
            raise UsageError("the conversation has no user turn to answer")
        session = self.new_session(
            agent=agent,
            model=model,
            sdk=sdk,
            title=ONE_SHOT_TITLE,
            system_prompt=system_prompt,
            metadata={"one_shot": True},
        )
        if last_user == len(turns) - 1:
            self._sessions.add_turns(session.id, turns[:-1])
            return self.submit(
                turns[-1][1],
                session=session,
                thinking_level=thinking_level,
                max_iterations=max_iterations,
            )
        stored = self._sessions.add_turns(session.id, turns)
        return self.submit(
            (),
            session=session,
            input_message_id=stored[last_user].id,
            thinking_level=thinking_level,
            max_iterations=max_iterations,
        )

    def acomplete(self, request: CompletionRequest) -> AsyncGenerator[Suggestion, None]:
        """An inline completion (not a run: no session; counted in stats and budgets): the
        insertion as it grows, then the final one (``done``). Stop reading to cancel it: the
        model request is closed at once."""
        return self.loop.aiterate(self.completions.stream(request))

    def mention_parts(
        self, mentions: Sequence[Mention], summaries: Mapping[Mention, str] | None = None
    ) -> list[MentionPart]:
        """The context parts of a user message's ``@`` mentions (``app.mentions``): sent and
        stored with its text, bounded in tokens. ``summaries``: each ``@var`` mention's
        description, made by whoever holds the kernel."""
        return self.loop.run(self.mentions.parts(mentions, summaries or {}))

    def mention_files(self, query: str = "", *, limit: int = 50) -> list[str]:
        """Project files an ``@file`` mention may name, whose path holds ``query``."""
        return self.mentions.files(query, limit=limit)

    def completion_settings(self) -> dict[str, Any]:
        """What an editor needs to know before it asks: enabled, the model, the debounce,
        and the languages and notebooks it is turned off for."""
        settings = self.config.completion
        provider, model = self.completions.model_spec()
        return {
            "enabled": settings.enabled,
            "model": f"{provider}:{model}",
            "debounce_ms": settings.debounce_ms,
            "max_output_tokens": settings.max_output_tokens,
            "disabled_languages": sorted(k for k, on in settings.languages.items() if not on),
            "disabled_notebooks": sorted(k for k, on in settings.notebooks.items() if not on),
        }

    def start_due_tasks(self, *, within: float, now: datetime | None = None) -> list[Run]:
        """The heartbeat (``app.heartbeat``): each pending task due within ``within`` seconds
        becomes ``in_progress`` and is handed to a background run in a new session titled
        after it, with the ``tasks`` tool and every due task in its prompt. Returns the
        runs started."""
        now = now or datetime.now(UTC)
        due = self.store.due_tasks(before=heartbeat.due_before(now, within))
        runs = []
        for task in [t for t in due if t.status == "pending"]:
            self.store.update_task(task.id, status="in_progress")
            session = self.new_session(
                title=f"Heartbeat: {task.title}"[:200],
                tools=heartbeat.HEARTBEAT_TOOLS,
                metadata={"heartbeat": {"task_id": task.id, "due_at": task.due_at}},
            )
            prompt = heartbeat.heartbeat_prompt(task, due, now)
            runs.append(self.submit(prompt, session=session, execution_mode="background"))
        return runs

    def external_session(self, agent: str, client: str, *, protocol: str = "mcp") -> Session:
        """A new session recording the calls the external client ``client`` (speaking
        ``protocol``) makes of ``agent``'s tools: SDK ``external`` (no model of ours),
        ``metadata.external`` (protocol, client)."""
        return self._sessions.external(agent, client, protocol=protocol)

    async def acall_tool(self, session_id: str, *, client: str, call: ExternalCall) -> Run:
        """Record an external client's call of one tool (``call``: id, name, arguments) as a
        run of the external session ``session_id`` (provider ``mcp``, model: the client)
        and execute it on the runtime loop (the ``external`` SDK adapter: the agent's gating,
        confinement, timeouts, redaction). Returns the run once it ended; its tool call
        (``tool_calls``) holds the outcome. Never retried by a tick: the caller waits."""
        from agi_jupyter.sdk.external import PROVIDER

        run = await asyncio.to_thread(
            self.store.create_run,
            session_id,
            provider=PROVIDER,
            model=client,
            execution_mode="background",
            max_attempts=1,  # never repeated by a tick: nobody would be waiting for it
            loop_state=LoopState(external_call=call),
        )

        async def execute() -> Run:  # on the runtime loop, until the run ends
            ended = await self.runs_manager.spawn(run.id)
            # A tick woken by the new run (PostgreSQL's NOTIFY) may have claimed it first:
            # then this process drives it in the tick's task, or another process does.
            while ended.status in UNDER_WAY:
                task = self.runs_manager.local.task(run.id)
                if task is not None and not task.done():
                    ended = await asyncio.shield(task)
                else:
                    await asyncio.sleep(EXTERNAL_CALL_POLL)
                    ended = await asyncio.to_thread(self.store.get_run, run.id)
            return ended

        return await asyncio.wrap_future(self.loop.submit(execute()))

    # --- run records (``RunRecords``) ---------------------------------------------------------

    def run_events(self, run_id: str, *, after_seq: int = 0) -> list[RunEvent]:
        """The run's stored events after ``after_seq``, in order (a replay; ``follow`` goes
        on live)."""
        return self._records.events(run_id, after_seq=after_seq)

    def tool_calls(self, run_id: str) -> list[ToolCall]:
        """The run's tool calls, in order, with their status, approval and result."""
        return self._records.tool_calls(run_id)

    def artifacts(self, run_id: str) -> list[Artifact]:
        """The run's artifacts (file diffs, large outputs, reports), metadata only."""
        return self._records.artifacts(run_id)

    def artifact(self, artifact_id: str) -> Artifact:
        """An artifact's metadata (and its inline ``data``); ``NotFound`` if there is none."""
        return self._records.artifact(artifact_id)

    def artifact_content(self, artifact_id: str) -> bytes:
        """An artifact's content, whole."""
        return self._records.artifact_content(artifact_id)

    def replayable_run(self, request_hash: str, *, notebook_path: str | None) -> Run | None:
        """The newest succeeded run with this request hash started from the notebook
        ``notebook_path`` (a recorded answer a notebook re-run may ``replay``)."""
        return self._records.replayable(request_hash, notebook_path=notebook_path)

    def has_active_runs(self) -> bool:
        """Whether a run of the project has not ended yet, in any process."""
        return self._records.any_active()

    def session_events(
        self, session_id: str, *, after_cursor: str | None = None, limit: int = 500
    ) -> list[tuple[str, RunEvent]]:
        """The stored events of every run of the session in the order they became visible,
        as (cursor, event) pairs after the store's opaque ``after_cursor`` (a cursor the
        store does not take is a ``UsageError``)."""
        return self._records.session_events(session_id, after_cursor=after_cursor, limit=limit)

    def afollow_batches(
        self, run_id: str, *, after_seq: int = 0, fresh: bool = False
    ) -> AsyncGenerator[list[dict[str, Any]], None]:
        """``afollow`` a batch at a time (the events available together, for one write).
        ``fresh``: the run was just created here (``follow.is_new``): no store read to start
        following. Does not check that the run exists."""
        return self._records.afollow_batches(run_id, after_seq=after_seq, fresh=fresh)

    def afollow_session(
        self,
        session_id: str,
        *,
        after: SessionMark | None = None,
        idle_every: float = 15.0,
    ) -> AsyncGenerator[SessionItem | None, None]:
        """Follow every run of the session live, wherever it executes, as (mark, event)
        items (``None``: subscribed, or idle for ``idle_every`` seconds); resume right after
        an event with its ``mark`` as ``after`` (``runtime.follow.afollow_session``)."""
        return self._records.afollow_session(session_id, after=after, idle_every=idle_every)

    def run_cursor(self, run_id: str, *, after_seq: int = 0) -> RunCursor:
        """A cursor over the run's events after ``after_seq`` for a follower that owns its
        wait loop (the kernel's main thread): stored ones caught up, live ones accepted once,
        ``done`` at ``run.final``."""
        return self._records.cursor(run_id, after_seq=after_seq)

    # --- catalogue (``Catalogue``) ------------------------------------------------------------

    def agents(self) -> dict[str, Agent]:
        return self._catalogue.agents()

    def tools(self, agent: str | None = None) -> list[AnyTool]:
        """All tools, or those ``agent`` is offered; MCP servers they need are started first
        (one that fails is left out: see ``mcp_servers``)."""
        return self._catalogue.tools(agent)

    def mcp_servers(self) -> list[dict[str, Any]]:
        """The configured MCP servers: state (not started, running, exited, failed, stopped),
        error with its stderr tail (redacted), and their tools."""
        return self._catalogue.mcp_servers()

    def mcp_resources(self, server: str | None = None) -> list[dict[str, Any]]:
        """Each configured MCP server (``server``: that one), started if needed: name, state,
        error, and what it offers besides tools: ``resources``, resource ``templates`` and
        ``prompts`` (as the server lists them: ``uri``, ``name``, ``description``,
        ``mimeType``, ``arguments``...). ``server`` not configured: ``NotFound``
        (``MCP_SERVER_NOT_FOUND``)."""
        return self._catalogue.mcp_resources(server)

    def sdks(self) -> list[dict[str, Any]]:
        """The agent SDKs: id, display name, capability flags, and whether they are installed."""
        return self._catalogue.sdks()

    def tasks(self, status: TaskStatus | None = None) -> list[Task]:
        """The project's tasks (kept by the ``tasks`` tool), or those in ``status``."""
        return self._catalogue.tasks(status)

    def stats(self) -> dict[str, Any]:
        return self._catalogue.stats()

    def budgets(self) -> list[dict[str, Any]]:
        """Spent and remaining of every budget: sessions that have one, configured notebooks."""
        return self._catalogue.budgets()

    @property
    def store_location(self) -> str:
        """Where the project's store is (a SQLite file, or the PostgreSQL schema), for people."""
        return self.store.location

    # --- exchanges with other processes ---------------------------------------------------------

    def put_notebook_reply(self, request_id: str, reply: JSON) -> None:
        """Keep a JupyterLab tab's answer to a kernel's notebook request until the kernel
        takes it (``take_notebook_reply``), whichever process received it."""
        self.store.put_notebook_reply(request_id, reply)

    def take_notebook_reply(self, request_id: str) -> JSON | None:
        """The answer to the notebook request ``request_id`` (once: it is removed), or None
        while there is none."""
        return self.store.take_notebook_reply(request_id)

    def owns_response(self, response_id: str) -> bool:
        """Whether a (deep research) run of this project made the provider response
        ``response_id`` (a webhook about it belongs here)."""
        return self.store.get_run_by_response_id(response_id) is not None

    def accept_webhook(self, delivery: WebhookDelivery) -> bool:
        """Store a verified webhook delivery once (by its event id and delivery id) for the
        next ``tick`` to process; returns whether it is new."""
        _event, inserted = store_delivery(self.store, delivery)
        return inserted

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (from another thread) when another process queued work this one
        may take (a PostgreSQL store notifies; SQLite never calls it: ticks find the work).
        Returns a function that stops it."""
        return self.store.listen(callback)

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
        await self.completions.aclose()

        await self.executions_running.aclose()  # cells left running in their kernels
        await self.notebooks.aclose()

    def __enter__(self) -> Agi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
