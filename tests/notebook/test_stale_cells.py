"""Stale cells from the ledger (``notebook.stale``): a cell changed since it ran, and a cell
reading a name a later execution of another cell re-bound; the name analysis."""

from __future__ import annotations

from typing import Any

from agi_jupyter.notebook.model import source_hash
from agi_jupyter.notebook.stale import names_of, stale_cells
from agi_jupyter.records import KernelExecution


def book(*cells: tuple[str, str]) -> dict[str, Any]:
    return {
        "cells": [
            {"id": cell_id, "cell_type": "code", "source": source, "metadata": {}}
            for cell_id, source in cells
        ]
        + [{"id": "md", "cell_type": "markdown", "source": "x = 1", "metadata": {}}]
    }


def ran(*executions: tuple[str, str]) -> list[KernelExecution]:
    return [
        KernelExecution(id=f"exe{i}", path="nb.ipynb", cell_id=cell_id, source_hash=source_hash(s))
        for i, (cell_id, s) in enumerate(executions)
    ]


def test_names_a_cell_binds_and_reads() -> None:
    names = names_of(
        "import numpy as np\nfrom os import path\nx = np.zeros(3)\n"
        "def f():\n    return y + x\nfor i in range(3):\n    total = i\n%matplotlib inline\n"
    )
    assert names.binds == {"np", "path", "x", "f", "i", "total"}
    assert names.reads == {"y", "range", "get_ipython"}  # %matplotlib: get_ipython().run_line_magic
    assert names_of("x = (").binds == frozenset()  # does not parse: no names


def test_a_changed_cell_and_one_reading_a_name_rebound_later_are_stale() -> None:
    load, total, other, fresh = "x = 20", "x + 1", "y = 2", "print('never ran')"
    notebook = book(("load", load), ("total", total), ("other", other), ("fresh", fresh))
    ledger = ran(("load", load), ("total", total), ("other", other), ("load", load))
    (stale,) = stale_cells(notebook, ledger)
    assert (stale.cell_id, stale.reason, stale.names, stale.by_cell_id) == (
        "total",
        "upstream",
        ["x"],
        "load",
    )

    edited = book(("load", "x = 30"), ("total", total), ("other", other), ("fresh", fresh))
    found = [(s.cell_id, s.reason) for s in stale_cells(edited, ledger)]
    # load changed since; what it ran last is unknown now, so total is not judged by it
    assert found == [("load", "changed")]

    rerun = ledger + ran(("total", total))
    assert stale_cells(notebook, rerun) == [], "total ran after load: up to date"
