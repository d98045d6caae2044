"""The tool policy: whether a call of a tool is allowed, must wait for a person, or is denied.

One policy decides both which tools an agent is offered (``deny`` ones are not) and what happens
when a call arrives (``ask`` ones wait for a decision, in the native loop durably: the run goes
to ``waiting_approval``). Rules map tool names or ``*`` globs (``notebook.*``, ``mcp.*``) to
``allow`` / ``ask`` / ``deny``; they come from the agent (``permissions`` in
``.agi/agents.json``, the built-in ``build`` agent asks for commands, code and edits) and from
the session (``tool_config.permissions``), the session's winning. Among the rules of one
source the most specific match wins: an exact name, then the longest glob. A tool no rule
names gets its own default (``Tool.default_verdict``): ``allow`` for our tools, ``ask`` for an
MCP server's tools that may change things (all but ``readOnlyHint`` ones, or as ``trust`` in
``.agi/mcp.json`` says: see ``agi_jupyter.mcp.tools``), so those are treated like commands.

The session's review mode then relaxes ``ask``: ``ask`` keeps it; ``auto-edit`` lets file and
notebook edits through (commands and code still ask); ``auto`` lets everything through (every
change stays reviewable and undoable afterwards). Tools approved "always" for the session are
let through too. ``deny`` is never relaxed.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agi_jupyter.errors import UsageError
from agi_jupyter.kinds import DEFAULT_REVIEW_MODE, ReviewMode, ToolTrait, Verdict

if TYPE_CHECKING:
    from agi_jupyter.agents import Agent
    from agi_jupyter.config import Config
    from agi_jupyter.records import Session


def check_verdict(value: object, *, where: str) -> Verdict:
    if not isinstance(value, str) or value not in set(Verdict):
        raise UsageError(f"{where}: must be one of {', '.join(Verdict)}, not {value!r}")
    return Verdict(value)


def check_review_mode(value: object, *, where: str = "review_mode") -> ReviewMode:
    if not isinstance(value, str) or value not in set(ReviewMode):
        raise UsageError(f"{where} must be one of {', '.join(ReviewMode)}, not {value!r}")
    return ReviewMode(value)


def check_rules(raw: Mapping[str, Any] | None, *, where: str = "permissions") -> dict[str, Verdict]:
    """Rules as configured (pattern -> verdict), validated."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise UsageError(f"{where} must map tool names or globs to allow, ask or deny")
    return {str(k): check_verdict(v, where=f"{where}.{k}") for k, v in raw.items()}


def _specificity(pattern: str) -> tuple[int, int]:
    exact = not any(c in pattern for c in "*?[")
    return (1 if exact else 0, len(pattern))


def _match(rules: Mapping[str, Verdict], name: str) -> Verdict | None:
    hits = [p for p in rules if p == name or fnmatch.fnmatchcase(name, p)]
    if not hits:
        return None
    return rules[max(hits, key=_specificity)]


@dataclass(frozen=True)
class ToolPolicy:
    """The policy of one session (with its agent): see the module docstring."""

    agent_rules: Mapping[str, Verdict] = field(default_factory=dict)
    session_rules: Mapping[str, Verdict] = field(default_factory=dict)
    review_mode: ReviewMode = DEFAULT_REVIEW_MODE
    approved: frozenset[str] = frozenset()  # approved "always" in this session

    @classmethod
    def for_session(cls, agent: Agent, session: Session | None, config: Config) -> ToolPolicy:
        tool_config: Mapping[str, Any] = session.tool_config if session is not None else {}
        mode = tool_config.get("review_mode") or config.review_mode
        return cls(
            agent_rules=agent.permissions,
            session_rules=check_rules(tool_config.get("permissions")),
            review_mode=check_review_mode(mode),
            approved=frozenset(str(t) for t in tool_config.get("approved_tools") or ()),
        )

    def rule(self, name: str, default: Verdict = Verdict.ALLOW) -> Verdict:
        """The configured verdict, before the review mode: session, then agent, else the
        tool's ``default``."""
        return _match(self.session_rules, name) or _match(self.agent_rules, name) or default

    def decide(self, name: str, trait: ToolTrait, default: Verdict = Verdict.ALLOW) -> Verdict:
        """What a call of ``name`` (a tool of ``trait``, whose verdict without a rule is
        ``default``) gets now, the review mode and approvals applied: ``auto-edit`` lets the
        calls of ``edit`` tools through."""
        verdict = self.rule(name, default)
        if verdict != Verdict.ASK:
            return verdict
        if name in self.approved or self.review_mode == ReviewMode.AUTO:
            return Verdict.ALLOW
        if self.review_mode == ReviewMode.AUTO_EDIT and trait == ToolTrait.EDIT:
            return Verdict.ALLOW
        return Verdict.ASK

    def offers(self, name: str) -> bool:
        """Whether the tool is offered at all (denied tools are not)."""
        return self.rule(name) != Verdict.DENY

    def denied_reason(self, name: str) -> str:
        return f"tool {name!r} is denied by this session's tool policy"

    def ask_reason(self, name: str) -> str:
        return (
            f"tool {name!r} needs a person's approval (review mode '{self.review_mode}'), and "
            "this agent SDK cannot wait for one; set the session's review mode to auto-edit "
            "or auto, or allow the tool in its permissions"
        )


def with_approved(tool_config: Mapping[str, Any], names: Collection[str]) -> dict[str, Any]:
    """``tool_config`` with ``names`` approved "always" for the session."""
    approved = [str(t) for t in tool_config.get("approved_tools") or ()]
    approved.extend(n for n in names if n not in approved)
    return {**tool_config, "approved_tools": approved}
