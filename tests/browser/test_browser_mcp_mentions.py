"""An MCP server's resource as an ``@`` mention in the panel's composer, in a real JupyterLab
(Debian's chromium): typing ``@`` lists the configured MCP server's resources under its
heading, the keyboard picks one, and the message sends its text to the model (the fake LLM
server records the request). The MCP server is a real one (``tests/mcp/servers/features.py``),
configured before the Lab starts: this module has a Lab of its own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from browser_lab import LabServer, start_lab
from panel_page import open_lab, open_panel, shoot
from playwright.sync_api import expect

from agi_jupyter.testing import FakeLLMServer
from tests.mcp.helpers import stdio_entry, write_mcp_json


@pytest.fixture(scope="module")
def lab(
    tmp_path_factory: pytest.TempPathFactory, fake_llm_session: FakeLLMServer, lab_backend: str
) -> Iterator[LabServer]:
    """A Lab whose project configures the ``feat`` MCP server (on SQLite: ``lab_backend``)."""
    base = tmp_path_factory.mktemp(f"lab-mcp-{lab_backend}")
    write_mcp_json(base / "root", {"feat": stdio_entry("features.py")})
    server = start_lab(base, fake_llm_session.url, timeout=180)  # a busy machine: bounded
    try:
        yield server
    finally:
        server.stop()


def test_an_at_mention_of_an_mcp_resource_sends_its_text(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    open_lab(page, lab)
    open_panel(page)

    prompt = page.locator(".jp-AgiPrompt")
    prompt.click()
    page.keyboard.type("summarize @read")
    menu = page.locator(".jp-AgiMentionMenu")
    option = menu.locator('[role="option"][data-kind="resource"]')
    expect(option).to_have_count(1, timeout=60_000)  # the server starts to be listed
    expect(option).to_contain_text("feat:readme")
    expect(option).to_contain_text("What this server is")
    expect(menu.locator(".jp-AgiMentionMenu-heading")).to_have_text("MCP · feat")
    shoot(page, "mcp-mentions-01-completion-list")
    page.keyboard.press("Enter")  # picks the highlighted resource, does not send
    expect(menu).to_have_count(0)
    expect(prompt).to_have_value("summarize @feat:readme ")
    chip = page.locator('.jp-AgiComposer .jp-AgiMentionChip[data-kind="resource"]')
    expect(chip).to_contain_text("@feat:readme")
    page.keyboard.press("Enter")

    user = page.locator(".jp-AgiMessage-user").last
    expect(user.locator('.jp-AgiMentionChip[data-kind="resource"]')).to_contain_text(
        "feat:memo://readme", timeout=60_000
    )
    expect(page.locator(".jp-AgiMessage-assistant").last).to_contain_text("echo", timeout=60_000)
    sent = json.dumps(fake.requests[-1].body)
    assert '<mention kind=\\"resource\\" ref=\\"feat:memo://readme\\">\\na test server' in sent
    shoot(page, "mcp-mentions-02-sent-with-the-resource")
