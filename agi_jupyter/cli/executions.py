"""``agi executions NOTEBOOK``: the ledger of what the notebook's kernel ran, and by whom.

Every execution, oldest first: the user's cells (in a kernel with ``%load_ext agi_jupyter``),
the agent's ``notebook.run`` and ``python`` tool calls, with the run and tool call that made
them, the cell, its source hash, execution count, status and an output summary.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from agi_jupyter.cli import render
from agi_jupyter.cli.common import json_option, open_agi, project_option


@click.command("executions")
@click.argument("notebook", metavar="NOTEBOOK")
@click.option("--limit", "-n", type=click.IntRange(min=1), help="Only the last N executions.")
@project_option
@json_option
def executions(notebook: str, limit: int | None, project: Path | None, as_json: bool) -> None:
    """List the executions of NOTEBOOK's kernel (a path relative to the project), oldest
    first: who ran each cell (the user, or an agent's run and tool call), its source hash,
    execution count, status and output summary."""
    from agi_jupyter.notebook.ledger import LEDGER_COLUMNS, ledger_row

    with open_agi(project) as agi:
        found = agi.executions(notebook, limit=limit)
    if as_json:
        render.print_json([asdict(e) for e in found])
        return
    render.table(LEDGER_COLUMNS, [ledger_row(e) for e in found], empty="no executions recorded")
