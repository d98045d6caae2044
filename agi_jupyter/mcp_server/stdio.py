"""``agi mcp``: the project's MCP server over stdio, for MCP clients that start it.

The SDK's ``stdio_server`` points file descriptor 1 at stderr while it serves, so a stray print
(ours or a tool's) cannot corrupt the protocol stream; logs go to stderr. A line that is not a
JSON-RPC message is answered, as JSON-RPC 2.0 says, with an error whose ``id`` is null: a parse
error (-32700) for a line that is not JSON, an invalid request (-32600) for JSON that is not a
message (the SDK hands such a line to the server as an exception, which it only logs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import anyio
import mcp.types as types
import pydantic
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from agi_jupyter.mcp_server.server import ProjectServer

if TYPE_CHECKING:
    from collections.abc import AsyncIterable

    from agi_jupyter.app import Agi


class _Sender(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


async def serve_stdio(agi: Agi, agent: str) -> None:
    """Serve until the client closes stdin."""
    project = ProjectServer(agi, agent)
    server = project.server
    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_relay, read_stream, send, write_stream)
            await server.run(receive, write_stream, server.create_initialization_options())


async def _relay(
    incoming: AsyncIterable[SessionMessage | Exception],
    to_server: MemoryObjectSendStream[SessionMessage | Exception],
    to_client: _Sender,
) -> None:
    """Messages on to the server; a line that was no message answered with its error."""
    async with to_server:
        async for item in incoming:
            if isinstance(item, SessionMessage):
                await to_server.send(item)
            else:
                await to_client.send(SessionMessage(unparsable(item)))


def unparsable(error: Exception) -> types.JSONRPCError:
    """The JSON-RPC error answering a line the SDK could not read as a message."""
    not_json = isinstance(error, pydantic.ValidationError) and any(
        detail.get("type") == "json_invalid" for detail in error.errors()
    )
    code, what = (
        (types.PARSE_ERROR, "Parse error: the line is not JSON")
        if not_json
        else (types.INVALID_REQUEST, "Invalid Request: the line is not a JSON-RPC 2.0 message")
    )
    error_data = types.ErrorData(code=code, message=what)
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=error_data)
