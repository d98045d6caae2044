"""Cell actions in a real JupyterLab (Debian's chromium): *Fix* on a failing cell starts a run
of the notebook's session in the panel, with the traceback, and the agent's edit lands in the
cell."""

from __future__ import annotations

import json
from typing import Any

import pytest
from browser_lab import LabServer, write_notebook
from panel_page import open_lab, run_lab_command, shoot
from playwright.sync_api import expect

from agi_jupyter.notebook import source_hash
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn

ERROR = {
    "output_type": "error",
    "ename": "ZeroDivisionError",
    "evalue": "division by zero",
    "traceback": ["\u001b[0;31mZeroDivisionError\u001b[0m: division by zero"],
}


pytestmark = pytest.mark.usefixtures("no_kernels_left")


def test_fix_on_a_failing_cell_produces_the_agents_edit(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    write_notebook(lab.root, "fix.ipynb", [("ratio", "code", "1 / 0")], {"ratio": [ERROR]})
    edit = {"cell_id": "ratio", "source": "1 / 2", "expected_hash": source_hash("1 / 0")}
    fake.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.edit", edit)]),
        Turn(text="It divided by zero; it divides by 2 now."),
    )
    open_lab(page, lab)
    run_lab_command(page, "docmanager:open", {"path": "fix.ipynb", "factory": "Notebook"})
    expect(page.locator(".jp-Notebook .jp-OutputArea-output")).to_contain_text("division by zero")
    page.locator(".jp-Notebook .jp-Cell").first.click(button="right")
    page.locator(".lm-Menu-item", has_text="AGI: Fix Cell").click()
    answer = page.locator(".jp-AgiMessage-assistant").last
    expect(answer).to_contain_text("divides by 2 now", timeout=90_000)
    editor = page.locator(".jp-Notebook .jp-Cell .jp-InputArea-editor").first
    expect(editor).to_contain_text("1 / 2")
    [first, *_] = [r for r in fake.requests if r.path.endswith("/chat/completions")]
    sent = json.dumps(first.body["messages"])
    assert "Fix cell `ratio`" in sent
    assert "ZeroDivisionError: division by zero" in sent  # the traceback, colours off
    shoot(page, "cell-actions-01-fixed")


def test_the_cell_toolbar_offers_the_actions(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    cells = [("fine", "code", "total = 2 + 2"), ("ratio", "code", "1 / 0")]
    write_notebook(lab.root, "toolbar.ipynb", cells, {"fine": [], "ratio": [ERROR]})
    open_lab(page, lab)
    run_lab_command(page, "docmanager:open", {"path": "toolbar.ipynb", "factory": "Notebook"})
    cells = page.locator(".jp-Notebook .jp-Cell")
    expect(cells).to_have_count(2)

    def button(cell: Any, action: str) -> Any:
        return cell.locator(f'.jp-cell-toolbar [data-command="agi-jupyter:{action}-cell"]')

    cells.nth(1).locator(".jp-InputPrompt").click()
    for action in ("explain", "fix", "edit"):
        expect(button(cells.nth(1), action)).to_be_visible()
    shoot(page, "cell-actions-02-toolbar")
    cells.nth(0).locator(".jp-InputPrompt").click()
    expect(button(cells.nth(0), "explain")).to_be_visible()
    expect(button(cells.nth(0), "fix")).to_be_hidden()  # no error output: nothing to fix
    button(cells.nth(0), "explain").click()
    expect(page.locator(".jp-AgiMessage-user").last).to_contain_text(
        "Explain cell fine", timeout=60_000
    )
    expect(page.locator(".jp-AgiMessage-assistant").last).to_contain_text("echo", timeout=60_000)
    assert "total = 2 + 2" in json.dumps(fake.requests[-1].body)
