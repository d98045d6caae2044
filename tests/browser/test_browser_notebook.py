"""Agents working in a notebook open in a real JupyterLab, driven in Debian's chromium.

The side panel's agent reads, inserts, edits and runs cells of the open notebook and the user
sees them (without real-time collaboration through the labextension's bridge, with it through
the shared document); ``%%agi`` edits its own notebook through the open tab; Undo puts the
notebook back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_lab import LabServer, start_lab, write_notebook
from panel_page import new_session, open_lab, open_panel, run_lab_command, send, shoot
from playwright.sync_api import expect

from agi_jupyter.notebook import source_hash
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn

ASSISTANT = ".jp-AgiMessage-assistant"


pytestmark = pytest.mark.usefixtures("no_kernels_left")


CELLS = [
    ("intro", "markdown", "# Workspace"),
    ("load", "code", "x = 20\nprint('loaded')"),
    ("total", "code", "x + 1"),
]


def open_notebook(page: Any, name: str) -> None:
    run_lab_command(page, "docmanager:open", {"path": name, "factory": "Notebook"})
    expect(page.locator(".jp-Notebook")).to_be_visible()
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle", timeout=60_000)


def model_cells(page: Any) -> list[dict[str, Any]]:
    """The open notebook's cells as its model holds them (what the tab would save)."""
    cells: list[dict[str, Any]] = page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.toJSON().cells"
    )
    return cells


def sources(page: Any) -> list[str]:
    return [c["source"] for c in model_cells(page)]


def run_cell(page: Any, index: int) -> None:
    """Run the cell at ``index`` of the open notebook (as Ctrl+Enter on it does)."""
    page.evaluate(
        "(i) => { const nb = window.jupyterapp.shell.currentWidget.content;"
        " nb.activeCellIndex = i; nb.deselectAll(); }",
        index,
    )
    run_lab_command(page, "notebook:run-cell")


def cell_editors(page: Any) -> Any:
    return page.locator(".jp-Notebook .jp-Cell .jp-InputArea-editor")


def panel_agent_turns() -> list[Turn]:
    return [
        Turn(tool_calls=[FakeToolCall("notebook.read", {})]),
        Turn(tool_calls=[
            FakeToolCall("notebook.insert", {"source": "y = x * 3\ny", "after_cell_id": "total"}),
            FakeToolCall("notebook.edit", {"cell_id": "total", "source": "x + 2",
                                           "expected_hash": source_hash("x + 1")}),
            FakeToolCall("notebook.edit", {"cell_id": "load", "source": "x = 0",
                                           "expected_hash": source_hash("stale")}),
        ]),
        Turn(tool_calls=[FakeToolCall("notebook.run", {"cell_ids": ["load", "total"]})]),
        Turn(text="Inserted a cell, edited one, ran two: x + 2 is 22."),
    ]  # fmt: skip


def work_through_the_panel(page: Any, fake: FakeLLMServer, notebook: str, shot: str) -> None:
    """The user's unsaved edit, then the panel's build agent works in the open notebook."""
    open_notebook(page, notebook)
    page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells[0]"
        ".setSource('# Workspace (unsaved edit)')"
    )
    open_panel(page)
    new_session(page, agent="build", title=f"notebook {shot}")
    fake.enqueue(*panel_agent_turns())
    send(page, "work in the open notebook")
    expect(page.locator(ASSISTANT).last).to_contain_text("x + 2 is 22", timeout=90_000)
    wrong = page.locator(".jp-AgiTool[data-tool='notebook.edit'][data-status='failed']")
    expect(wrong).to_have_count(1)
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(4)
    expect(cell_editors(page).nth(2)).to_contain_text("x + 2")
    expect(cell_editors(page).nth(3)).to_contain_text("y = x * 3")
    outputs = page.locator(".jp-Notebook .jp-OutputArea-output")
    expect(outputs.filter(has_text="loaded")).to_have_count(1)
    expect(outputs.filter(has_text="22")).to_have_count(1)
    assert sources(page) == ["# Workspace (unsaved edit)", "x = 20\nprint('loaded')", "x + 2",
                             "y = x * 3\ny"]  # fmt: skip
    shoot(page, f"{shot}-01-agent-edited")


def undo_in_the_runs_tab(page: Any, shot: str, *, last_turn_first: bool = False) -> None:
    page.locator('.jp-AgiTab[data-tab="runs"]').click()
    undo = page.locator(".jp-AgiRun").first.locator(".jp-AgiUndo button")
    expect(undo).to_have_text("Undo", timeout=30_000)
    if last_turn_first:  # turn 3 ran the cells: rewinding it takes their outputs away
        picker = page.locator(".jp-AgiRun").first.locator(".jp-AgiUndoTurn")
        picker.select_option("3")
        undo.click()
        expect(page.locator(".jp-AgiRun").first.locator(".jp-AgiUndo")).to_contain_text(
            "restored", timeout=30_000
        )
        expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(4)
        assert sources(page)[2:] == ["x + 2", "y = x * 3\ny"]
        assert all(not c.get("outputs") for c in model_cells(page))
        shoot(page, f"{shot}-02-turn-3-undone")
        picker.select_option("")
    undo.click()
    expect(page.locator(".jp-AgiRun").first.locator(".jp-AgiUndo")).to_contain_text(
        "restored", timeout=30_000
    )
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(3)
    assert sources(page) == ["# Workspace (unsaved edit)", "x = 20\nprint('loaded')", "x + 1"]
    assert all(not c.get("outputs") for c in model_cells(page))
    shoot(page, f"{shot}-02-undone")


@pytest.mark.both_backends
def test_the_panel_agent_edits_and_runs_the_open_notebook(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    on_disk = write_notebook(lab.root, "workspace.ipynb", CELLS)
    open_lab(page, lab)
    work_through_the_panel(page, fake, "workspace.ipynb", "tab")
    assert (lab.root / "workspace.ipynb").read_bytes() == on_disk, "the tab holds the changes"
    tools = page.locator(".jp-AgiTool[data-tool='notebook.read']")
    tools.first.locator("summary").click()
    expect(tools.first).to_contain_text("read from the open tab")
    expect(tools.first).to_contain_text("(unsaved edit)")
    undo_in_the_runs_tab(page, "tab", last_turn_first=True)


@pytest.fixture
def rtc_lab(tmp_path: Path, fake: FakeLLMServer) -> Iterator[LabServer]:
    server = start_lab(tmp_path, fake.url, rtc=True)
    try:
        yield server
    finally:
        server.stop()


def test_with_collaboration_the_agent_edits_the_shared_document(
    page: Any, rtc_lab: LabServer, fake: FakeLLMServer
) -> None:
    write_notebook(rtc_lab.root, "shared.ipynb", CELLS)
    open_lab(page, rtc_lab)
    work_through_the_panel(page, fake, "shared.ipynb", "rtc")
    tools = page.locator(".jp-AgiTool[data-tool='notebook.read']")
    tools.first.locator("summary").click()
    expect(tools.first).to_contain_text("read from the shared (RTC) document")
    undo_in_the_runs_tab(page, "rtc")


def test_agi_in_a_kernel_edits_its_own_notebook_through_the_open_tab(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    cells = [
        ("setup", "code", "%load_ext agi_jupyter"),
        ("target", "code", "answer = 6 * 7\nanswer"),
        ("ask", "code", "%%agi -a build\nfix the target cell and run it"),
        ("undo", "code", "%agi undo {_.run_id}"),
    ]
    write_notebook(lab.root, "own.ipynb", cells)
    fake.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.read", {})]),
        Turn(tool_calls=[
            FakeToolCall("notebook.edit", {"cell_id": "target", "source": "answer = 6 * 9\nanswer",
                                           "expected_hash": source_hash("answer = 6 * 7\nanswer")}),
            FakeToolCall("notebook.insert", {"source": "## Checked by the agent",
                                             "cell_type": "markdown", "after_cell_id": "target"}),
        ]),
        Turn(tool_calls=[FakeToolCall("notebook.run", {"cell_ids": ["target"]})]),
        Turn(text="The target cell now says 54."),
    )  # fmt: skip
    open_lab(page, lab)
    open_notebook(page, "own.ipynb")
    for index in range(3):  # the undo cell comes later
        run_cell(page, index)
    expect(page.locator(".jp-Notebook")).to_contain_text("The target cell now says 54.",
                                                          timeout=90_000)  # fmt: skip
    expect(cell_editors(page).nth(1)).to_contain_text("answer = 6 * 9")
    expect(
        page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output")
    ).to_contain_text("54")
    md = model_cells(page)
    assert [c["source"] for c in md][2] == "## Checked by the agent"
    tool_block = page.locator(".jp-Notebook details").filter(has_text="notebook.read").first
    tool_block.locator("summary").click()
    expect(tool_block).to_contain_text("read from the open tab")
    shoot(page, "kernel-01-agi-edited-its-notebook")

    run_cell(page, 4)
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(4, timeout=60_000)
    expect(cell_editors(page).nth(1)).to_contain_text("answer = 6 * 7")
    shoot(page, "kernel-02-undone")
