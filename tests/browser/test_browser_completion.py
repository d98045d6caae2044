"""Inline completion in a real JupyterLab (Debian's chromium): ghost text from the AGI
provider in JupyterLab's own inline completer, accepted with the keyboard."""

from __future__ import annotations

import json
from typing import Any

import pytest
from browser_lab import LabServer, write_notebook
from panel_page import open_lab, run_lab_command, shoot
from playwright.sync_api import expect

from agi_jupyter.testing import FakeLLMServer, Turn

SUGGESTION = "return a + b"


pytestmark = pytest.mark.usefixtures("no_kernels_left")


def cell_source(page: Any) -> str:
    source: str = page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells[0].getSource()"
    )
    return source


def test_ghost_text_appears_in_a_cell_and_tab_accepts_it(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    fake.default_rule = lambda _protocol, _body: Turn(text=f"```python\n    {SUGGESTION}\n```")
    write_notebook(lab.root, "complete.ipynb", [("add", "code", "")])
    open_lab(page, lab)
    run_lab_command(page, "docmanager:open", {"path": "complete.ipynb", "factory": "Notebook"})
    editor = page.locator(".jp-Notebook .jp-Cell .jp-InputArea-editor .cm-content").first
    editor.click()
    page.keyboard.type("def add(a, b):")
    page.keyboard.press("Enter")  # the editor indents the body
    # Lab asks at the end of a line that is not blank: the answer repeats the line's start
    page.keyboard.type("ret")
    ghost = page.locator(".jp-GhostText")
    expect(ghost).to_contain_text("urn a + b", timeout=30_000)
    shoot(page, "completion-01-ghost-text")
    typed = cell_source(page)  # as the editor indented it (or not)
    assert typed.startswith("def add(a, b):\n")
    assert typed.endswith("ret")
    page.keyboard.press("Tab")
    expect(ghost).to_have_count(0)
    assert cell_source(page) == typed + "urn a + b"
    sent = [json.dumps(r.body["messages"]) for r in fake.requests]
    at_cursor = json.dumps(typed + "<CURSOR>")[1:-1]
    assert any(at_cursor in body for body in sent)  # the cell's prefix, up to the cursor
    shoot(page, "completion-02-accepted")
