"""Cell markers in a real JupyterLab: stale cells from the ledger, and the protect toggle (its
context-menu item, its cell-toolbar lock, the lock on a protected cell)."""

from __future__ import annotations

import re
from typing import Any

from browser_lab import LabServer, write_notebook
from panel_page import open_lab, shoot
from playwright.sync_api import expect
from test_browser_notebook import CELLS, model_cells, open_notebook

from agi_jupyter.notebook import source_hash

SOURCES = {cell_id: source for cell_id, _, source in CELLS}


def has_class(name: str) -> re.Pattern[str]:
    """A class list containing ``name`` (Playwright matches the whole attribute)."""
    return re.compile(rf"(^|\s){re.escape(name)}(\s|$)")


def test_stale_cells_are_marked_and_protect_toggles_from_the_menu_and_toolbar(
    page: Any, lab: LabServer
) -> None:
    write_notebook(lab.root, "marks.ipynb", CELLS)
    with lab.open_store() as store:  # load ran, total read x, then load bound x again
        for cell_id in ("load", "total", "load"):
            ran = store.start_execution(
                "marks.ipynb",
                origin="user",
                cell_id=cell_id,
                source_hash=source_hash(SOURCES[cell_id]),
            )
            store.end_execution(ran.id, status="ok")
    open_lab(page, lab)
    open_notebook(page, "marks.ipynb")
    cells = page.locator(".jp-Notebook .jp-Cell")
    expect(page.locator(".jp-NotebookPanel")).to_have_attribute("data-agi-stale-cells", "1")
    stale = cells.nth(2)
    expect(stale).to_have_class(has_class("jp-AgiStale"))
    expect(stale).to_have_attribute("data-agi-stale", "upstream")
    prompt = stale.locator(".jp-InputArea-prompt")
    expect(prompt).to_have_attribute("title", "Stale: x re-bound by a later run of cell load")
    expect(cells.nth(1)).not_to_have_class(has_class("jp-AgiStale"))

    load = cells.nth(1)
    load.locator(".jp-InputArea-editor").click()
    load.locator(".jp-InputArea-prompt").click(button="right")
    page.locator(".lm-Menu-item", has_text="AGI: Protect Cell").click()
    expect(load).to_have_class(has_class("jp-AgiProtected"))
    assert model_cells(page)[1]["metadata"]["agi"] == {"protected": True}
    expect(load.locator(".jp-InputArea-prompt")).to_have_attribute(
        "title", "Protected: agents may not run, edit or delete this cell"
    )
    shoot(page, "cells-01-stale-and-protected")

    lock = load.locator(".jp-cell-toolbar [data-command='agi-jupyter:toggle-protect']")
    expect(lock).to_be_visible()
    lock.click()
    expect(load).not_to_have_class(has_class("jp-AgiProtected"))
    assert "agi" not in model_cells(page)[1]["metadata"]
