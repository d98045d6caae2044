"""The chat widget and ``%%agi`` in a real JupyterLab, driven through Debian's chromium."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from kernel_lab import ARTIFACTS, Lab, start_lab

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn
from tests.screens import check_screenshot

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("AGI_CHROMIUM", "/usr/bin/chromium")
MARKDOWN = (
    "## Plan\n\n1. read\n2. plot\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n"
    "```python\nimport pandas as pd\nframe = pd.read_csv('data.csv')\n```"
)
CELLS = [
    "import agi_jupyter\n\nchat = agi_jupyter.chat()\nchat",
    "%load_ext agi_jupyter",
    "%%agi -a build\nRun some code.",
]


@pytest.fixture
def lab(tmp_path: Path, fake_llm: FakeLLMServer) -> Iterator[Lab]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no chromium at {CHROMIUM}: scripts/install.sh installs Debian's chromium")
    server = start_lab(tmp_path, fake_llm.url)
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    book.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(book, server.root / "chat.ipynb")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def page(lab: Lab) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"],
        )  # fmt: skip
        context = browser.new_context(viewport={"width": 1300, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(60_000)
        try:
            yield page
        finally:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(Exception):  # best effort: the page may be gone
                page.screenshot(path=str(ARTIFACTS / "chat-widget-last.png"), full_page=True)
            context.close()
            browser.close()


def test_chat_widget_streams_an_answer_in_jupyterlab(
    lab: Lab, page: Any, fake_llm: FakeLLMServer
) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=30_000)  # a kernel on a busy machine (as tests/browser does)
    fake_llm.enqueue(  # the turns of the %%agi cell
        Turn(tool_calls=[FakeToolCall("python", {"code": "answer = 6 * 7"})]),
        Turn(text="The answer is **42**."),
    )
    page.goto(lab.tree_url("chat.ipynb"))
    page.wait_for_selector("#jp-main-dock-panel")
    expect(page.locator(".jp-Notebook")).to_be_visible()
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle", timeout=90_000)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()

    # the %%agi cell streams its tool block and Markdown answer
    output = page.locator(".jp-Cell").nth(2).locator(".jp-OutputArea")
    expect(output.locator("details summary")).to_contain_text("python completed")
    expect(output.locator("strong", has_text="42")).to_be_visible()

    # the widget: type, send, watch the answer stream in
    chunks = [f"word{i} " for i in range(12)]
    fake_llm.enqueue(Turn(chunks=chunks, fault=Fault(stall_between_events=0.15)))
    widget = page.locator(".agi-chat")
    expect(widget).to_be_visible()
    widget.locator(".agi-input").fill("hello from the browser")
    widget.locator(".agi-send").click()
    expect(widget.locator(".agi-user").last).to_have_text("hello from the browser")
    streaming = widget.locator(".agi-assistant.agi-streaming")
    expect(streaming).to_contain_text("word1", timeout=30_000)  # partial text while streaming
    expect(widget.locator(".agi-stop")).to_be_enabled()
    answer = widget.locator(".agi-assistant").last
    expect(answer).to_have_text("".join(chunks), timeout=30_000)
    expect(widget.locator(".agi-assistant.agi-streaming")).to_have_count(0)
    expect(widget.locator(".agi-info").last).to_contain_text("fake:echo")
    expect(widget.locator(".agi-send")).to_be_enabled()
    # the %%agi cell shares the notebook session: its 4 messages, and the 2 of this answer
    expect(widget.locator(".agi-session")).to_contain_text("· 6 msgs")  # counts updated

    # the same Markdown as the panel: JupyterLab's renderer, code highlighted, a Copy button
    fake_llm.enqueue(Turn(text=MARKDOWN))
    widget.locator(".agi-input").fill("show me markdown")
    widget.locator(".agi-send").click()
    answer = widget.locator(".agi-assistant").last
    expect(answer.locator(".jp-RenderedMarkdown h2")).to_contain_text("Plan")
    expect(answer.locator("ol li")).to_have_count(2)
    expect(answer.locator("table td")).to_have_count(2)
    expect(answer.locator(".agi-code-block .agi-copy")).to_have_count(1)
    assert answer.locator("pre code span").count() > 3  # highlighted
    expect(widget.locator(".agi-session")).to_contain_text("· 8 msgs")
    page.mouse.move(0, 0)
    # what changes from run to run: run ids and the session's id in the pickers
    check_screenshot(
        widget,
        "chat-widget",
        mask=[widget.locator(".agi-session"), widget.locator(".agi-info")],
    )
    # The footer (times, tokens) masked by its block: the <sub>'s own box ends where its
    # varying text wraps.
    footer = output.locator("sub").locator("xpath=..")
    check_screenshot(output, "agi-cell-output", mask=[footer])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "chat-widget.png"), full_page=True)
