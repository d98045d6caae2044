"""Undo puts a cell's metadata back with its source, key by key by the same three-way rule:
a key as the agent left it goes back (or goes), a key the user changed since stays."""

from __future__ import annotations

import copy
from typing import Any

from agi_jupyter.notebook.changes import cell_changes
from agi_jupyter.notebook.merge import revert
from agi_jupyter.notebook.ops import apply_op
from agi_jupyter.records import Change


def notebook(*cells: dict[str, Any]) -> dict[str, Any]:
    return {"cells": [copy.deepcopy(c) for c in cells], "metadata": {}}


def code(cell_id: str, source: str, **metadata: Any) -> dict[str, Any]:
    return {"id": cell_id, "cell_type": "code", "metadata": metadata, "source": source,
            "outputs": [], "execution_count": None}  # fmt: skip


def undo(now: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> str:
    """Undo every record of one change (before -> after) on ``now``; the statuses."""
    row = Change(id="chg_1", run_id="run_1", path="nb.ipynb", created_at="t")
    statuses = []
    for record in reversed(cell_changes(row, before, after)):
        decision = revert(now, record)
        for op in decision.ops:
            apply_op(now, op)
        statuses.append(decision.status)
    return ",".join(statuses)


def test_undo_of_an_edit_puts_the_metadata_back_and_keeps_keys_changed_since() -> None:
    before = notebook(code("a", "x = 1", tags=["setup"], keep="mine"))
    after = notebook(code("a", "x = 2", tags=["agent"], scrolled=True, keep="mine"))
    now = copy.deepcopy(after)
    now["cells"][0]["metadata"]["keep"] = "changed by the user"  # since the run
    now["cells"][0]["metadata"]["collapsed"] = True  # added by the user

    assert undo(now, before, after) == "reverted"

    (cell,) = now["cells"]
    assert cell["source"] == "x = 1"
    assert cell["metadata"] == {"tags": ["setup"], "keep": "changed by the user", "collapsed": True}


def test_undo_of_a_deletion_brings_the_cell_back_with_its_metadata() -> None:
    kept = code("k", "k = 0")
    gone = code("d", "d = 1", tags=["important"], jupyter={"source_hidden": True})
    before, after = notebook(kept, gone), notebook(kept)
    now = copy.deepcopy(after)

    assert undo(now, before, after) == "reverted"

    assert [c["id"] for c in now["cells"]] == ["k", "d"]
    assert now["cells"][1]["metadata"] == gone["metadata"]


def test_metadata_alone_changed_by_the_run_is_put_back_and_never_a_conflict() -> None:
    before = notebook(code("a", "x = 1", tags=["t"]))
    after = notebook(code("a", "x = 2"))
    now = copy.deepcopy(after)
    now["cells"][0]["source"] = "x = 1"  # the user typed the old source back: only metadata

    assert undo(now, before, after) == "reverted"
    assert now["cells"][0]["metadata"] == {"tags": ["t"]}
    assert undo(now, before, after) == "unchanged"
