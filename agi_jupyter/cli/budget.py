"""``agi budget``: see, set or remove a session's or a notebook's token/cost budget.

The terminal's ``%agi budget``: with no limit given it shows spent, limit and what is left of
every budget that applies (the session's own and its notebook's); ``--max-tokens`` /
``--max-usd`` replace the budget first, ``--none`` removes it. With ``--notebook PATH`` the
same for the stored budget of that notebook (``Agi.set_notebook_budget``). Lines are
formatted as ``agi stats`` prints them (``render.budget_line``). ``--server``: the same over
REST (``budget_remote``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agi_jupyter.cli import render
from agi_jupyter.cli.common import (
    json_option,
    latest_session_id,
    open_agi,
    project_option,
    server_options,
)
from agi_jupyter.errors import UsageError

if TYPE_CHECKING:
    from agi_jupyter.app import Agi


@click.command("budget")
@click.argument("session_id", metavar="[SESSION]", required=False)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    metavar="N",
    help="Set the budget: at most N tokens (input + output).",
)
@click.option(
    "--max-usd",
    type=click.FloatRange(min=0, min_open=True),
    metavar="X",
    help="Set the budget: at most X dollars (list price).",
)
@click.option("--none", "remove", is_flag=True, help="Remove the budget.")
@click.option(
    "--notebook",
    metavar="PATH",
    help="A notebook's stored budget instead (PATH relative to the project).",
)
@project_option
@json_option
@server_options(
    "Through a running `agi serve` or Jupyter server (--project: a folder under its root)."
)
def budget(
    session_id: str | None,
    max_tokens: int | None,
    max_usd: float | None,
    remove: bool,
    notebook: str | None,
    project: Path | None,
    as_json: bool,
    server: str | None,
    token: str | None,
) -> None:
    """Show, set or remove the token/cost budget of a session (default: the one `agi -c`
    continues) or, with --notebook PATH, of a notebook.

    \b
      agi budget                        spent, limit and left of the latest session's budgets
      agi budget SESSION --max-tokens 20000 --max-usd 0.5    replace its budget
      agi budget SESSION --none         remove it
      agi budget --notebook analysis/report.ipynb --max-usd 2

    A run stops before its next model call once a budget is spent (exit 6); in review mode
    ask, a spent session budget waits for `agi approve RUN --max-tokens N` instead.
    """
    limits = {"max_tokens": max_tokens, "max_usd": max_usd}
    given = {k: v for k, v in limits.items() if v is not None}
    if remove and given:
        raise click.UsageError("give --none or --max-tokens/--max-usd, not both")
    if notebook is not None and session_id:
        raise click.UsageError("give a SESSION or --notebook PATH, not both")
    # None: only show; {}: remove (as %agi budget, the limits given replace the budget)
    change = given if (given or remove) else None
    if server:
        from agi_jupyter.cli.budget_remote import remote_view

        view = remote_view(server, token, project, session_id, notebook, change)
    else:
        with open_agi(project) as agi:
            view = (
                _notebook(agi, notebook, change)
                if notebook is not None
                else _session(agi, session_id, change)
            )
    if as_json:
        render.print_json(view)
        return
    for status in view["budgets"]:
        click.echo(render.budget_line(status))
    if not view["budgets"]:
        where = (
            f"notebook {view['notebook_path']}"
            if notebook is not None
            else f"session {view['session_id']}"
        )
        click.echo(f"no budget applies to {where}")


def _session(agi: Agi, session_id: str | None, change: dict[str, Any] | None) -> dict[str, Any]:
    if session_id is None:
        session_id = latest_session_id(agi)
        if session_id is None:
            raise UsageError("there is no session yet (no run): name one, or ask something first")
    session = agi.session(session_id)
    if change is not None:
        session = agi.update_session(session.id, budget=change or None)
    found = agi.budget_statuses(session.id)
    return {
        "session_id": session.id,
        "notebook_path": session.notebook_path,
        "budget": session.budget,
        "budgets": [s.to_dict() for s in found],
    }


def _notebook(agi: Agi, path: str, change: dict[str, Any] | None) -> dict[str, Any]:
    from agi_jupyter.budget import notebook_key

    key = notebook_key(path)
    if not key or key == ".":
        raise UsageError("a notebook budget needs the notebook's path")
    if change is not None:
        agi.set_notebook_budget(key, change or None)
    status = agi.notebook_budget(key)
    return {
        "notebook_path": key,
        "budget": status.budget.to_dict() if status else None,
        "budgets": [status.to_dict()] if status else [],
    }
