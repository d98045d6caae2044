"""``agi undo RUN [--turn N]``: put back every notebook and file a run changed, as it was
before the run (or before its turn N).

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
from agi_jupyter.cli.common import (
    EXIT_CONFLICT,
    fail,
    json_option,
    open_agi,
    project_option,
    server_options,
)
from agi_jupyter.errors import Conflict, ErrorCode


@click.command()
@click.argument("run_id", metavar="RUN")
@click.option("--force", is_flag=True, help="Restore even if the cells changed after the run.")
@click.option(
    "--turn",
    type=click.IntRange(min=1),
    metavar="N",
    help="Rewind to before the run's model turn N (undo turns N to the last).",
)
@project_option
@json_option
@server_options(
    "Undo through a running `agi serve` or Jupyter server (--project: a folder under its root)."
)
def undo(
    run_id: str,
    force: bool,
    turn: int | None,
    project: Path | None,
    as_json: bool,
    server: str | None,
    token: str | None,
) -> None:
    """Restore the notebooks and files a run changed to how they were before the run.

    With --turn N, only what turns N and later changed (rewind to before turn N). Refuses,
    restoring nothing, when someone changed the cells or files after the run; --force restores
    anyway. Exit codes: 0 restored (or nothing to restore), 4 refused because the cells
    changed (UNDO_CONFLICT), 1 other failures, 2 bad usage (also a run id that names nothing).
    """
    try:
        result = (
            _remote(server, token, project, run_id, force, turn)
            if server
            else _local(project, run_id, force, turn)
        )
    except Conflict as e:
        if e.code != ErrorCode.UNDO_CONFLICT:
            raise
        fail(e.message, EXIT_CONFLICT)
    if as_json:
        render.print_json(result)
        return
    notebooks = result.get("notebooks") or []
    files = result.get("files") or []
    if not notebooks and not files:
        click.echo(f"run {run_id} changed no notebook or file: nothing to undo")
    for item in notebooks:
        forced = " (forced)" if item.get("forced") else ""
        click.echo(f"{item['status']} {item['path']} ({item['backend']}){forced}")
    for item in files:
        forced = " (forced)" if item.get("forced") else ""
        click.echo(f"{item['status']} {item['path']} (file){forced}")


def _local(project: Path | None, run_id: str, force: bool, turn: int | None) -> dict[str, Any]:
    with open_agi(project) as agi:
        return agi.undo(run_id, force=force, turn=turn).to_dict()


def _remote(
    server: str,
    token: str | None,
    project: Path | None,
    run_id: str,
    force: bool,
    turn: int | None,
) -> dict[str, Any]:
    from agi_jupyter.cli.remote import ServerClient

    client = ServerClient(server, token, str(project) if project else None, timeout=120)
    body: dict[str, Any] = {"force": force} if turn is None else {"force": force, "turn": turn}
    answer = client.call("POST", f"runs/{quote(run_id, safe='')}/undo", body)
    return dict(answer)
