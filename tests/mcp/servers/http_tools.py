"""A real streamable-HTTP MCP server (the ``mcp`` SDK's MCPServer under uvicorn).

``python http_tools.py`` binds 127.0.0.1 on a free port and prints ``PORT <n>`` once it
listens. ``whoami`` returns the Authorization header it received (the client must send the
configured headers).
"""

from __future__ import annotations

import socket
import sys

import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

server = MCPServer("remote")


@server.tool()
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@server.tool()
def whoami(ctx: Context) -> str:
    """The Authorization header of this request."""
    headers = ctx.headers or {}
    return f"authorization: {headers.get('authorization', '<none>')}"


def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
