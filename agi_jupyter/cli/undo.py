"""``agi undo RUN``: put back every notebook a run changed, as it was before the run.

In-process by default (the notebook file, byte for byte); with ``--server`` through a running
server's ``POST /agi/v1/runs/{id}/undo``, which also reaches notebooks open in JupyterLab (the
shared document, or the open tab through the side panel's extension).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from agi_jupyter.cli import render
from agi_jupyter.cli.common import EXIT_CONFLICT, fail, json_option, open_agi, project_option
from agi_jupyter.errors import Conflict


@click.command()
@click.argument("run_id", metavar="RUN")
@click.option("--force", is_flag=True, help="Restore even if the cells changed after the run.")
@project_option
@json_option
@click.option(
    "--server",
    metavar="URL",
    envvar="AGI_SERVER_URL",
    show_envvar=True,
    help="Undo through a running `agi serve` or Jupyter server (--project: a folder under "
    "its root).",
)
@click.option(
    "--token", metavar="TOKEN", envvar="AGI_SERVER_TOKEN", show_envvar=True, help="Its token."
)
def undo(
    run_id: str,
    force: bool,
    project: Path | None,
    as_json: bool,
    server: str | None,
    token: str | None,
) -> None:
    """Restore the notebooks a run changed to how they were before the run.

    Refuses, restoring nothing, when someone changed the cells after the run; --force restores
    anyway. Exit codes: 0 restored (or nothing to restore), 4 refused because the cells
    changed (UNDO_CONFLICT), 1 other failures, 2 bad usage (also a run id that names nothing).
    """
    try:
        result = (
            _remote(server, token, project, run_id, force)
            if server
            else _local(project, run_id, force)
        )
    except Conflict as e:
        if e.code != "UNDO_CONFLICT":
            raise
        fail(e.message, EXIT_CONFLICT)
    if as_json:
        render.print_json(result)
        return
    notebooks = result.get("notebooks") or []
    if not notebooks:
        click.echo(f"run {run_id} changed no notebook: nothing to undo")
    for item in notebooks:
        forced = " (forced)" if item.get("forced") else ""
        click.echo(f"{item['status']} {item['path']} ({item['backend']}){forced}")


def _local(project: Path | None, run_id: str, force: bool) -> dict[str, Any]:
    with open_agi(project) as agi:
        return agi.undo(run_id, force=force).to_dict()


def _remote(
    server: str, token: str | None, project: Path | None, run_id: str, force: bool
) -> dict[str, Any]:
    from agi_jupyter.cli.remote import ServerClient

    client = ServerClient(server, token, str(project) if project else None, timeout=120)
    answer = client.call("POST", f"runs/{quote(run_id, safe='')}/undo", {"force": force})
    return dict(answer)
