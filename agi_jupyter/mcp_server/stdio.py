"""``agi mcp``: the project's MCP server over stdio, for MCP clients that start it.

The SDK's ``stdio_server`` points file descriptor 1 at stderr while it serves, so a stray print
(ours or a tool's) cannot corrupt the protocol stream; logs go to stderr.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.server.stdio import stdio_server

from agi_jupyter.mcp_server.server import ProjectServer

if TYPE_CHECKING:
    from agi_jupyter.app import Agi


async def serve_stdio(agi: Agi, agent: str) -> None:
    """Serve until the client closes stdin."""
    project = ProjectServer(agi, agent)
    server = project.server
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
