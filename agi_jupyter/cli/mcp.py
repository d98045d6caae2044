"""``agi mcp``: serve the project to an MCP client (Claude Desktop, Cursor, VS Code...) on stdio.

The client starts it, e.g. ``{"mcpServers": {"my-project": {"command": "agi", "args": ["mcp",
"--project", "/path/to/project"]}}}``. Logs go to stderr; stdout carries the protocol only.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

from agi_jupyter.cli.common import open_agi, project_option


@click.command("mcp")
@click.option(
    "--agent",
    "-a",
    default="build",
    show_default=True,
    metavar="NAME",
    help="Expose the tools this agent may use (plan: read-only).",
)
@project_option
def mcp_command(agent: str, project: Path | None) -> None:
    """Serve the project as an MCP server on stdin/stdout.

    Offers the agent's tools (files, shell, patches, SQL, tasks, notebook tools; confined to
    the project, gated like the agent's own calls) and the project's sessions and runs
    (agi_sessions, agi_history, agi_runs, agi_start_run, agi_follow, agi_cancel). Every tool
    call is recorded as a run of an "MCP client: NAME" session.
    """
    from agi_jupyter.mcp.sdk import require_mcp_sdk

    require_mcp_sdk()
    import anyio

    from agi_jupyter.mcp_server.stdio import serve_stdio

    logging.basicConfig(level=logging.WARNING, format="agi mcp: %(levelname)s %(message)s")
    with open_agi(project) as agi:
        anyio.run(serve_stdio, agi, agent)
