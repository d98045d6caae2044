"""GET /agi/v1/executions/stale: a notebook's stale cells from the ledger (both backends)."""

from __future__ import annotations

from pathlib import Path

from agi_jupyter.notebook import source_hash
from tests.notebook.conftest import write_notebook
from tests.server.conftest import Fetch, project_store


async def test_stale_cells_of_a_notebook_from_its_ledger(fetch: Fetch, server_root: Path) -> None:
    path = server_root / "nb.ipynb"
    write_notebook(path)  # load: x = 20 …, total: x + 1
    with project_store(server_root) as store:
        for cell_id, source in (("load", "x = 20\nprint('loaded')"), ("total", "x + 1")):
            started = store.start_execution(
                "nb.ipynb", origin="user", cell_id=cell_id, source_hash=source_hash(source)
            )
            store.end_execution(started.id, status="ok")
        rebound = store.start_execution(
            "nb.ipynb",
            origin="agent",
            cell_id="load",
            source_hash=source_hash("x = 20\nprint('loaded')"),
        )
        store.end_execution(rebound.id, status="ok")

    reply = await fetch("executions", "stale", params={"path": "nb.ipynb"})
    assert reply.data == {
        "cells": [{"cell_id": "total", "reason": "upstream", "names": ["x"], "by_cell_id": "load"}]
    }
    assert (await fetch("executions", "stale", params={"path": "none.ipynb"})).data == {"cells": []}
    outside = await fetch("executions", "stale", params={"path": "../elsewhere.ipynb"})
    assert outside.error["code"] == "PATH_OUTSIDE_PROJECT"
    bad = await fetch("executions", "stale", params={"path": "nb.txt"})
    assert bad.error["code"] == "VALIDATION_ERROR"
