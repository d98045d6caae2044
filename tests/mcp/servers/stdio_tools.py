"""A real stdio MCP server (the ``mcp`` SDK's MCPServer) for the client tests.

Run as ``python stdio_tools.py``; it logs ``started`` on stderr. Its tools cover the result
kinds the client maps (text, image, embedded resources, links, structured content, errors,
large output) and two faults: ``die`` exits the process mid-call, ``env`` reads a variable;
``note`` writes a file without annotations (a write tool for the policy), ``look`` only reads
(``readOnlyHint``), ``hang`` writes its pid to a file and never returns.
"""

from __future__ import annotations

import base64
import os
import sys
import time
from pathlib import Path

import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

server = MCPServer("tools")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable of the server process."""
    return os.environ.get(name, "<unset>")


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def picture() -> list[types.ContentBlock]:
    """A caption and a 1x1 PNG."""
    data = base64.b64encode(PNG).decode()
    return [
        types.TextContent(type="text", text="a tiny picture"),
        types.ImageContent(type="image", data=data, mime_type="image/png"),
    ]


@server.tool()
def documents() -> list[types.ContentBlock]:
    """An embedded text resource, an embedded blob and a link."""
    return [
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="memo://notes", mime_type="text/plain", text="remember the milk"
            ),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri="memo://blob",
                mime_type="application/octet-stream",
                blob=base64.b64encode(b"\x00\x01binary").decode(),
            ),
        ),
        types.ResourceLink(type="resource_link", uri="memo://elsewhere", name="elsewhere"),
    ]


@server.tool()
def big(lines: int) -> str:
    """Many numbered lines."""
    return "".join(f"line {i:06d} of a long output\n" for i in range(lines))


@server.tool()
def refuse() -> str:
    """Always fails."""
    raise ToolError("this tool refuses on purpose")


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def look() -> str:
    """A read-only tool."""
    return "looked"


@server.tool()
def note(path: str, text: str) -> str:
    """Write text to a file of the server's working directory."""
    Path(path).write_text(text)
    return f"wrote {path}"


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
async def hang(pid_file: str) -> str:
    """Write the server's pid to a file, then block its whole event loop (a hung server: it
    no longer reads its stdin, so it does not notice its client going away)."""
    Path(pid_file).write_text(str(os.getpid()))  # noqa: ASYNC240
    time.sleep(3600)  # noqa: ASYNC251 - a hung server, on purpose
    return "woke up"


@server.tool()
def die() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


if __name__ == "__main__":
    print("started", file=sys.stderr, flush=True)
    server.run("stdio")
