"""Our tools as an in-process MCP server for the Claude CLI, and the tool-use id correlation.

Every tool the agent is offered becomes one SDK tool on the ``agi`` server, so the model sees it
as ``mcp__agi__<wire name>`` (``fs.read`` -> ``mcp__agi__fs_read``; Anthropic tool names allow
no dots). Its handler runs ``params.call_tool``, i.e. our executor with the agent's gating, path
confinement, timeouts, redaction and artifacts: Claude's own built-in tools are switched off
(``options.py``), so every file or shell action goes through here.

The MCP call does not carry the model's ``tool_use`` id, but our ``tool_calls`` rows and
history need it. ``ToolUseIds`` records the ids of the ``tool_use`` blocks as the assistant
messages arrive and hands them to the handlers, by tool name and arguments, in order.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import SdkMcpTool, ToolAnnotations, create_sdk_mcp_server
from claude_agent_sdk.types import McpSdkServerConfig

from agi_jupyter.records import JSON
from agi_jupyter.runtime.toolnames import ToolNames
from agi_jupyter.sdk.base import SdkRunParams
from agi_jupyter.tools import AnyTool

log = logging.getLogger(__name__)

SERVER = "agi"
PREFIX = f"mcp__{SERVER}__"
# How long a handler waits for the assistant message announcing its call. The message is read
# right after the CLI writes it, so this only matters if the reader is stuck.
CLAIM_TIMEOUT = 30.0
# Results up to this size stay inline. Larger ones the CLI would save to a file for its Read
# tool, which is off; our executor already cuts outputs to 16 KiB plus an artifact note.
MAX_RESULT_CHARS = 100_000


class ToolNameMap:
    """Our tool names <-> the names the model sees (``fs.read`` <-> ``mcp__agi__fs_read``)."""

    def __init__(self, names: list[str]) -> None:
        self._wire = ToolNames(names)
        self.names = list(names)
        self._ours = {self.model_name(n): n for n in names}

    def wire(self, name: str) -> str:
        """The MCP tool name on our server."""
        return self._wire.encode(name)

    def model_name(self, name: str) -> str:
        return PREFIX + self.wire(name)

    def ours(self, model_name: str) -> str:
        """Our name for a tool the model called; a name that is none of ours (a tool it was
        not offered) stays as the model wrote it."""
        return self._ours.get(model_name, model_name)

    def allowed(self) -> list[str]:
        return list(self._ours)


@dataclass
class _Pending:
    id: str
    arguments: JSON = field(default_factory=dict)


class ToolUseIds:
    """The ``tool_use`` ids announced by assistant messages, waiting for their MCP calls."""

    def __init__(self, claim_timeout: float = CLAIM_TIMEOUT) -> None:
        self.claim_timeout = claim_timeout
        self._pending: dict[str, list[_Pending]] = {}  # by our tool name, in call order
        self._changed = asyncio.Event()

    def expect(self, name: str, tool_use_id: str, arguments: JSON) -> None:
        self._pending.setdefault(name, []).append(_Pending(tool_use_id, arguments))
        self._changed.set()

    def settle(self, tool_use_id: str) -> None:
        """The call was answered: drop its id if no handler took it (the CLI rejected the
        arguments before calling us), so the next call of that tool gets the right one."""
        for queue in self._pending.values():
            queue[:] = [p for p in queue if p.id != tool_use_id]

    async def claim(self, name: str, arguments: JSON) -> str:
        """The id of the call the CLI is making: the oldest of this tool with equal arguments
        (concurrent calls may reach us out of order), else the oldest of this tool."""
        try:
            async with asyncio.timeout(self.claim_timeout):
                while not self._pending.get(name):
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            log.warning("no tool_use id announced for a call of %s; using a new id", name)
            return "call_" + uuid.uuid4().hex[:24]
        queue = self._pending[name]
        match = next((p for p in queue if p.arguments == arguments), queue[0])
        queue.remove(match)
        return match.id


def mcp_server(params: SdkRunParams, names: ToolNameMap, ids: ToolUseIds) -> McpSdkServerConfig:
    """The ``agi`` MCP server offering ``params.tools``."""
    tools = [_sdk_tool(params, names, ids, t) for t in params.tools]
    return create_sdk_mcp_server(SERVER, tools=tools)


def _sdk_tool(
    params: SdkRunParams, names: ToolNameMap, ids: ToolUseIds, tool: AnyTool
) -> SdkMcpTool[Any]:
    spec = tool.spec()
    real_name: str = spec.name

    async def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        call_id = await ids.claim(real_name, arguments)
        outcome = await params.call_tool(call_id, real_name, dict(arguments))
        return {"content": [{"type": "text", "text": outcome.output}], "is_error": not outcome.ok}

    return SdkMcpTool(
        name=names.wire(real_name),
        description=spec.description,
        input_schema=input_schema(spec.parameters),
        handler=handler,
        # Read-only tools may run concurrently (ids are matched by arguments, see claim).
        annotations=ToolAnnotations(
            readOnlyHint=tool.read_only, maxResultSizeChars=MAX_RESULT_CHARS
        ),
    )


def input_schema(parameters: JSON) -> JSON:
    """The tool's JSON schema as the SDK passes it through unchanged: an object with
    ``properties`` (the SDK would otherwise read it as a ``{name: type}`` map)."""
    schema = dict(parameters or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema
