"""Reviewing the agent's changes in the notebook, in a real JupyterLab driven in chromium, at
the default side-panel width, in the light and the dark theme (issue 24).

The panel's agent edits two cells of the open notebook: both are highlighted with Keep / Undo;
Undo of one puts only that cell back, Keep of the other takes its highlight away, and neither
comes back after a reload (Keep is recorded on the server). A cell the user typed into after
the agent's edit is a conflict for Undo all: the typed text stays, the other cell goes back.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser_lab import LabServer, write_notebook
from panel_page import new_session, open_lab, open_panel, run_lab_command, send, shoot
from playwright.sync_api import expect
from test_browser_notebook import model_cells, open_notebook, sources

from agi_jupyter.notebook import source_hash
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn

AGI = Path(sys.executable).parent / "agi"
ASSISTANT = ".jp-AgiMessage-assistant"
CHANGED = ".jp-Notebook .jp-Cell.jp-AgiChanged"
BAR = ".jp-AgiReviewBar"
CELLS = [
    ("intro", "markdown", "# Review"),
    ("load", "code", "x = 20"),
    ("total", "code", "x + 1"),
]
LIGHT_BACKGROUND = "rgb(255, 255, 255)"  # --jp-layout-color1 of JupyterLab Light
DARK_BACKGROUND = "rgb(33, 33, 33)"  # ... and of JupyterLab Dark


pytestmark = pytest.mark.usefixtures("no_kernels_left")


def edit(cell_id: str, old: str, new: str) -> FakeToolCall:
    return FakeToolCall(
        "notebook.edit", {"cell_id": cell_id, "source": new, "expected_hash": source_hash(old)}
    )


def agent_edits_two_cells(page: Any, lab: LabServer, fake: FakeLLMServer, name: str) -> None:
    """The notebook open, the panel's build agent edits cells load and total."""
    write_notebook(lab.root, name, CELLS)
    open_lab(page, lab)
    open_notebook(page, name)
    open_panel(page)
    new_session(page, agent="build", title=f"review {name}")
    fake.enqueue(
        Turn(tool_calls=[edit("load", "x = 20", "x = 30"), edit("total", "x + 1", "x * 2")]),
        Turn(text="Edited two cells."),
    )
    send(page, "edit two cells")
    expect(page.locator(ASSISTANT).last).to_contain_text("Edited two cells.", timeout=90_000)
    expect(page.locator(CHANGED)).to_have_count(2)
    assert sources(page) == ["# Review", "x = 30", "x * 2"]


def cell(page: Any, cell_id: str) -> Any:
    return page.locator(f'.jp-Notebook .jp-Cell[data-agi-cell="{cell_id}"]')


def change_theme(page: Any, theme: str, background: str) -> None:
    run_lab_command(page, "apputils:change-theme", {"theme": theme})
    expect(page.locator(".jp-AgiPanel")).to_have_css("background-color", background)


def test_each_changed_cell_is_kept_or_undone_and_stays_so_after_a_reload(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    agent_edits_two_cells(page, lab, fake, "review.ipynb")
    bar = page.locator(BAR)
    expect(bar).to_contain_text("2 changed cells in review.ipynb")
    expect(cell(page, "load")).to_contain_text("Agent edited this cell")
    for cell_id in ("load", "total"):  # Keep and Undo visible on each, at the default width
        expect(cell(page, cell_id).locator(".jp-AgiCellReview-keep")).to_be_in_viewport()
        expect(cell(page, cell_id).locator(".jp-AgiCellReview-undo")).to_be_in_viewport()
    for button in ("next", "keep", "undo"):
        expect(bar.locator(f".jp-AgiReviewBar-{button}")).to_be_in_viewport()
    shoot(page, "review-01-two-cells-changed-light")
    try:
        change_theme(page, "JupyterLab Dark", DARK_BACKGROUND)
        expect(page.locator(CHANGED)).to_have_count(2)
        shoot(page, "review-01-two-cells-changed-dark")
    finally:  # the theme is a user setting of the shared JupyterLab: put it back
        change_theme(page, "JupyterLab Light", LIGHT_BACKGROUND)

    bar.locator(".jp-AgiReviewBar-next").click()  # jump to the next change
    active = "() => window.jupyterapp.shell.currentWidget.content.activeCell.model.id"
    assert page.evaluate(active) == "load"
    bar.locator(".jp-AgiReviewBar-next").click()
    assert page.evaluate(active) == "total"

    cell(page, "total").locator(".jp-AgiCellReview-undo").click()
    expect(page.locator(CHANGED)).to_have_count(1)
    expect(page.locator(CHANGED).first).to_have_attribute("data-agi-cell", "load")
    assert sources(page) == ["# Review", "x = 30", "x + 1"], "only the undone cell went back"
    expect(bar).to_contain_text("1 changed cell in review.ipynb")
    shoot(page, "review-02-one-undone")

    cell(page, "load").locator(".jp-AgiCellReview-keep").click()
    expect(page.locator(CHANGED)).to_have_count(0)
    expect(bar).to_be_hidden()
    assert sources(page) == ["# Review", "x = 30", "x + 1"], "Keep changes nothing"
    shoot(page, "review-03-kept")

    run_lab_command(page, "docmanager:save")
    page.reload()
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    # The notebook's content is loaded (a reloaded tab shows an empty model first).
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(3, timeout=60_000)
    expect(page.locator(".jp-Notebook .jp-Cell").first).to_contain_text("Review")
    expect(page.locator(".jp-NotebookPanel[data-agi-review]")).to_have_attribute(
        "data-agi-review", "0", timeout=60_000
    )
    expect(page.locator(CHANGED)).to_have_count(0)
    assert sources(page) == ["# Review", "x = 30", "x + 1"]


def test_undo_all_leaves_a_cell_the_user_typed_into_and_undoes_the_other(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    agent_edits_two_cells(page, lab, fake, "conflict.ipynb")
    editor = cell(page, "total").locator(".jp-InputArea-editor .cm-content")
    editor.click()
    page.keyboard.press("End")
    page.keyboard.type("  # mine")
    expect(cell(page, "total")).to_contain_text("x * 2  # mine")

    page.locator(BAR).locator(".jp-AgiReviewBar-undo").click()
    note = page.locator(BAR).locator(".jp-AgiReviewBar-note")
    expect(note).to_contain_text("changed since")
    expect(note).to_contain_text("total")
    assert sources(page) == ["# Review", "x = 20", "x * 2  # mine"], "the typed text is kept"
    expect(page.locator(CHANGED)).to_have_count(1)
    expect(page.locator(CHANGED).first).to_have_attribute("data-agi-cell", "total")
    expect(note.locator(".jp-AgiReviewBar-force")).to_be_in_viewport()
    shoot(page, "review-04-conflict-light")
    try:
        change_theme(page, "JupyterLab Dark", DARK_BACKGROUND)
        shoot(page, "review-04-conflict-dark")
    finally:
        change_theme(page, "JupyterLab Light", LIGHT_BACKGROUND)

    note.locator(".jp-AgiReviewBar-force").click()  # Undo anyway: the user chose to
    expect(page.locator(CHANGED)).to_have_count(0)
    expect(page.locator(BAR)).to_be_hidden()
    assert sources(page) == ["# Review", "x = 20", "x + 1"]
    assert all(not c.get("outputs") for c in model_cells(page) if c["cell_type"] == "code")


def test_agi_undo_with_the_notebook_open_changes_it_through_the_tab(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    """One writer per open notebook: ``agi undo`` (no --server) finds the JupyterLab that has
    the notebook open and undoes through its tab, never writing the file behind it; the tab
    then saves what reopening the file gives."""
    agent_edits_two_cells(page, lab, fake, "cli.ipynb")
    on_disk = (lab.root / "cli.ipynb").read_bytes()
    changes = lab.api("GET", "agi/v1/changes?path=cli.ipynb")["changes"]
    run_id, total = next((c["run_id"], c["id"]) for c in changes if c["cell_id"] == "total")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(lab.root.parent / "jupyter-runtime")}
    done = subprocess.run(
        [str(AGI), "undo", run_id, "--change", total, "-p", str(lab.root)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "cli.ipynb is open in JupyterLab" in done.stderr
    assert done.stdout == "reverted cli.ipynb cell total (edited)\n"
    expect(page.locator(".jp-Notebook .jp-Cell").nth(2)).to_contain_text("x + 1")
    assert sources(page) == ["# Review", "x = 30", "x + 1"]
    assert (lab.root / "cli.ipynb").read_bytes() == on_disk, "nothing written behind the tab"

    run_lab_command(page, "docmanager:save")
    expect(page.locator(".jp-mod-dirty")).to_have_count(0)
    saved = nbformat.read(lab.root / "cli.ipynb", as_version=4)
    assert [c.source for c in saved.cells] == sources(page)
    # (JupyterLab's model adds "trusted" to a cell's metadata and leaves it out when it saves.)
    shown = model_cells(page)
    metadata = [{k: v for k, v in c["metadata"].items() if k != "trusted"} for c in shown]
    assert metadata == [dict(c.metadata) for c in saved.cells]


def test_a_pending_edit_shows_its_diff_readable_at_the_default_width_and_is_approved(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    from agi_jupyter.cli.remote import ServerClient

    write_notebook(lab.root, "ask.ipynb", CELLS)
    open_lab(page, lab)
    open_notebook(page, "ask.ipynb")
    open_panel(page)
    session_id = new_session(page, agent="build", title="review before it lands")
    ServerClient(lab.url, lab.token).call("PATCH", f"sessions/{session_id}", {"review_mode": "ask"})
    long_line = "x * 3  # " + "a long comment the agent wrote, " * 6
    fake.enqueue(Turn(tool_calls=[edit("total", "x + 1", long_line)]), Turn(text="Approved."))
    send(page, "change the total")
    tool = page.locator('.jp-AgiTool[data-status="waiting_approval"]')
    expect(tool).to_be_visible(timeout=30_000)
    diff = tool.locator(".jp-AgiDiff")
    expect(diff.locator(".jp-AgiDiff-del")).to_have_text("-x + 1")
    expect(diff.locator(".jp-AgiDiff-add")).to_contain_text("+x * 3  # a long comment")
    for button in ("approve", "deny", "always"):
        expect(tool.locator(f".jp-AgiApproval-{button}")).to_be_in_viewport()
    body = page.locator(".jp-AgiBody")
    assert body.evaluate("e => e.scrollWidth <= e.clientWidth"), "no horizontal overflow"
    assert sources(page)[2] == "x + 1", "nothing applied while it waits"
    shoot(page, "review-05-approval-diff-light")
    try:
        change_theme(page, "JupyterLab Dark", DARK_BACKGROUND)
        shoot(page, "review-05-approval-diff-dark")
    finally:
        change_theme(page, "JupyterLab Light", LIGHT_BACKGROUND)

    tool.locator(".jp-AgiApproval-approve").click()
    expect(page.locator(ASSISTANT).last).to_contain_text("Approved.", timeout=60_000)
    expect(page.locator(".jp-Notebook .jp-Cell").nth(2)).to_contain_text("x * 3")
    assert sources(page)[2] == long_line


def test_an_approval_decided_in_the_panel_updates_the_agi_cell_output(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    """A ``%%agi`` cell waits with Approve / Deny / Always; the question is answered in the
    panel: the cell's buttons give way to who decided, the answer streams on in the cell, and
    the saved notebook keeps that final state, no stale "waiting"."""
    from agi_jupyter.cli.remote import ServerClient

    open_lab(page, lab)
    open_panel(page)
    session_id = new_session(page, agent="build", title="decided once")
    ServerClient(lab.url, lab.token).call("PATCH", f"sessions/{session_id}", {"review_mode": "ask"})
    name = "decided.ipynb"
    write_notebook(lab.root, name, [
        ("setup", "code", f"%load_ext agi_jupyter\n%agi use {session_id}"),
        ("ask", "code", "%%agi\nwrite decided.txt"),
    ])  # fmt: skip
    (lab.root / "decided.txt").unlink(missing_ok=True)
    fake.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_write", {"path": "decided.txt", "content": "yes"})]),
        Turn(text="Wrote decided.txt."),
    )
    open_notebook(page, name)
    run_lab_command(page, "notebook:run-all-cells")
    output = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea")
    expect(output.locator(".agi-approval-approve")).to_be_visible(timeout=60_000)

    tool = page.locator('.jp-AgiTool[data-status="waiting_approval"]')
    expect(tool).to_be_visible(timeout=30_000)
    tool.locator(".jp-AgiApproval-approve").click()

    expect(output.locator(".agi-approval")).to_have_count(0, timeout=60_000)
    expect(output).to_contain_text("fs.write approved in the panel by ")
    expect(output).to_contain_text("Wrote decided.txt.", timeout=60_000)
    expect(page.locator(".jp-AgiTool-decided").last).to_have_text(
        re.compile(r"^approved in the panel by .+")
    )
    assert (lab.root / "decided.txt").read_text() == "yes"
    shoot(page, "review-06-decided-in-the-panel")
    run_lab_command(page, "docmanager:save")
    kept = ""
    for _ in range(300):  # the save lands on disk (bounded: 30 s)
        saved = nbformat.reads((lab.root / name).read_text(), as_version=4)
        kept = json.dumps(saved.cells[1].outputs)
        if "Wrote decided.txt." in kept:
            break
        page.wait_for_timeout(100)
    assert "Wrote decided.txt." in kept
    assert "widget-view" not in kept
    assert "approved in the panel by " in kept
    assert "waiting for your approval" not in kept.lower()
