"""Cells in a real JupyterLab: stale cells from the ledger, the protect toggle (its context-menu
item, its cell-toolbar lock, the lock on a protected cell), and the panel's Stop while a cell
the agent ran is still running (Stop / Stop and interrupt)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from browser_lab import LabServer, write_notebook
from panel_page import new_session, open_lab, open_panel, run_lab_command, send, shoot
from playwright.sync_api import expect
from test_browser_notebook import CELLS, model_cells, open_notebook
from test_browser_panel_ui import DARK_BACKGROUND, LIGHT_BACKGROUND

from agi_jupyter.notebook import source_hash
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn

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


@pytest.mark.usefixtures("no_kernels_left")
def test_stop_while_the_agents_cell_runs_offers_to_interrupt_it(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    slow = "import time\nprint('training', flush=True)\ntime.sleep(600)"
    write_notebook(lab.root, "long.ipynb", [("train", "code", slow)])
    open_lab(page, lab)
    open_notebook(page, "long.ipynb")
    panel = open_panel(page)
    new_session(page, agent="build", title="long cell")
    fake.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.run", {"cell_ids": ["train"], "timeout": 600})])
    )
    send(page, "train the model")
    tool = page.locator(".jp-AgiTool[data-tool='notebook.run']")
    expect(tool).to_have_attribute("data-status", "running", timeout=60_000)
    expect(tool).to_contain_text("training", timeout=60_000)  # the kernel runs it (live output)

    panel.locator(".jp-AgiStop").click()
    choice = panel.locator(".jp-AgiStopChoice")
    expect(choice).to_contain_text("A cell the agent ran is still running.")
    leave, interrupt = (
        choice.locator(".jp-AgiStopChoice-leave"),
        choice.locator(".jp-AgiStopChoice-interrupt"),
    )

    def shown_whole() -> None:  # both buttons whole in the panel's default width, readable
        for button in (leave, interrupt):
            expect(button).to_be_visible()
            box, frame = button.bounding_box(), panel.bounding_box()
            assert box is not None
            assert frame is not None
            assert frame["x"] <= box["x"]
            assert box["x"] + box["width"] <= frame["x"] + frame["width"]
            colors = button.evaluate(
                "b => [getComputedStyle(b).color, getComputedStyle(b).backgroundColor]"
            )
            assert colors[0] != colors[1]

    shown_whole()
    shoot(page, "cells-02-stop-choice")
    try:  # and in the dark theme
        run_lab_command(page, "apputils:change-theme", {"theme": "JupyterLab Dark"})
        expect(panel).to_have_css("background-color", DARK_BACKGROUND)
        shown_whole()
        shoot(page, "cells-02-stop-choice-dark")
    finally:  # the theme is a user setting of the shared JupyterLab: put it back
        run_lab_command(page, "apputils:change-theme", {"theme": "JupyterLab Light"})
        expect(panel).to_have_css("background-color", LIGHT_BACKGROUND)

    interrupt.click()
    expect(choice).to_have_count(0)
    note = panel.locator(".jp-AgiStopCells")
    expect(note).to_have_text("interrupted: cell train (long.ipynb)", timeout=30_000)
    expect(panel.locator(".jp-AgiStop")).to_be_disabled()  # the run ended (cancelled)
    output = page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-OutputArea-output")
    expect(output.last).to_contain_text("KeyboardInterrupt", timeout=30_000)
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle", timeout=30_000)
    shoot(page, "cells-03-stopped-and-interrupted")
