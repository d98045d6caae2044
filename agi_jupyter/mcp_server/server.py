"""The project as an MCP server, built with the ``mcp`` SDK's low-level ``Server``.

It offers two kinds of tools:

- the tools the exposed agent (``build`` by default) is offered here: file tools, shell,
  patches, SQL, tasks, project tools, notebook tools where the runtime has them. Their names
  are the wire names models see (``fs.read`` -> ``fs_read``; ``title`` keeps ours), their
  schemas ours. A call goes through ``ExternalCalls``: a recorded run of the client's session,
  with the agent's gating, path confinement, timeouts and redaction. MCP tools of the project's
  own MCP servers (``mcp.*``) are not passed on: a server listing itself would start itself;
- the project's sessions and runs (``project.py``: ``agi_sessions``, ``agi_start_run``, ...).

A tool's failure comes back as a tool result with ``isError`` (the model can read and react);
only an unknown tool is a protocol error. The same ``Server`` serves stdio (``agi mcp``) and
streamable HTTP (``/agi/mcp`` in the Jupyter server).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from agi_jupyter import __version__
from agi_jupyter.errors import AgiError, UsageError
from agi_jupyter.mcp_server.calls import ExternalCalls
from agi_jupyter.mcp_server.project import BY_NAME, TOOLS
from agi_jupyter.providers.base import MAX_TOOL_ARGUMENTS
from agi_jupyter.runtime.agent_loop import allowed_tool_names
from agi_jupyter.runtime.toolnames import ToolNames

if TYPE_CHECKING:
    from mcp.server import ServerRequestContext

    from agi_jupyter.app import Agi
    from agi_jupyter.tools import AnyTool

log = logging.getLogger(__name__)

DEFAULT_AGENT = "build"
UNKNOWN_CLIENT = "mcp-client"
INSTRUCTIONS = (
    "Tools of an agi-jupyter project: its files (confined to the project folder), shell, "
    "patches, SQL, tasks and notebook tools as the '{agent}' agent may use them, and its agent "
    "sessions and runs (agi_*). Everything done through them is recorded in the project's store."
)


class ProjectServer:
    """One project's tools for MCP clients, as the agent ``agent`` sees them."""

    def __init__(self, agi: Agi, agent: str = DEFAULT_AGENT) -> None:
        if agent not in agi.agents():
            known = ", ".join(sorted(agi.agents()))
            raise UsageError(f"unknown agent {agent!r} (known: {known})")
        self.agi = agi
        self.agent = agent
        self.calls = ExternalCalls(agi, agent)
        self.server: Server[Any] = Server(
            "agi-jupyter",
            version=__version__,
            instructions=INSTRUCTIONS.format(agent=agent),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    def offered(self) -> list[AnyTool]:
        """The runtime tools passed on: what the agent is offered here, minus ``mcp.*``."""
        agi = self.agi
        allowed = allowed_tool_names(agi.agents()[self.agent], None, agi.deps.registry)
        tools = agi.deps.registry.offered(allowed, agi.deps.features)
        return [t for t in tools if not t.name.startswith("mcp.")]

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = [_project_tool(t.name, t.description, t.schema, t.read_only) for t in TOOLS]
        offered = self.offered()
        names = ToolNames([t.name for t in offered])
        for tool in offered:
            wire = names.encode(tool.name)
            if wire not in BY_NAME:
                tools.append(_runtime_tool(tool, wire))
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        size = len(json.dumps(arguments, ensure_ascii=False, default=str).encode())
        if size > MAX_TOOL_ARGUMENTS:  # refused before anything is recorded or run
            raise MCPError(
                types.INVALID_PARAMS,
                f"the arguments of {params.name} are {size:,} bytes, over the limit of "
                f"{MAX_TOOL_ARGUMENTS:,}: send large content in smaller calls",
            )
        project_tool = BY_NAME.get(params.name)
        if project_tool is not None:
            try:
                data = await project_tool.handler(self.agi, self.agent, arguments)
            except (AgiError, KeyError, ValueError) as e:
                return _error(_message(e))
            text = json.dumps(data, ensure_ascii=False, default=str)
            return types.CallToolResult(content=_text(text), structured_content=data)
        offered = self.offered()
        ours = ToolNames([t.name for t in offered]).decode(params.name)
        if ours not in {t.name for t in offered}:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name}")
        record = await self.calls.call(_client_name(ctx), ours, arguments)
        meta = {"agi-jupyter/run_id": record.run_id, "agi-jupyter/session_id": record.session_id}
        return types.CallToolResult(
            content=_text(record.output), is_error=not record.ok, _meta=meta
        )


def _project_tool(name: str, description: str, schema: Any, read_only: bool) -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        input_schema=schema,
        annotations=types.ToolAnnotations(read_only_hint=read_only),
    )


def _runtime_tool(tool: AnyTool, wire: str) -> types.Tool:
    return types.Tool(
        name=wire,
        title=tool.name,
        description=tool.description,
        input_schema=tool.json_schema(),
        annotations=types.ToolAnnotations(read_only_hint=tool.read_only),
    )


def _client_name(ctx: ServerRequestContext[Any]) -> str:
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    return info.name if info is not None and info.name else UNKNOWN_CLIENT


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=_text(message), is_error=True)


def _message(error: Exception) -> str:
    if isinstance(error, AgiError):
        return f"{error.code}: {error.message}"
    if isinstance(error, KeyError):
        return f"missing argument: {error.args[0] if error.args else error}"
    return str(error)
