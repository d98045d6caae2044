"""``Agi``'s sessions: create, read, change and delete them, and read their history.

A part of ``Agi`` (``agi_jupyter.app``), which composes it; the checks that a session's agent,
SDK and model fit together live here, used by the runs part too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from agi_jupyter.budget import Budget, notebook_key
from agi_jupyter.config import Config, not_configured_message
from agi_jupyter.errors import (
    AgentNotFound,
    ProviderNotConfigured,
    RunTerminal,
    SdkModelMismatch,
    UsageError,
)
from agi_jupyter.events import SessionUpdated, event_to_dict
from agi_jupyter.records import (
    ACTIVE_RUN_STATUSES,
    JSON,
    Message,
    Page,
    QueueMode,
    Run,
    Session,
    utc_now,
)
from agi_jupyter.runtime.history import HistoryView, history_view
from agi_jupyter.tools.policy import check_review_mode, check_rules

if TYPE_CHECKING:
    from agi_jupyter.agents import Agent
    from agi_jupyter.runtime.bus import EventBus
    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.sdk.dispatch import SdkDispatch
    from agi_jupyter.store import Store
    from agi_jupyter.tools import Redactor


class SessionsApi:
    """The sessions part of ``Agi`` (a mixin: ``Agi`` sets the attributes below)."""

    config: Config
    store: Store
    deps: RuntimeDeps
    sdk: SdkDispatch
    bus: EventBus
    redactor: Redactor

    if TYPE_CHECKING:

        def cancel(self, run_id: str, *, wait: float = ...) -> Run: ...

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
    ) -> Session:
        """A new session. ``sdk`` picks the agent SDK that runs it (``native``, ``claude``,
        ``codex``, ``acp``; default: the agent's, else the configured ``default_sdk``).
        ``review_mode``: ``ask``, ``auto-edit`` or ``auto`` (default: the configured
        ``review_mode``, see README "Tool policy and review modes"); ``permissions``: the
        session's tool rules (name or glob -> allow | ask | deny), over the agent's.
        ``budget`` (``{"max_tokens": N, "max_usd": X}``) caps what its runs may spend
        (default: ``budgets.session`` of the config; see ``agi_jupyter.budget``)."""
        chosen = Budget.parse(budget) if budget is not None else self.config.budgets.session
        agent_name = agent or self.config.default_agent
        agent_def = self._check_agent(agent_name)
        provider, model_name = self.config.resolve_model(model or self._agent_model(agent_name))
        if queue_mode not in ("queue", "interrupt"):
            raise UsageError(f"queue_mode must be 'queue' or 'interrupt', not {queue_mode!r}")
        tool_config: dict[str, Any] = {"extra_tools": list(tools)} if tools else {}
        if review_mode is not None:
            tool_config["review_mode"] = check_review_mode(review_mode)
        if permissions:
            tool_config["permissions"] = check_rules(permissions)
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

    def session(self, session_id: str) -> Session:
        return self.store.get_session(session_id)

    def notebook_budgets(self) -> dict[str, JSON]:
        """Every notebook budget by path: the config's, with those set from a front door
        (stored, ``set_notebook_budget``) over them."""
        settings = self.config.budgets.with_stored(self.store)
        return {path: budget.to_dict() for path, budget in sorted(settings.notebooks.items())}

    def set_notebook_budget(self, path: str, budget: Mapping[str, Any] | None) -> JSON | None:
        """Set the budget of the notebook ``path`` (relative to the project) for every process:
        stored, it wins over ``budgets.notebooks`` of the config. None (or empty) removes the
        stored one (a config budget then applies again). Returns the stored budget."""
        key = notebook_key(path)
        if not key or key == "." or "\x00" in key:
            raise UsageError("a notebook budget needs the notebook's path")
        chosen = Budget.parse(budget) if budget else None
        stored = chosen.to_dict() if chosen else None
        self.store.set_notebook_budget(key, stored)
        return stored

    def update_session(
        self,
        session_id: str,
        *,
        agent: str | None = None,
        model: str | None = None,
        tools: Sequence[str] | None = None,
        review_mode: str | None = None,
        permissions: Mapping[str, str] | None = None,
        **fields: Any,
    ) -> Session:
        """Change a session (title, agent, sdk, model, system_prompt, thinking_level, queue_mode,
        notebook_path, metadata, extra tools, review mode, tool permissions — replaced whole,
        budget — None removes it); session streams see ``session.updated``."""
        changes = dict(fields)
        if "budget" in changes:
            chosen = Budget.parse(changes["budget"])
            changes["budget"] = chosen.to_dict() if chosen else None
        if agent is not None:
            self._check_agent(agent)
            changes["agent"] = agent
        if model is not None:
            changes["provider"], changes["model"] = self.config.resolve_model(model)
        if changes.get("sdk") is not None or model is not None:
            self._check_sdk_change(session_id, changes)
        if tools is not None or review_mode is not None or permissions is not None:
            tool_config = dict(self.store.get_session(session_id).tool_config)
            if tools is not None:
                tool_config.pop("extra_tools", None)
                if tools:
                    tool_config["extra_tools"] = list(tools)
            if review_mode is not None:
                tool_config["review_mode"] = check_review_mode(review_mode)
            if permissions is not None:
                tool_config["permissions"] = check_rules(permissions)
            changes["tool_config"] = tool_config
        if changes.get("queue_mode", "queue") not in ("queue", "interrupt"):
            raise UsageError("queue_mode must be 'queue' or 'interrupt'")
        ses = self.store.update_session(session_id, **changes)
        event = SessionUpdated(session=asdict(ses), ts=utc_now())
        self.bus.publish(ses.id, self.redactor.redact_json(event_to_dict(event)))
        return ses

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

    def delete_session(self, session_id: str) -> None:
        """Cancel the session's active runs, then delete it with everything it holds."""
        self.store.get_session(session_id)
        active = self.store.list_runs(
            session_id=session_id, statuses=sorted(ACTIVE_RUN_STATUSES), limit=200
        ).items
        for run in active:
            with contextlib.suppress(RunTerminal):
                self.cancel(run.id)
        self.store.delete_session(session_id)

    def sessions(self, *, limit: int = 50, cursor: str | None = None) -> Page[Session]:
        return self.store.list_sessions(limit=limit, cursor=cursor)

    def history(
        self, session_id: str, *, view: HistoryView = "simple", lazy: bool = True
    ) -> list[Message]:
        """A session's messages: ``simple`` (user and assistant text parts) or ``full``.

        ``lazy`` (the default): each message's ``meta`` and ``parts`` are decoded when first
        read, which makes reading roles and texts about as cheap as the SQL query; a caller
        that reads every message's parts pays about twice the decoding of ``lazy=False``
        (benchmarks/README.md, history_floor.py)."""
        if view not in ("simple", "full"):
            raise UsageError(f"view must be 'simple' or 'full', not {view!r}")
        messages = self.store.list_messages(session_id, text_only=view == "simple", lazy=lazy)
        if not messages:
            self.store.get_session(session_id)  # an unknown session is SessionNotFound, not []
        return history_view(messages, view)

    # --- checks shared with the runs part ------------------------------------------------------

    def _check_agent(self, name: str) -> Agent:
        agent = self.deps.agents.get(name)
        if agent is None:
            known = ", ".join(sorted(self.deps.agents))
            raise AgentNotFound(f"unknown agent {name!r} (known: {known})")
        return agent

    def _agent_model(self, agent: str) -> str | None:
        return self.deps.agents[agent].model

    def _session_for(
        self, session: str | Session | None, *, agent: str | None, model: str | None
    ) -> Session:
        if session is None:
            return self.new_session(agent=agent, model=model)
        ses = session if isinstance(session, Session) else self.store.get_session(session)
        if agent is not None and agent != ses.agent:
            self._check_agent(agent)
            ses = self.store.update_session(ses.id, agent=agent)
        return ses

    def _model_for(self, session: Session, model: str | None, *, sdk: bool) -> tuple[str, str]:
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
