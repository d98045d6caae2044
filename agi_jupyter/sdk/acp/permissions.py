"""Decisions on an ACP agent's permission requests (``session/request_permission``).

Until an approval flow asks a person, a request is decided by the agent's gating, the same
that decides which of our tools it is offered: the ACP tool kind names one of our tools

| ACP kind                 | our tool     |
|--------------------------|--------------|
| read                     | fs.read      |
| search                   | fs.search    |
| edit, delete, move       | fs.write     |
| execute                  | shell.run    |
| fetch                    | acp.fetch    |
| other (or none)          | acp.other    |
| think, switch_mode       | (always allowed: no effect outside the agent) |

and a tool the agent may use (offered to it, not a writing tool for a read-only agent, and
``allow`` by the session's tool policy, ``tools/policy.py``, after its review mode; ``acp.*``
names by the agent's tool list, e.g. ``"acp.*"``) is allowed *once*; anything else, a denied
tool or one the policy says a person must approve, is rejected once (an ACP turn cannot be
parked durably mid-prompt). ``PermissionDecider`` is the seam where a live approval flow would
plug in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

KIND_TOOLS: dict[str, str | None] = {
    "read": "fs.read",
    "search": "fs.search",
    "edit": "fs.write",
    "delete": "fs.write",
    "move": "fs.write",
    "execute": "shell.run",
    "fetch": "acp.fetch",
    "other": "acp.other",
    "think": None,
    "switch_mode": None,
}


@dataclass(frozen=True)
class PermissionRequest:
    tool_call_id: str
    title: str | None
    kind: str | None
    raw_input: Any = None

    @property
    def tool(self) -> str | None:
        """Our tool the request is about (None: nothing to gate)."""
        return KIND_TOOLS.get(self.kind or "other", "acp.other")


@dataclass(frozen=True)
class Decision:
    allow: bool
    reason: str


class PermissionDecider(Protocol):
    async def decide(self, request: PermissionRequest) -> Decision: ...


class GatingDecider:
    """Allow once what the agent's gating allows (``refusal(tool)`` is None), else reject."""

    def __init__(self, refusal: Callable[[str], str | None]) -> None:
        self.refusal = refusal

    async def decide(self, request: PermissionRequest) -> Decision:
        tool = request.tool
        if tool is None:
            return Decision(True, f"{request.kind} has no effect outside the agent")
        reason = self.refusal(tool)
        if reason is None:
            return Decision(True, f"{tool} is allowed for this agent")
        return Decision(False, reason)
