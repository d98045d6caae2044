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
One writer per open notebook: in-process, a notebook the undo would change that is open in a
JupyterLab on this machine (``cli.labs``) is changed through that server, never by writing
the file behind the tab; when that server cannot, nothing is written (exit 4).
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
    project_root,
    server_options,
)
from agi_jupyter.cli.labs import OpenLab, open_in_lab
from agi_jupyter.errors import AgiError

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
            notebooks = [c.path for c in agi.changes(run_id) if c.kind == "notebook"]
            lab = open_in_lab(project_root(project), notebooks)
            if lab is None:
                outcome = agi.undo(run_id, force=forced, turn=turn, changes=chosen, redo=redo)
                result = outcome.to_dict()
        if lab is not None:
            body = {"force": forced, "changes": chosen, **({"turn": turn} if turn else {})}
            result = _through_lab(lab, project_root(project), run_id, body, redo)
    if as_json:
        render.print_json(result)
    else:
        for line in undo_lines(result):
            click.echo(line)
    summary = conflict_summary(result)
    if summary:
        fail(summary, EXIT_CONFLICT)


def _through_lab(
    lab: OpenLab, project: Path, run_id: str, body: dict[str, Any], redo: bool
) -> dict[str, Any]:
    """Undo through the JupyterLab that has the notebook open (its tab is the one writer), or
    refuse without writing anything."""
    shown = ", ".join(lab.paths)
    folder = lab.project_under_root(project)
    where = Where(Path(folder) if folder else None, lab.url, lab.token)
    try:
        verb = "redo" if redo else "undo"
        result = dict(where.remote("POST", f"runs/{quote(run_id, safe='')}/{verb}", body))
    except AgiError as e:
        fail(
            f"{shown} is open in JupyterLab at {lab.url}, which could not do it ({e}): nothing "
            "was written; undo from the AGI panel there, or close the tab and run this again",
            EXIT_CONFLICT,
        )
    click.echo(f"agi: {shown} is open in JupyterLab at {lab.url}: changed through it", err=True)
    return result


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
