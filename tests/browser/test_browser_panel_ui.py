"""What the side panel looks like and does beyond chatting: a header that fits the sidebar, one
header per answer, code blocks with Copy and Insert, run prompts, statuses as SVG icons, a
denied tool call after a reload, following the active notebook's session, and screenshots of
the panel in the light and dark themes compared with their references."""

from __future__ import annotations

import json
import re
from typing import Any

from browser_lab import LabServer
from panel_page import SESSION_SELECT, new_session, open_lab, open_panel, run_lab_command, send
from playwright.sync_api import expect

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.screens import check_screenshot

TURN = ".jp-AgiTurn-assistant"
CODE = "import pandas as pd\nframe = pd.read_csv('data.csv')\nprint(frame.head())"
ANSWER = (
    f"Here is how:\n\n## Steps\n\n1. read the file\n2. show it\n\n```python\n{CODE}\n```\nDone."
)
LIGHT_BACKGROUND = "rgb(255, 255, 255)"  # --jp-layout-color1 of JupyterLab Light
DARK_BACKGROUND = "rgb(33, 33, 33)"  # ... and of JupyterLab Dark
EMOJI = re.compile(r"[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF]")


def empty_notebook(lab: LabServer, name: str) -> None:
    """A notebook with one empty cell and a kernel (no "select a kernel" dialog)."""
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = {"cell_type": "code", "id": "c0", "metadata": {}, "source": "", "outputs": [],
            "execution_count": None}  # fmt: skip
    book = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": kernelspec},
            "cells": [cell]}  # fmt: skip
    (lab.root / name).write_text(json.dumps(book))


def open_notebook(page: Any, name: str) -> None:
    run_lab_command(page, "docmanager:open", {"path": name, "factory": "Notebook"})
    expect(page.locator(".jp-NotebookPanel:visible")).to_have_count(1)


def answer_with_a_tool_and_code(page: Any, lab: LabServer, fake: FakeLLMServer) -> Any:
    data = lab.root / "data"  # what the tool lists: the same whatever ran before
    data.mkdir(exist_ok=True)
    for name in ("data.csv", "notes.md"):
        (data / name).write_text("x\n")
    fake.enqueue(Turn(tool_calls=[FakeToolCall("fs_list", {"path": "data"})]), Turn(text=ANSWER))
    send(page, "How do I read my data?")
    turn = page.locator(TURN).last
    expect(turn).to_have_attribute("data-status", "complete")
    expect(turn.locator(".jp-AgiCodeBlock")).to_have_count(1)
    return turn


def test_the_header_fits_the_default_sidebar_width(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    open_lab(page, lab)
    panel = open_panel(page)
    new_session(page, agent="build", title="a session with a rather long title to cut")
    box = panel.bounding_box()
    assert 240 <= box["width"] <= 320, box  # JupyterLab's default sidebar width
    right = box["x"] + box["width"]
    for part in page.locator(".jp-AgiHeader-row > *").all():
        edge = part.bounding_box()
        assert edge["x"] >= box["x"], edge
        assert edge["x"] + edge["width"] <= right + 0.5, edge
    assert page.locator(".jp-AgiSessionSelect").bounding_box()["width"] >= 120
    for row in (".jp-AgiHeader", ".jp-AgiTabsRow", ".jp-AgiComposer"):
        widths = page.locator(row).evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert widths[0] <= widths[1], (row, widths)


def test_one_header_per_answer_and_code_blocks_to_copy_or_insert(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    empty_notebook(lab, "insert-here.ipynb")
    open_lab(page, lab)
    open_notebook(page, "insert-here.ipynb")
    open_panel(page)
    new_session(page, agent="build")  # the notebook's session (the panel follows it)
    turn = answer_with_a_tool_and_code(page, lab, fake)
    # the tool call's model turn and the final answer: two messages under one header
    expect(turn.locator(".jp-AgiTurn-header")).to_have_count(1)
    expect(turn.locator(".jp-AgiMessage")).to_have_count(2)
    expect(page.locator(".jp-AgiTurn-header")).to_have_count(2)  # the question and the answer
    expect(turn.locator("h2")).to_contain_text("Steps")
    expect(turn.locator("ol li")).to_have_count(2)
    block = turn.locator(".jp-AgiCodeBlock")
    assert block.locator("pre code span").count() > 3  # highlighted by JupyterLab

    block.locator(".jp-AgiCodeCopy").click()
    assert page.evaluate("() => navigator.clipboard.readText()") == CODE

    cells = page.locator(".jp-NotebookPanel:visible .jp-Cell")
    expect(cells).to_have_count(1)
    block.locator(".jp-AgiCodeInsert").click()
    expect(cells).to_have_count(2)
    source = page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.activeCell.model.sharedModel"
        ".getSource()"
    )
    assert source == CODE


def test_runs_show_their_prompt_statuses_are_svg_and_the_view_toggle_is_for_the_chat(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    open_lab(page, lab)
    panel = open_panel(page)
    new_session(page, agent="build")
    answer_with_a_tool_and_code(page, lab, fake)
    expect(page.locator(".jp-AgiViewToggle")).to_be_visible()
    page.locator('.jp-AgiTab[data-tab="runs"]').click()
    expect(page.locator(".jp-AgiViewToggle")).to_have_count(0)
    run = page.locator(".jp-AgiRun").first
    expect(run.locator(".jp-AgiRun-prompt")).to_have_text("How do I read my data?")
    expect(run.locator(".jp-AgiStatus-succeeded svg")).to_have_count(1)
    page.locator('.jp-AgiTab[data-tab="chat"]').click()
    page.locator(".jp-AgiTool summary").first.click()
    expect(page.locator(".jp-AgiTool .jp-AgiStatus svg")).to_have_count(1)
    assert not EMOJI.search(panel.inner_text()), "statuses must not need an emoji font"


def test_a_denied_tool_call_is_shown_denied_after_a_reload(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    open_lab(page, lab)
    open_panel(page)
    new_session(page, agent="general")  # no tools: a call is refused
    send(page, '/tool shell.run {"command": "ls"}')
    tool = page.locator('.jp-AgiTool[data-tool="shell.run"]')
    expect(tool).to_have_attribute("data-status", "denied")
    page.reload()
    page.wait_for_selector("#jp-main-dock-panel")
    open_panel(page)
    expect(tool).to_have_attribute("data-status", "denied")
    expect(tool.locator(".jp-AgiTool-state")).to_have_text("denied")


def test_the_panel_follows_the_active_notebook_session_unless_one_is_pinned(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    for name in ("first.ipynb", "second.ipynb"):
        empty_notebook(lab, name)
    with lab.open_store() as store:
        first = store.create_session(title="first's session", notebook_path="first.ipynb")
        second = store.create_session(title="second's session", notebook_path="second.ipynb")
    open_lab(page, lab)
    open_panel(page)
    select = page.locator(SESSION_SELECT)
    open_notebook(page, "first.ipynb")
    expect(select).to_have_value(first.id)
    open_notebook(page, "second.ipynb")
    expect(select).to_have_value(second.id)
    expect(page.locator(".jp-AgiProject-follow")).to_have_text("following second.ipynb")

    page.locator(".jp-AgiPin").click()
    expect(page.locator(".jp-AgiProject-follow")).to_have_text("pinned")
    open_notebook(page, "first.ipynb")
    expect(page.locator(".jp-AgiProject-follow")).to_have_text("pinned")
    expect(select).to_have_value(second.id)

    page.locator(".jp-AgiPin").click()  # unpinned: back to the active notebook's session
    expect(select).to_have_value(first.id)
    expect(page.locator(".jp-AgiProject-follow")).to_have_text("following first.ipynb")


def assert_the_tab_row_fits(page: Any) -> None:
    """The tabs and the simple | full toggle side by side in the row: no box overlaps
    another, all inside the row, and the row does not scroll sideways."""
    row = page.locator(".jp-AgiTabsRow").bounding_box()
    boxes = [t.bounding_box() for t in page.locator(".jp-AgiTab").all()]
    toggle = page.locator(".jp-AgiViewToggle").bounding_box()
    assert len(boxes) == 3, boxes
    for left, right in zip([*boxes, toggle], [*boxes, toggle][1:], strict=False):
        assert left["x"] + left["width"] <= right["x"] + 0.5, (left, right)
    assert row["x"] <= boxes[0]["x"], (row, boxes[0])
    assert toggle["x"] + toggle["width"] <= row["x"] + row["width"] + 0.5, (row, toggle)
    widths = page.locator(".jp-AgiTabsRow").evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert widths[0] <= widths[1], widths


def test_screenshots_of_the_panel_in_the_light_and_dark_themes(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    open_lab(page, lab)
    panel = open_panel(page)
    new_session(page, agent="build", title="screenshots")
    answer_with_a_tool_and_code(page, lab, fake)
    page.locator(".jp-AgiTool summary").first.click()
    expect(page.locator(".jp-AgiTool-body")).to_be_visible()
    prompt = page.locator(".jp-AgiPrompt")
    prompt.fill("What next?")
    prompt.blur()  # the focus ring would depend on what last took the focus
    page.mouse.move(0, 0)  # no hover effects
    # What changes from run to run: times, the session's creation time in the picker, and
    # the token counts and the context gauge (the system prompt grows with every tool an agent
    # gets).
    masks = [
        page.locator(".jp-AgiTurn-time"),
        page.locator(".jp-AgiSessionSelect"),
        page.locator(".jp-AgiTurn-meta"),
        page.locator(".jp-AgiRunLine-context"),
    ]
    expect(panel).to_have_css("background-color", LIGHT_BACKGROUND)
    assert_the_tab_row_fits(page)
    check_screenshot(panel, "panel-light", mask=masks)
    try:
        run_lab_command(page, "apputils:change-theme", {"theme": "JupyterLab Dark"})
        expect(panel).to_have_css("background-color", DARK_BACKGROUND)
        assert_the_tab_row_fits(page)
        check_screenshot(panel, "panel-dark", mask=masks)
    finally:  # the theme is a user setting of the shared JupyterLab: put it back
        run_lab_command(page, "apputils:change-theme", {"theme": "JupyterLab Light"})
        expect(panel).to_have_css("background-color", LIGHT_BACKGROUND)
