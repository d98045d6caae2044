"""``agi undo RUN`` and ``agi diff RUN``: a run's changes, and undoing (or redoing) them.

``agi diff RUN`` prints each change of the run (one per notebook cell, one per file) with its
unified diff, in colour on a terminal. ``agi undo RUN [--turn N | --change ID ...]`` undoes
the whole run, its turns from N on, or the chosen changes, by a merge per cell and file: what
someone changed since is a conflict left as it is (exit 4), everything else stays as it is;
``--force`` puts back the conflicted cells anyway (``--force-cell`` only the cells or files
named). ``--redo`` makes undone changes again.

In-process by default (the notebook file); with ``--server`` through a running server's
``POST /agi/v1/runs/{id}/undo`` (``/redo``, ``GET .../changes``), which also reaches notebooks
open in JupyterLab (the shared document, or the open tab through the side panel's extension).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click
from rich.text import Text

from agi_jupyter.changes_view import conflict_summary, diff_lines, undo_lines
from agi_jupyter.cli import render
from agi_jupyter.cli.common import (
    EXIT_CONFLICT,
    fail,
    json_option,
    open_agi,
    project_option,
    server_options,
)

SERVER_HELP = (
    "Go through a running `agi serve` or Jupyter server (--project: a folder under its root)."
)


@dataclass(frozen=True)
class Where:
    """In this process, or through a server."""

    project: Path | None
    server: str | None
    token: str | None

    def remote(self, method: str, path: str, body: Any = None) -> Any:
        from agi_jupyter.cli.remote import ServerClient

        client = ServerClient(
            str(self.server), self.token, str(self.project) if self.project else None, timeout=120
        )
        return client.call(method, path, body)


@click.command()
@click.argument("run_id", metavar="RUN")
@click.option(
    "--change",
    "changes",
    multiple=True,
    metavar="ID",
    help="Only this change (an id of `agi diff RUN`); repeat for several.",
)
@click.option(
    "--turn",
    type=click.IntRange(min=1),
    metavar="N",
    help="Rewind to before the run's model turn N (undo turns N to the last).",
)
@click.option(
    "--force", is_flag=True, help="Put back the conflicted cells and files anyway (changed since)."
)
@click.option(
    "--force-cell",
    "force_cells",
    multiple=True,
    metavar="CELL",
    help="Force only this cell id (or file path); repeat for several.",
)
@click.option("--redo", is_flag=True, help="Make the undone changes again instead.")
@project_option
@json_option
@server_options(SERVER_HELP)
def undo(
    run_id: str,
    changes: tuple[str, ...],
    turn: int | None,
    force: bool,
    force_cells: tuple[str, ...],
    redo: bool,
    project: Path | None,
    as_json: bool,
    server: str | None,
    token: str | None,
) -> None:
    """Undo a run's changes to notebook cells and files, keeping everything else.

    Each change is reverted on its own cell or file by a three-way merge, last first: a cell
    nobody touched since goes back; a cell changed since is a conflict, named and left as it
    is; other cells, cells added since and other files are never touched. Undoing a change
    twice does nothing. Exit codes: 0 done, 4 some changes conflicted (the rest was undone),
    1 other failures, 2 bad usage (also a run or change id that names nothing).
    """
    chosen = list(changes) or None
    forced: bool | list[str] = list(force_cells) if force_cells else force
    where = Where(project, server, token)
    if server:
        body: dict[str, Any] = {"force": forced, "changes": chosen}
        if turn is not None:
            body["turn"] = turn
        verb = "redo" if redo else "undo"
        result = dict(where.remote("POST", f"runs/{quote(run_id, safe='')}/{verb}", body))
    else:
        with open_agi(project) as agi:
            outcome = agi.undo(run_id, force=forced, turn=turn, changes=chosen, redo=redo)
            result = outcome.to_dict()
    if as_json:
        render.print_json(result)
    else:
        for line in undo_lines(result):
            click.echo(line)
    summary = conflict_summary(result)
    if summary:
        fail(summary, EXIT_CONFLICT)


@click.command("diff")
@click.argument("run_id", metavar="RUN")
@project_option
@json_option
@server_options(SERVER_HELP)
def diff(
    run_id: str, project: Path | None, as_json: bool, server: str | None, token: str | None
) -> None:
    """Show a run's changes: one per notebook cell and per file, each with a unified diff and
    whether it is undone (the ids `agi undo RUN --change ID` takes)."""
    if server:
        answer = Where(project, server, token).remote(
            "GET", f"runs/{quote(run_id, safe='')}/changes"
        )
        changes = list(answer["changes"])
    else:
        with open_agi(project) as agi:
            changes = [c.to_dict() for c in agi.changes(run_id)]
    if as_json:
        render.print_json(changes)
        return
    out = render.console()
    for line, style in diff_lines(changes):
        out.print(Text(line, style=style or ""))


COMMANDS = (undo, diff)
