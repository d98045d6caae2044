"""What a person does with the AGI side panel, as Playwright steps (used by the browser tests)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from browser_lab import REPO, LabServer
from playwright.sync_api import expect

ARTIFACTS = Path(os.environ.get("AGI_TEST_ARTIFACTS", REPO / "test-artifacts")) / "browser"
PANEL_TAB = '.jp-SideBar li[data-id="agi-jupyter-panel"]'


def shoot(page: Any, name: str) -> Path:
    """Save a screenshot as a test artifact."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def open_lab(page: Any, lab: LabServer) -> None:
    """JupyterLab with an empty workspace (``reset``: nothing left open by an earlier test;
    JupyterLab drops the parameter, so a reload keeps what the test opened)."""
    page.goto(lab.lab_url() + "&reset")
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    page.wait_for_selector(PANEL_TAB)
    # Restored: an empty workspace ends with JupyterLab opening its Launcher, which takes the
    # focus; a test that moves the focus before then can lose it to the Launcher.
    page.wait_for_selector(".jp-Launcher", timeout=60_000)


def open_panel(page: Any) -> Any:
    """Show the panel (clicking its sidebar tab unless it is already shown).

    After a reload JupyterLab's layout restorer may show the panel itself, at any moment: a
    click landing just as it does toggles the panel shut again, so a panel still hidden after
    a click gets another look (a few bounded tries) rather than failing."""
    panel = page.locator(".jp-AgiPanel")
    for _ in range(3):
        if panel.is_visible():
            return panel
        page.locator(PANEL_TAB).click()
        try:
            expect(panel).to_be_visible(timeout=10_000)
        except AssertionError:
            continue
    expect(panel).to_be_visible()
    return panel


def open_new_session_form(page: Any) -> Any:
    """Show the new-session form (unless it is already shown)."""
    form = page.locator(".jp-AgiNewSessionForm")
    if not form.is_visible():
        page.locator(".jp-AgiNewSession").click()
    expect(form).to_be_visible()
    return form


SESSION_SELECT = ".jp-AgiSessionSelect select"


def sdk_options(page: Any) -> list[dict[str, Any]]:
    """The SDK choices of the open new-session form: value, label, disabled, title."""
    select = page.locator(".jp-AgiNewSessionForm .jp-AgiSdkSelect select")
    expect(select).to_be_visible()
    options: list[dict[str, Any]] = select.locator("option").evaluate_all(
        "options => options.map(o => ({value: o.value, label: o.textContent,"
        " disabled: o.disabled, title: o.title}))"
    )
    return options


def new_session(
    page: Any, *, agent: str = "", sdk: str = "", model: str = "", title: str = ""
) -> str:
    """Create a session with the panel's form; returns its id (the picker's value)."""
    select = page.locator(SESSION_SELECT)
    before = select.input_value() if select.is_enabled() else ""
    form = open_new_session_form(page)
    if agent:
        form.locator(".jp-AgiAgentSelect select").select_option(agent)
    if sdk:
        form.locator(".jp-AgiSdkSelect select").select_option(sdk)
    if model:
        form.locator(".jp-AgiModelSelect").fill(model)
    if title:
        form.locator(".jp-AgiTitleInput").fill(title)
    form.locator(".jp-AgiCreateSession").click()
    expect(form).to_be_hidden()
    expect(select).not_to_have_value(before or "")
    value: str = select.input_value()
    assert value.startswith("ses_"), value
    return value


def send(page: Any, text: str) -> None:
    prompt = page.locator(".jp-AgiPrompt")
    prompt.fill(text)
    prompt.press("Enter")


def transcript(page: Any) -> list[tuple[str, str]]:
    """(message id, text) of every message shown, in order."""
    items = page.locator(".jp-AgiMessage")
    return [
        (
            items.nth(i).get_attribute("data-message-id") or "",
            " ".join(items.nth(i).locator(".jp-AgiText, .jp-AgiTool-name").all_inner_texts()),
        )
        for i in range(items.count())
    ]


def wait_for_transcript(page: Any, expected: list[tuple[str, str]], timeout: float = 15) -> None:
    """Wait until the panel shows ``expected``: Markdown renders asynchronously after the
    message elements exist, so a transcript read at once can still hold empty texts."""
    deadline = time.monotonic() + timeout
    shown = transcript(page)
    while shown != expected and time.monotonic() < deadline:
        page.wait_for_timeout(100)
        shown = transcript(page)
    assert shown == expected


def run_lab_command(page: Any, command: str, args: dict[str, Any] | None = None) -> Any:
    """Execute a JupyterLab command (the app is exposed with ``expose_app_in_browser``)."""
    return page.evaluate(
        "([command, args]) => window.jupyterapp.commands.execute(command, args).then(() => true)",
        [command, args or {}],
    )
