"""A real stdio MCP server (the ``mcp`` SDK's MCPServer) with the features beyond tools that the
client follows: ``count`` reports progress before it answers, ``grow`` adds a tool (``grown``)
and says the tool list changed (both ways: ``subscriptions/listen`` and the older
notification), and it has resources (one text, one binary), a resource template and prompts
(``review`` takes a required argument, ``greeting`` none).
"""

from __future__ import annotations

import contextlib
import sys

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

server = MCPServer("features")


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Count to ``steps``, reporting progress at each step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return f"counted to {steps}"


def grown() -> str:
    """A tool that exists once ``grow`` ran."""
    return "I am new"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the ``grown`` tool and say the tool list changed."""
    server.add_tool(grown)
    await ctx.notify_tools_changed()  # subscriptions/listen (2026-07-28 sessions)
    with contextlib.suppress(Exception):  # notifications/tools/list_changed (older sessions)
        await ctx.request_context.session.send_tool_list_changed()
    return "grown"


@server.resource(
    "memo://readme", name="readme", description="What this server is", mime_type="text/plain"
)
def readme() -> str:
    return "a test server"


@server.resource("memo://logo", name="logo", description="A tiny image", mime_type="image/png")
def logo() -> bytes:
    return b"\x89PNG\r\n\x1a\n" + bytes(24)


@server.resource("memo://notes/{day}", name="notes of a day", mime_type="text/plain")
def notes(day: str) -> str:
    return f"notes of {day}"


@server.prompt(name="review", description="Review a file")
def review(path: str) -> str:
    return f"Please review {path}."


@server.prompt(name="greeting", description="Greet the team")
def greeting() -> str:
    return "Say hello to the data team in one line."


if __name__ == "__main__":
    print("started", file=sys.stderr, flush=True)
    server.run("stdio")
