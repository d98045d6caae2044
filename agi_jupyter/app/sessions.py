"""``Agi``'s sessions: create, read, change and delete them, read their messages and history,
and the budgets that apply to them.

``Sessions`` is a part ``Agi`` holds (``agi_jupyter.app.agi``); the checks that a session's
agent, SDK and model fit together live here, used by ``Agi``'s runs too. It knows nothing of
runs being executed: ``Agi`` cancels a session's active runs before ``delete``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, NamedTuple

from agi_jupyter.budget import Budget, BudgetStatus, notebook_key, notebook_spent, statuses
from agi_jupyter.config import Config, not_configured_message
from agi_jupyter.errors import (
    AgentNotFound,
    NotFound,
    NoUserMessage,
    ProviderNotConfigured,
    SdkModelMismatch,
    UsageError,
)
from agi_jupyter.events import SessionUpdated, event_to_dict
from agi_jupyter.providers.hosted import check_hosted_tools
from agi_jupyter.records import (
    ACTIVE_RUN_STATUSES,
    JSON,
    Message,
    Page,
    Part,
    QueueMode,
    Role,
    Run,
    Session,
    TextPart,
    utc_now,
)
from agi_jupyter.runtime.history import HistoryView, history_view
from agi_jupyter.tools.policy import check_review_mode, check_rules

if TYPE_CHECKING:
    from agi_jupyter.agents import Agent
    from agi_jupyter.runtime.bus import EventBus
    from agi_jupyter.sdk.dispatch import SdkDispatch
    from agi_jupyter.store import Store
    from agi_jupyter.tools import Redactor


class RunInput(NamedTuple):
    """What a run answers: the prompt parts and the run fields that go with them
    (``input_message_id`` when it answers a stored user message; the prompt is then empty).
    Both go to ``Agi.submit`` (or ``Agi.research``) as they are."""

    prompt: list[Part]
    fields: dict[str, Any]


def find_agent(agents: Mapping[str, Agent], name: str) -> Agent:
    """The agent ``name``; ``AgentNotFound`` (naming the known ones) if there is none."""
    agent = agents.get(name)
    if agent is None:
        known = ", ".join(sorted(agents))
        raise AgentNotFound(f"unknown agent {name!r} (known: {known})")
    return agent


class Sessions:
    """A project's sessions, over its store: checked against the config, the agents and the
    agent SDKs; changes are published on the event bus (``session.updated``)."""

    def __init__(
        self,
        config: Config,
        store: Store,
        agents: Mapping[str, Agent],
        sdk: SdkDispatch,
        bus: EventBus,
        redactor: Redactor,
    ) -> None:
        self.config = config
        self.store = store
        self.agents = agents
        self.sdk = sdk
        self.bus = bus
        self.redactor = redactor

    def new(
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
        """A new session (``Agi.new_session``); the SDK must run its model, its provider
        offer its hosted tools."""
        chosen = Budget.parse(budget) if budget is not None else self.config.budgets.session
        agent_name = agent or self.config.default_agent
        agent_def = self.check_agent(agent_name)
        provider, model_name = self.config.resolve_model(model or self.agents[agent_name].model)
        if queue_mode not in ("queue", "interrupt"):
            raise UsageError(f"queue_mode must be 'queue' or 'interrupt', not {queue_mode!r}")
        tool_config: dict[str, Any] = {"extra_tools": list(tools)} if tools else {}
        if review_mode is not None:
            tool_config["review_mode"] = check_review_mode(review_mode)
        if permissions:
            tool_config["permissions"] = check_rules(permissions)
        self._set_hosted(tool_config, provider, hosted_tools, vector_store_ids)
        sdk_name = sdk or agent_def.sdk or self.config.default_sdk
        # An SDK that cannot run the model is refused now, not when the first run fails: a
        # 400 when both were asked for, a 409 when a default (the agent's, the project's) is
        # what does not fit.
        try:
            self.sdk.adapter(sdk_name).check_model(provider, model_name)
        except SdkModelMismatch as e:
            if not (sdk and model):
                e.http_status = 409
            raise
        return self.store.create_session(
            title=title,
            agent=agent_name,
            sdk=sdk_name,
            provider=provider,
            model=model_name,
            system_prompt=system_prompt,
            thinking_level=thinking_level,
            queue_mode=queue_mode,
            tool_config=tool_config,
            metadata=dict(metadata or {}),
            notebook_path=notebook_path,
            budget=chosen.to_dict() if chosen else None,
        )

    def get(self, session_id: str) -> Session:
        return self.store.get_session(session_id)

    def notebook_budgets(self) -> dict[str, JSON]:
        """``Agi.notebook_budgets``."""
        settings = self.config.budgets.with_stored(self.store)
        return {path: budget.to_dict() for path, budget in sorted(settings.notebooks.items())}

    def set_notebook_budget(self, path: str, budget: Mapping[str, Any] | None) -> JSON | None:
        """``Agi.set_notebook_budget``."""
        key = notebook_key(path)
        if "\x00" in key:
            raise UsageError("a notebook path cannot hold a NUL character")
        if not key or key == ".":
            raise UsageError("a notebook budget needs the notebook's path")
        chosen = Budget.parse(budget) if budget else None
        stored = chosen.to_dict() if chosen else None
        self.store.set_notebook_budget(key, stored)
        return stored

    def update(
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
        """``Agi.update_session``; published as ``session.updated``."""
        changes = dict(fields)
        if "budget" in changes:
            chosen = Budget.parse(changes["budget"])
            changes["budget"] = chosen.to_dict() if chosen else None
        if agent is not None:
            self.check_agent(agent)
            changes["agent"] = agent
        if model is not None:
            changes["provider"], changes["model"] = self.config.resolve_model(model)
        if changes.get("sdk") is not None or model is not None:
            self._check_sdk_change(session_id, changes)
        hosted = (hosted_tools, vector_store_ids)
        if (
            tools is not None
            or review_mode is not None
            or permissions is not None
            or hosted != (None, None)
            or model is not None
        ):
            stored = self.store.get_session(session_id)
            tool_config = dict(stored.tool_config)
            if tools is not None:
                tool_config.pop("extra_tools", None)
                if tools:
                    tool_config["extra_tools"] = list(tools)
            if review_mode is not None:
                tool_config["review_mode"] = check_review_mode(review_mode)
            if permissions is not None:
                tool_config["permissions"] = check_rules(permissions)
            # the hosted tools (as changed) must be offered by the provider (as changed)
            provider = changes.get("provider") or stored.provider or self.config.resolve_model()[0]
            self._set_hosted(
                tool_config,
                provider,
                tool_config.get("hosted_tools", []) if hosted_tools is None else hosted_tools,
                tool_config.get("vector_store_ids", [])
                if vector_store_ids is None
                else vector_store_ids,
            )
            changes["tool_config"] = tool_config
        if changes.get("queue_mode", "queue") not in ("queue", "interrupt"):
            raise UsageError("queue_mode must be 'queue' or 'interrupt'")
        ses = self.store.update_session(session_id, **changes)
        event = SessionUpdated(session=asdict(ses), ts=utc_now())
        self.bus.publish(ses.id, self.redactor.redact_json(event_to_dict(event)))
        return ses

    def _set_hosted(
        self,
        tool_config: dict[str, Any],
        provider: str,
        hosted_tools: Sequence[str],
        vector_store_ids: Sequence[str],
    ) -> None:
        """Put the hosted tools and vector stores in ``tool_config`` (none: neither key), each
        tool offered by ``provider`` (else ``HostedToolUnsupported``, 400)."""
        tool_config.pop("hosted_tools", None)
        tool_config.pop("vector_store_ids", None)
        if not hosted_tools and not vector_store_ids:
            return
        wire = self.config.provider(provider).wire
        chosen = check_hosted_tools(provider, wire, hosted_tools, vector_store_ids)
        if chosen:
            tool_config["hosted_tools"] = [str(t) for t in chosen]
        if vector_store_ids:
            tool_config["vector_store_ids"] = [str(v) for v in vector_store_ids]

    def _check_sdk_change(self, session_id: str, changes: Mapping[str, Any]) -> None:
        """The session's SDK must run its model after the change: ``SdkModelMismatch``
        (400) when the change itself mismatches them, 409 when it conflicts with what the
        session already has."""
        ses = self.store.get_session(session_id)
        sdk = changes.get("sdk") or ses.sdk
        provider = changes.get("provider") or ses.provider or self.config.resolve_model()[0]
        model = changes.get("model") or ses.model or ""
        try:
            self.sdk.adapter(sdk).check_model(provider, model)
        except SdkModelMismatch as e:
            if not ("sdk" in changes and "provider" in changes):
                e.http_status = 409  # the stored half of the pair is what it conflicts with
            raise

    def active_runs(self, session_id: str) -> list[Run]:
        """The session's runs not ended yet (``NotFound`` if there is no such session)."""
        self.store.get_session(session_id)
        return self.store.list_runs(
            session_id=session_id, statuses=sorted(ACTIVE_RUN_STATUSES), limit=200
        ).items

    def delete(self, session_id: str) -> None:
        """Delete the session with everything it holds (its runs must have ended)."""
        self.store.delete_session(session_id)

    def page(self, *, limit: int = 50, cursor: str | None = None) -> Page[Session]:
        return self.store.list_sessions(limit=limit, cursor=cursor)

    def history(
        self, session_id: str, *, view: HistoryView = "simple", lazy: bool = True
    ) -> list[Message]:
        """``Agi.history``."""
        if view not in ("simple", "full"):
            raise UsageError(f"view must be 'simple' or 'full', not {view!r}")
        messages = self.store.list_messages(session_id, text_only=view == "simple", lazy=lazy)
        if not messages:
            self.store.get_session(session_id)  # an unknown session is SessionNotFound, not []
        return history_view(messages, view)

    def messages(
        self, session_id: str, *, after_id: str | None = None, limit: int | None = None
    ) -> list[Message]:
        """The session's messages in order, every part (``after_id``: those after that
        message; ``NotFound`` if the session has no such message)."""
        return self.store.list_messages(session_id, after_id=after_id, limit=limit)

    def add_turns(self, session_id: str, turns: Sequence[tuple[Role, str]]) -> list[Message]:
        """Store a conversation's earlier turns (role, text) in the session, in order."""
        return [
            self.store.add_message(session_id, role, [TextPart(text=text)]) for role, text in turns
        ]

    def run_input(self, session_id: str, text: str | None, message_id: str | None) -> RunInput:
        """What a run of the session answers: a new prompt ``text``, the stored user message
        ``message_id``, or (neither given) the session's last message when it is a user
        message nobody answered."""
        if text is not None and message_id is not None:
            raise UsageError("give input or input_message_id, not both")
        if text is not None:
            return RunInput([TextPart(text=text)], {})
        messages = self.store.list_messages(self.store.get_session(session_id).id)
        if message_id is not None:
            chosen = next((m for m in messages if m.id == message_id), None)
            if chosen is None:
                raise NotFound(f"message {message_id!r} not found", code="MESSAGE_NOT_FOUND")
            if chosen.role != "user":
                raise NoUserMessage(f"message {message_id!r} is not a user message")
            return RunInput([], {"input_message_id": chosen.id})
        if not messages or messages[-1].role != "user":
            raise NoUserMessage("the session has no unanswered user message; send input")
        return RunInput([], {"input_message_id": messages[-1].id})

    def external(self, agent: str, client: str, *, protocol: str) -> Session:
        """A new session recording the calls an external client (``protocol``: ``mcp``) makes
        of ``agent``'s tools: SDK ``external`` (no model of ours), ``metadata.external``."""
        from agi_jupyter.sdk.external import EXTERNAL_SDK

        return self.store.create_session(
            title=f"{protocol.upper()} client: {client}",
            agent=agent,
            sdk=EXTERNAL_SDK,
            metadata={"external": {"protocol": protocol, "client": client}},
        )

    def budget_statuses(self, session_id: str) -> list[BudgetStatus]:
        """The budgets that apply to the session's runs (its own, its notebook's), with what
        was spent against each."""
        return statuses(self.store, self.store.get_session(session_id), self.config.budgets)

    def notebook_budget(self, path: str) -> BudgetStatus | None:
        """The budget of the notebook ``path`` (stored, else configured) with what its
        sessions spent; None when no budget applies to it."""
        key = notebook_key(path)
        chosen = self.config.budgets.with_stored(self.store).for_notebook(key)
        if chosen is None:
            return None
        tokens, usd = notebook_spent(self.store, key)
        return BudgetStatus("notebook", chosen, tokens, usd, key)

    # --- checks shared with Agi's runs ----------------------------------------------------

    def check_agent(self, name: str) -> Agent:
        return find_agent(self.agents, name)

    def session_for(
        self, session: str | Session | None, *, agent: str | None, model: str | None
    ) -> Session:
        if session is None:
            return self.new(agent=agent, model=model)
        ses = session if isinstance(session, Session) else self.store.get_session(session)
        if agent is not None and agent != ses.agent:
            self.check_agent(agent)
            ses = self.store.update_session(ses.id, agent=agent)
        return ses

    def model_for(self, session: Session, model: str | None, *, sdk: bool) -> tuple[str, str]:
        if model:
            provider, name = self.config.resolve_model(model)
            try:
                if sdk:
                    self.sdk.adapter(session.sdk).check_model(provider, name)
            except SdkModelMismatch as e:
                e.http_status = 409  # it conflicts with the session's SDK
                raise
        elif session.provider and session.model:
            provider, name = session.provider, session.model
        else:
            provider, name = self.config.resolve_model()
        settings = self.config.provider(provider)
        if not settings.configured:
            raise ProviderNotConfigured(not_configured_message(provider, enabled=settings.enabled))
        return provider, name
