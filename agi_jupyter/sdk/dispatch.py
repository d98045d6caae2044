"""Runs ``agent`` runs with their session's SDK adapter, and owns queueing and interrupts.

``SdkDispatch.run_attempt`` is what the run manager calls for an ``agent`` run: it picks the
adapter by ``session.sdk``, prepares its params (agent, offered tools, system prompt, the user
message, the adapter's saved state) and, for every adapter but ``native``, assembles canonical
history through ``CanonicalHistory``.

``route`` applies seed 003's fallback matrix when a message arrives while a run of the session
is active:

| queue_mode | adapter can           | what happens                                           |
|------------|-----------------------|--------------------------------------------------------|
| queue      | queue_while_streaming | the message joins the running turn (``queue_into``)    |
| queue      | (not)                 | a new run waits in the durable run queue, then runs    |
| interrupt  | interrupt             | the turn is aborted, the run cancelled, the new starts |
| interrupt  | (not)                 | falls back to the queue row above                      |
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agi_jupyter import budget
from agi_jupyter.agents import build_system_prompt
from agi_jupyter.aio import complete
from agi_jupyter.errors import UsageError
from agi_jupyter.kinds import SdkName
from agi_jupyter.records import JSON, MentionPart, Run, Session, TextPart, session_for_run
from agi_jupyter.runtime.agent_loop import allowed_tool_names
from agi_jupyter.runtime.toolcalls import run_tool
from agi_jupyter.sdk.base import SdkAdapter, SdkRunParams
from agi_jupyter.sdk.history import CanonicalHistory
from agi_jupyter.sdk.native import NativeAdapter

if TYPE_CHECKING:
    from agi_jupyter.runtime.agent_loop import AttemptInputs, AttemptResult
    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.runtime.emitter import RunEmitter
    from agi_jupyter.tools import ToolOutcome

log = logging.getLogger(__name__)

Route = Literal["queue_into", "interrupt", "queue"]
STATE_KEY = "sdk_state"  # in session.metadata: {adapter id: the adapter's own state}


@dataclass
class _Live:
    adapter: SdkAdapter
    handle: object


class SdkDispatch:
    """The run manager's ``agent`` run executor over the registered adapters."""

    def __init__(self, deps: RuntimeDeps, adapters: Mapping[str, SdkAdapter]) -> None:
        self.deps = deps
        self.adapters = dict(adapters)
        self._live: dict[str, _Live] = {}  # run id -> adapter + handle of a run streaming here
        self._aborted: set[str] = set()

    def adapter(self, sdk: str) -> SdkAdapter:
        adapter = self.adapters.get(sdk)
        if adapter is None:
            listed = [name for name, a in self.adapters.items() if a.listed]
            known = ", ".join(listed) or ", ".join(SdkName)
            raise UsageError(f"unknown sdk {sdk!r} (known: {known})")
        return adapter

    # --- running -----------------------------------------------------------------------------

    async def run_attempt(
        self,
        run: Run,
        emitter: RunEmitter,
        found: Session | None = None,
        inputs: AttemptInputs | None = None,
    ) -> AttemptResult:
        """``found``: the run's session as the run manager just read it (None: read here);
        ``inputs``: the native loop's first reads, made in the same trip."""
        if found is None:
            found = await self.deps.stored(self.deps.store.get_session, run.session_id)
        session = session_for_run(found, run)
        adapter = self.adapter(session.sdk)
        adapter.check_available()
        if isinstance(adapter, NativeAdapter):
            # Our own loop (it checks budgets before every model call), given the session
            # read already: a trip to the store thread less before the first model request.
            await self._prepare_tools(session)
            return await adapter.loop.run_attempt(run, emitter, found, inputs)
        return await self._run_sdk(adapter, run, session, emitter)

    async def _prepare_tools(self, session: Session) -> None:
        agent = self.deps.agents[session.agent]
        await self.deps.registry.prepare(allowed_tool_names(agent, session, self.deps.registry))

    async def _run_sdk(
        self, adapter: SdkAdapter, run: Run, session: Session, emitter: RunEmitter
    ) -> AttemptResult:
        """An attempt of another SDK, its history assembled by ``CanonicalHistory``. Every
        store call goes through the store thread (``deps.stored``), in order with the
        emitter's writes: the loop runs every agent of the process."""
        deps = self.deps
        statuses, prompt = await deps.stored(self._before, run, session)
        budget.check_start(statuses)
        await self._prepare_tools(session)
        params, history = self._params(adapter, run, session, emitter, prompt)
        try:
            result = await adapter.execute(run, emitter, lambda: params)
        finally:
            self._live.pop(run.id, None)
            await history.flush()  # whatever arrived before a failure stays in history
        if run.id in self._aborted:
            self._aborted.discard(run.id)
            # Interrupted: the SDK stopped cleanly, and the run ends ``cancelled`` whether or
            # not the run manager's cancel reached the task first.
            raise asyncio.CancelledError
        # The attempt's result stands even when a cancellation lands meanwhile (it is
        # delivered after, where the run ends with it). The run records the model the SDK
        # says answered (an ACP agent's own), not the project's default it never used.
        ran: dict[str, str | None] = {}
        if history.reported is not None and history.reported[1] != run.model:
            ran = dict(zip(("provider", "model"), history.reported, strict=True))
        await complete(
            deps.stored(
                deps.store.update_run,
                run.id,
                usage=result.usage,
                cost_usd=result.cost_usd,
                fence=emitter.fence,
                **ran,
            )
        )
        return result

    def _before(self, run: Run, session: Session) -> tuple[list[budget.BudgetStatus], str]:
        """The session's budgets and the run's prompt, in one trip (store thread)."""
        deps = self.deps
        return budget.statuses(deps.store, session, deps.config.budgets), self._prompt(run)

    def _params(
        self, adapter: SdkAdapter, run: Run, session: Session, emitter: RunEmitter, prompt: str
    ) -> tuple[SdkRunParams, CanonicalHistory]:
        deps = self.deps
        agent = deps.agents[session.agent]
        allowed = allowed_tool_names(agent, session, deps.registry)
        tools = deps.registry.offered(allowed, deps.features_for(session))
        system = run.system_prompt or build_system_prompt(
            agent,
            deps.config.project,
            tool_prompts=[t.prompt for t in tools if t.prompt],
            session_prompt=session.system_prompt,
        )
        limit = None if run.loop_state is None else run.loop_state.max_iterations
        max_turns = limit or deps.config.max_iterations
        history = CanonicalHistory(
            deps.store,
            emitter,
            run,
            stored=deps.stored,
            sdk=adapter.id,
            redactor=deps.redactor,
            max_iterations=max_turns,
        )

        async def call_tool(tool_call_id: str, name: str, arguments: JSON) -> ToolOutcome:
            outcome = await run_tool(
                deps,
                run,
                session,
                emitter,
                tool_call_id=tool_call_id,
                name=name,
                arguments=arguments,
                allowed=allowed,
            )
            history.record_outcome(outcome)
            return outcome

        def on_handle(handle: object) -> None:
            self._live[run.id] = _Live(adapter, handle)

        async def save_state(new: JSON) -> None:
            await deps.stored(self._save_state, session.id, adapter.id, new)

        params = SdkRunParams(
            run=run,
            session=session,
            agent=agent,
            config=deps.config,
            project=deps.config.project,
            prompt=prompt,
            system_prompt=system,
            tools=tools,
            max_turns=max_turns,
            on_history=history,
            on_event=emitter.emit,
            call_tool=call_tool,
            state=dict((session.metadata.get(STATE_KEY) or {}).get(adapter.id) or {}),
            save_state=save_state,
            on_handle=on_handle,
            emitter=emitter,
            result=history.result,
        )
        return params, history

    def _prompt(self, run: Run) -> str:
        """The text of the run's user message (store thread)."""
        if not run.input_message_id:
            return ""
        message = self.deps.store.get_message(run.input_message_id)
        text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
        mentions = [p.for_model() for p in message.parts if isinstance(p, MentionPart)]
        return "\n\n".join([text, *mentions]) if mentions else text

    def _save_state(self, session_id: str, sdk: str, state: JSON) -> None:
        """Replace the adapter's state in the session's metadata (store thread)."""
        session = self.deps.store.get_session(session_id)
        metadata = dict(session.metadata)
        states = dict(metadata.get(STATE_KEY) or {})
        states[sdk] = state
        metadata[STATE_KEY] = states
        self.deps.store.update_session(session_id, metadata=metadata)

    # --- queue / interrupt (seed 003's matrix) ----------------------------------------------

    def route(self, session: Session) -> Route:
        """What a new message for ``session`` does to a run of it that is active, if any."""
        capabilities = self.adapter(session.sdk).capabilities
        if session.queue_mode == "interrupt":
            return "interrupt" if capabilities.interrupt else "queue"
        return "queue_into" if capabilities.queue_while_streaming else "queue"

    def join_running_turn(self, session: Session, text: str) -> tuple[Run, int] | None:
        """Hand ``text`` to the session's turn that is streaming in this process (called off
        the runtime loop): that run and the seq its new events follow, or None (queue a run)."""
        store = self.deps.store
        running = store.list_runs(session_id=session.id, statuses=["running"], limit=1).items
        if not running or running[0].id not in self._live:
            return None
        events = store.list_run_events(running[0].id)
        after_seq = events[-1].seq if events else 0
        try:
            joined = self.deps.loop.run(self.queue_into(running[0].id, text), timeout=5.0)
        except TimeoutError:  # the loop is busy: queue a run of its own instead
            return None
        if not joined:
            return None
        return store.get_run(running[0].id), after_seq

    async def queue_into(self, run_id: str, text: str) -> bool:
        """Hand ``text`` to the running turn of ``run_id``; False if it is no longer live."""
        live = self._live.get(run_id)
        if live is None or not live.adapter.capabilities.queue_while_streaming:
            return False
        try:
            await live.adapter.queue_message(live.handle, text)
        except Exception:  # the turn ended meanwhile: the caller queues a run instead
            log.info("could not queue a message into run %s", run_id, exc_info=True)
            return False
        return True

    async def abort(self, run_id: str) -> None:
        """Ask the SDK to stop the running turn cleanly (before the run manager cancels it)."""
        live = self._live.get(run_id)
        if live is None or not live.adapter.capabilities.interrupt:
            return
        self._aborted.add(run_id)
        try:
            await live.adapter.abort(live.handle)
        except Exception:  # a failed graceful stop still ends in the run manager's cancel
            log.info("could not interrupt run %s cleanly", run_id, exc_info=True)

    def describe(self) -> list[dict[str, object]]:
        return [adapter.describe() for adapter in self.adapters.values() if adapter.listed]

    async def aclose(self) -> None:
        for adapter in self.adapters.values():
            try:
                await adapter.aclose()
            except Exception:  # closing the others matters more
                log.warning("could not close the %s adapter", adapter.id, exc_info=True)
