"""An MCP server's tool as one of ours: ``mcp.<server>.<tool>``, with the server's JSON schema.

The tool sits in the runtime's ``ToolRegistry`` like any other, so agents are offered it by
their tool lists and globs (``mcp.*``, ``mcp.github.*``), and its calls go through the same
executor: gating, timeout, redaction, large outputs spilled to artifacts. Arguments are passed
to the server as the model wrote them (the server validates them against its schema).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from agi_jupyter.records import JSON
from agi_jupyter.tools.base import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
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
        read_only: bool,
    ) -> None:
        self.servers = servers
        self.server = server
        self.remote = remote
        self.name = tool_name(server, remote)
        self.description = description or f"The {remote} tool of the {server} MCP server."
        self.read_only = read_only
        self.source = f"{MCP_SOURCE}:{server}"
        self._schema = input_schema(schema)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return dict(arguments)

    def json_schema(self) -> JSON:
        return self._schema

    async def execute(self, args: Any, ctx: ToolContext) -> ToolResult:
        return await self.servers.call(self, dict(args), ctx)
