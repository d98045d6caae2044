"""``@`` mentions in the panel's composer, in a real JupyterLab (Debian's chromium): typing
``@`` lists the open notebook kernel's variables, the keyboard picks a DataFrame, and the
message sends its schema to the model (the fake LLM server records the request)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from browser_lab import LabServer, write_notebook
from panel_page import open_lab, open_panel, run_lab_command, shoot
from playwright.sync_api import expect

from agi_jupyter.testing import FakeLLMServer

FRAME = "import pandas as pd\nprices = pd.DataFrame({'price': [1.5, 2.0], 'city': ['a', 'b']})"


pytestmark = pytest.mark.usefixtures("no_kernels_left")


def test_an_at_var_mention_sends_the_dataframe_schema(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    write_notebook(lab.root, "mentions.ipynb", [("load", "code", FRAME)])
    open_lab(page, lab)
    run_lab_command(page, "docmanager:open", {"path": "mentions.ipynb", "factory": "Notebook"})
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle", timeout=60_000)
    run_lab_command(page, "notebook:run-all-cells")
    expect(page.locator(".jp-InputPrompt").first).to_contain_text("[1]", timeout=60_000)
    open_panel(page)

    prompt = page.locator(".jp-AgiPrompt")
    prompt.click()
    page.keyboard.type("what is the mean of @pri")
    option = page.locator('.jp-AgiMentionMenu [role="option"][data-kind="var"]')
    expect(option).to_have_count(1, timeout=30_000)
    expect(option).to_contain_text("prices")
    expect(option).to_contain_text("shape (2, 2)")
    shoot(page, "mentions-01-completion-list")
    page.keyboard.press("Enter")  # picks the highlighted variable, does not send
    expect(page.locator(".jp-AgiMentionMenu")).to_have_count(0)
    expect(prompt).to_have_value("what is the mean of @prices ")
    expect(page.locator('.jp-AgiComposer .jp-AgiMentionChip[data-kind="var"]')).to_contain_text(
        "@prices"
    )
    page.keyboard.type("?")
    page.keyboard.press("Enter")

    user = page.locator(".jp-AgiMessage-user").last
    expect(user.locator('.jp-AgiMentionChip[data-kind="var"]')).to_contain_text(
        "prices", timeout=60_000
    )
    expect(page.locator(".jp-AgiMessage-assistant").last).to_contain_text("echo", timeout=60_000)
    sent = json.dumps(fake.requests[-1].body)
    for schema in ("shape: (2, 2)", "price: float64", 'ref=\\"prices\\"'):
        assert schema in sent, schema
    shoot(page, "mentions-02-sent-with-the-schema")
