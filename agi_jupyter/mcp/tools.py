"""An MCP server's tool as one of ours: ``mcp.<server>.<tool>``, with the server's JSON schema.

The tool sits in the runtime's ``ToolRegistry`` like any other, so agents are offered it by
their tool lists and globs (``mcp.*``, ``mcp.github.*``), and its calls go through the same
executor: gating, timeout, redaction, large outputs spilled to artifacts. Arguments are passed
to the server as the model wrote them (the server validates them against its schema).

Under the one tool policy (``tools/policy.py``) a tool is trusted to ``read`` or to ``write``:

| the tool                                              | trust | ask       | auto-edit | auto |
|-------------------------------------------------------|-------|-----------|-----------|------|
| annotated ``readOnlyHint: true``                      | read  | runs      | runs      | runs |
| any other (no annotations, ``destructiveHint``, ...)  | write | asks      | asks      | runs |

``trust`` in ``.agi/mcp.json`` (the tool's own, else the server's) overrides the annotations.
A read tool is a ``read`` tool (offered to read-only agents); a write tool is a ``shell`` tool
whose calls ask unless a rule says otherwise: its changes are not recorded, so ``auto-edit``,
which lets recorded file and notebook edits through, does not. Agent and session rules
(``permissions``: ``"mcp.files.*": "allow"``, ``"mcp.git.git_commit": "deny"``) still win.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from agi_jupyter.kinds import McpTrust, ToolTrait, Verdict
from agi_jupyter.records import JSON
from agi_jupyter.tools.base import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from agi_jupyter.mcp.config import McpServerSpec
    from agi_jupyter.mcp.servers import McpServers

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
MCP_SOURCE = "mcp"


class OpenArgs(BaseModel):
    """The parameters of an MCP tool, whose real schema is the server's JSON schema."""

    model_config = ConfigDict(extra="allow")


def tool_name(server: str, remote: str) -> str:
    return f"mcp.{server}.{_UNSAFE.sub('_', remote) or 'tool'}"


def server_of(tool: Tool[Any]) -> str | None:
    """The MCP server a tool comes from (None for our own tools)."""
    source = tool.source
    return source.split(":", 1)[1] if source.startswith(f"{MCP_SOURCE}:") else None


def judge_trust(spec: McpServerSpec, remote: str, read_only_hint: bool) -> tuple[McpTrust, str]:
    """How far a tool of the server is trusted, and what says so (shown by ``agi tools``)."""
    own = spec.tool_trust.get(remote)
    if own is not None:
        return own, f"mcp.json tool {remote!r}"
    if spec.trust is not None:
        return spec.trust, f"mcp.json server {spec.name!r}"
    if read_only_hint:
        return McpTrust.READ, "readOnlyHint"
    return McpTrust.WRITE, "no readOnlyHint"


def input_schema(schema: Mapping[str, Any] | None) -> JSON:
    """The server's input schema as model APIs take it: an object with ``properties``."""
    cleaned = {k: v for k, v in dict(schema or {}).items() if k != "$schema"}
    if cleaned.get("type") != "object":
        cleaned["type"] = "object"
    cleaned.setdefault("properties", {})
    return cleaned


class McpTool(Tool[Any]):
    parameters = OpenArgs

    def __init__(
        self,
        servers: McpServers,
        *,
        server: str,
        remote: str,
        description: str,
        schema: Mapping[str, Any] | None,
        trust: McpTrust,
        trust_from: str,
    ) -> None:
        self.servers = servers
        self.server = server
        self.remote = remote
        self.name = tool_name(server, remote)
        self.description = description or f"The {remote} tool of the {server} MCP server."
        self.trust = trust
        self.trust_from = trust_from  # what decided the trust (annotations or mcp.json)
        self.read_only = trust == McpTrust.READ
        self.trait = ToolTrait.READ if self.read_only else ToolTrait.SHELL
        self.default_verdict = Verdict.ALLOW if self.read_only else Verdict.ASK
        self.source = f"{MCP_SOURCE}:{server}"
        self._schema = input_schema(schema)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return dict(arguments)

    def json_schema(self) -> JSON:
        return self._schema

    async def execute(self, args: Any, ctx: ToolContext) -> ToolResult:
        return await self.servers.call(self, dict(args), ctx)
