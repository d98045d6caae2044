"""The AGI side panel in a real JupyterLab, driven in Debian's chromium through Playwright.

Each test opens JupyterLab in a fresh browser context, uses the panel as a person would, and
saves screenshots to ``test-artifacts/browser/``. The model is the scripted fake LLM server.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from browser_lab import LabServer
from panel_page import (
    SESSION_SELECT,
    new_session,
    open_lab,
    open_new_session_form,
    open_panel,
    run_lab_command,
    sdk_options,
    send,
    shoot,
    transcript,
    wait_for_transcript,
)
from playwright.sync_api import expect

from agi_jupyter.testing import FakeLLMServer, Fault, Turn

ASSISTANT = ".jp-AgiMessage-assistant"
TURN = ".jp-AgiTurn-assistant"


@pytest.mark.both_backends
def test_chat_streams_shows_tools_and_survives_a_reload(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    open_lab(page, lab)
    # Keyboard: the "Open the AGI Panel" shortcut shows the panel and focuses the message box.
    page.locator("#jp-main-dock-panel").click()
    page.keyboard.press("Alt+Shift+A")
    expect(page.locator(".jp-AgiPanel")).to_be_visible()
    expect(page.locator(".jp-AgiPrompt")).to_be_focused()
    session_id = new_session(page, agent="build", title="browser chat")
    shoot(page, "chat-01-new-session")

    chunks = ["Hello ", "from ", "the ", "**streamed** ", "answer."]
    # Long enough that a loaded browser still sees the answer streaming (at 0.15 s a chunk it
    # was sometimes complete before the first look).
    fake.enqueue(Turn(chunks=chunks, fault=Fault(stall_between_events=0.5)))
    send(page, "Say hello")
    expect(page.locator(f'{ASSISTANT}[data-status="streaming"]')).to_be_visible()
    answer = page.locator(ASSISTANT).last
    expect(answer).to_contain_text("Hello from the streamed answer.")
    expect(answer).to_have_attribute("data-status", "complete")
    expect(answer.locator("strong")).to_have_text("streamed")  # rendered as Markdown
    turn = page.locator(TURN).last  # one header and one meta line per answer
    expect(turn.locator(".jp-AgiTurn-meta")).to_contain_text("echo")
    expect(turn.locator(".jp-AgiTurn-meta")).to_contain_text(" in / ")

    send(page, '/tool fs.list {"path": "."}')
    tool = page.locator('.jp-AgiTool[data-tool="fs.list"]')
    expect(tool).to_have_attribute("data-status", "completed")
    expect(page.locator(ASSISTANT).last).to_contain_text(re.compile(r"tool fs[._]list returned"))
    tool.locator("summary").click()
    expect(tool.locator(".jp-AgiTool-body")).to_contain_text("Arguments")
    expect(tool.locator(".jp-AgiTool-body")).to_contain_text("Output")
    shoot(page, "chat-02-tool-block")
    before = transcript(page)
    assert len(before) == 5, before  # user, answer, user, tool call, tool answer
    assert all(message_id.startswith("msg_") for message_id, _ in before)

    page.reload()
    page.wait_for_selector("#jp-main-dock-panel")
    open_panel(page)
    expect(page.locator(SESSION_SELECT)).to_have_value(session_id)
    expect(page.locator(".jp-AgiMessage")).to_have_count(len(before))
    wait_for_transcript(page, before)
    shoot(page, "chat-03-after-reload")

    page.locator(".jp-AgiViewToggle label", has_text="simple").click()
    expect(page.locator(".jp-AgiTool")).to_have_count(0)
    expect(page.locator(ASSISTANT).first).to_contain_text("Hello from the streamed answer.")
    page.locator(".jp-AgiViewToggle label", has_text="full").click()
    expect(page.locator(".jp-AgiTool")).to_have_count(1)

    # The transcript is what the server's store holds: PostgreSQL when configured (no SQLite
    # file is made beside the project then), else the project's SQLite file.
    with lab.open_store() as store:
        stored = store.list_messages(session_id)
    shown = [message_id for message_id, _ in before]
    # Every message shown is stored, in order (a tool call and its result show as one block).
    assert [m.id for m in stored if m.id in shown] == shown
    assert len(stored) == 6
    assert (lab.root / ".agi" / "agi.sqlite").exists() == (lab.database_url is None)


def test_stop_cancels_a_long_answer(page: Any, lab: LabServer, fake: FakeLLMServer) -> None:
    open_lab(page, lab)
    open_panel(page)
    new_session(page)
    words = [f"word{i} " for i in range(300)]
    fake.enqueue(Turn(chunks=words, fault=Fault(stall_between_events=0.1)))
    send(page, "Write a very long essay")
    streaming = page.locator(f'{ASSISTANT}[data-status="streaming"]')
    expect(streaming).to_contain_text("word3 ")
    shoot(page, "stop-01-streaming")
    page.locator(".jp-AgiStop").click()
    expect(page.locator(".jp-AgiRunLine")).to_have_attribute("data-run-status", "cancelled")
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-status", "cancelled")
    expect(page.locator(".jp-AgiStop")).to_be_disabled()
    page.locator('.jp-AgiTab[data-tab="runs"]').click()
    expect(page.locator(".jp-AgiRun").first).to_have_attribute("data-run-status", "cancelled")
    shoot(page, "stop-02-cancelled")


@pytest.mark.both_backends
def test_a_reload_during_a_run_resumes_it(page: Any, lab: LabServer, fake: FakeLLMServer) -> None:
    open_lab(page, lab)
    open_panel(page)
    session_id = new_session(page)
    words = [f"part{i} " for i in range(40)]
    # The stream waits after a few words until the reloaded panel has shown the run as running,
    # however long the reload takes on a busy machine.
    fake.enqueue(Turn(chunks=words, fault=Fault(hold_after=5)))
    send(page, "Count slowly")
    expect(page.locator(f'{ASSISTANT}[data-status="streaming"]')).to_contain_text("part2 ")
    page.reload()  # the run goes on in the server; the panel comes back to it
    page.wait_for_selector("#jp-main-dock-panel")
    open_panel(page)
    expect(page.locator(SESSION_SELECT)).to_have_value(session_id)
    expect(page.locator(".jp-AgiRunLine")).to_have_attribute("data-run-status", "running")
    shoot(page, "resume-01-after-reload")
    fake.release()
    answer = page.locator(ASSISTANT).last
    expect(answer).to_have_attribute("data-status", "complete", timeout=60_000)
    expect(answer.locator(".jp-AgiText")).to_have_text("".join(words).strip())
    expect(page.locator(".jp-AgiRunLine")).to_have_attribute("data-run-status", "succeeded")
    expect(page.locator(".jp-AgiMessage")).to_have_count(2)
    # The context gauge of the last request (issue 25): the fake's window is 1,000,000.
    # Short on the run line, whole in its tooltip.
    gauge = page.locator(".jp-AgiRunLine-context")
    expect(gauge).to_have_text(re.compile(r"^context \d[\d.]*k? / 1M$"))
    whole = re.compile(r"^context \d[\d,]* / 1,000,000 tokens · compacts at \d[\d,]*$")
    expect(gauge).to_have_attribute("title", whole)
    shoot(page, "context-01-gauge")


def test_api_errors_are_shown_readably(page: Any, lab: LabServer, fake: FakeLLMServer) -> None:
    open_lab(page, lab)
    open_panel(page)
    new_session(page, model="openai:gpt-5-mini")
    send(page, "hello")
    error = page.locator(".jp-AgiError")
    expect(error).to_contain_text("not configured")
    expect(error).to_contain_text("OPENAI_API_KEY")
    expect(page.locator(".jp-AgiMessage")).to_have_count(0)  # not in the transcript...
    expect(page.locator(".jp-AgiPrompt")).to_have_value("hello")  # ...but back in the box
    shoot(page, "errors-01-provider-not-configured")
    error.locator("button").click()
    expect(error).to_have_count(0)


@pytest.mark.both_backends
def test_a_notebook_run_appears_live_in_the_panel(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    open_lab(page, lab)
    open_panel(page)
    session_id = new_session(page, title="notebook session")
    sources = [f"%load_ext agi_jupyter\n%agi use {session_id}", "%%agi\nhello from the notebook"]
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "cells": [
            {"cell_type": "code", "id": f"cell-{i}", "metadata": {}, "source": source,
             "outputs": [], "execution_count": None}
            for i, source in enumerate(sources)
        ],
    }  # fmt: skip
    (lab.root / "agi-demo.ipynb").write_text(json.dumps(notebook))

    run_lab_command(page, "docmanager:open", {"path": "agi-demo.ipynb", "factory": "Notebook"})
    expect(page.locator(".jp-Notebook")).to_be_visible()
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle", timeout=60_000)
    open_panel(page)
    # The panel follows the active notebook, which has no session yet...
    expect(page.locator(SESSION_SELECT)).to_have_value("")
    expect(page.locator(".jp-AgiProject-follow")).to_have_text("following agi-demo.ipynb")
    run_lab_command(page, "notebook:run-all-cells")
    # ...until `%agi use` gives it the session made in the panel.
    expect(page.locator(SESSION_SELECT)).to_have_value(session_id, timeout=30_000)

    answer = page.locator(ASSISTANT).last
    expect(answer).to_contain_text("echo: hello from the notebook", timeout=60_000)
    expect(page.locator(".jp-AgiMessage-user").last).to_contain_text("hello from the notebook")
    page.locator('.jp-AgiTab[data-tab="runs"]').click()
    expect(page.locator(".jp-AgiRun").first).to_have_attribute(
        "data-run-status", "succeeded", timeout=60_000
    )
    shoot(page, "notebook-01-run-in-panel")


def test_diffs_and_research_reports_in_the_artifacts_view(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    open_lab(page, lab)
    open_panel(page)
    new_session(page, agent="build")
    patch = "*** Begin Patch\n*** Add File: notes.txt\n+hello panel\n*** End Patch"
    send(page, "/tool apply_patch " + json.dumps({"patch": patch}))
    tool = page.locator('.jp-AgiTool[data-tool="apply_patch"]')
    expect(tool).to_have_attribute("data-status", "completed")
    tool.locator("summary").click()
    expect(tool.locator(".jp-AgiDiff-add")).to_contain_text("+hello panel")
    expect(page.locator(".jp-AgiRunLine")).to_have_attribute("data-run-status", "succeeded")
    run_id = page.locator(".jp-AgiRunLine").get_attribute("data-run-id")
    assert run_id

    # A deep research report as the research runner stores it (markdown text + cited sources).
    with lab.open_store() as store:
        store.create_artifact(
            "deep_research_report",
            run_id=run_id,
            title="Findings on panels",
            mime="text/markdown",
            text="# Findings\n\nSide panels **persist** nothing themselves.",
            data={"sources": [{"url": "https://example.org/panels", "title": "Panel study"}]},
        )
    page.locator('.jp-AgiTab[data-tab="artifacts"]').click()
    artifacts = page.locator(".jp-AgiArtifactList li")
    expect(artifacts).to_have_count(2)
    page.locator(".jp-AgiArtifactList button", has_text="Findings on panels").click()
    detail = page.locator('.jp-AgiArtifactDetail[data-artifact-kind="deep_research_report"]')
    expect(detail.locator("h1")).to_contain_text("Findings")
    expect(detail.locator("strong")).to_have_text("persist")
    expect(detail.locator(".jp-AgiSources a")).to_have_attribute(
        "href", "https://example.org/panels"
    )
    shoot(page, "artifacts-01-report")
    page.locator(".jp-AgiArtifactList button", has_text="notes.txt").click()
    diff = page.locator('.jp-AgiArtifactDetail[data-artifact-kind="file_diff"]')
    expect(diff.locator(".jp-AgiDiff-add")).to_contain_text("+hello panel")
    shoot(page, "artifacts-02-diff")


SDK_MODELS = {"claude": "anthropic:claude-sonnet-4-6", "codex": "openai:gpt-5-codex"}


def test_the_folder_picker_pins_the_project(page: Any, lab: LabServer, fake: FakeLLMServer) -> None:
    (lab.root / "picked-project" / ".agi").mkdir(parents=True, exist_ok=True)  # its own store
    open_lab(page, lab)
    open_panel(page)
    page.locator(".jp-AgiProject-folder").click()
    dialog = page.locator(".jp-Dialog")
    dialog.locator(".jp-DirListing-item", has_text="picked-project").dblclick()
    expect(dialog.locator(".jp-BreadCrumbs")).to_contain_text("picked-project")
    dialog.locator("button", has_text="Select").click()
    expect(page.locator(".jp-AgiProject-path")).to_have_text("picked-project/")
    expect(page.locator(".jp-AgiFollow")).to_be_visible()  # a folder was chosen
    expect(page.locator(SESSION_SELECT)).to_contain_text("No session yet")

    # The form offers the agent SDKs the server lists: unavailable ones disabled, with the
    # reason (the install command) as the tooltip; the project default preselected.
    listed = lab.api("GET", "agi/v1/sdks?project=picked-project")
    form = open_new_session_form(page)
    form.locator(".jp-AgiAgentSelect select").select_option("build")
    options = sdk_options(page)
    assert [o["value"] for o in options] == [s["id"] for s in listed["sdks"]]
    for option, sdk in zip(options, listed["sdks"], strict=True):
        assert option["disabled"] == (not sdk["available"]), option
        assert sdk["display_name"] in option["label"], option
        if not sdk["available"]:
            assert option["title"] == sdk["reason"], option
    expect(form.locator(".jp-AgiSdkSelect select")).to_have_value(listed["default_sdk"])
    shoot(page, "project-01-new-session-sdks")
    # Whatever is installed here: another SDK than the default if one is available.
    available = [s["id"] for s in listed["sdks"] if s["available"]]
    chosen = next((i for i in available if i != listed["default_sdk"]), listed["default_sdk"])
    model = SDK_MODELS.get(chosen, "")  # a model that SDK runs (others are refused at creation)
    with page.expect_request(
        lambda r: r.method == "POST" and re.search(r"/agi/v1/sessions(\?|$)", r.url)
    ) as posted:
        session_id = new_session(
            page, agent="build", sdk=chosen, model=model, title="in the picked folder"
        )
    assert posted.value.post_data_json["sdk"] == chosen
    stored = lab.api("GET", f"agi/v1/sessions/{session_id}?project=picked-project")
    assert stored["session"]["sdk"] == chosen
    expect(page.locator(".jp-AgiSdkBadge")).to_have_count(0 if chosen == "native" else 1)
    assert (lab.root / "picked-project" / ".agi" / "agi.sqlite").exists()
    shoot(page, "project-02-picked-folder")
    page.locator(".jp-AgiFollow").click()
    expect(page.locator(".jp-AgiProject-path")).to_have_text("/")

    # Following again: the project becomes the folder of the notebook being worked on.
    empty = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}
    (lab.root / "picked-project" / "work.ipynb").write_text(json.dumps(empty))
    run_lab_command(page, "docmanager:open", {"path": "picked-project/work.ipynb"})
    expect(page.locator(".jp-AgiProject-path")).to_have_text("picked-project/")
    expect(page.locator(".jp-AgiProject-follow")).to_have_text("following work.ipynb")
    expect(page.locator(SESSION_SELECT)).to_contain_text("in the picked folder")


@pytest.mark.both_backends
def test_a_waiting_tool_call_is_approved_in_the_panel(
    page: Any, lab: LabServer, fake: FakeLLMServer
) -> None:
    """A build session in *ask* mode: the shell call waits with Approve / Deny / Always on its
    tool block and in the run list; Approve lets the server's runner finish the run."""
    from agi_jupyter.cli.remote import ServerClient
    from agi_jupyter.testing import FakeToolCall

    open_lab(page, lab)
    open_panel(page)
    session_id = new_session(page, agent="build", title="approve in the panel")
    ServerClient(lab.url, lab.token).call("PATCH", f"sessions/{session_id}", {"review_mode": "ask"})
    target = lab.root / "approved-in-panel.txt"
    fake.enqueue(
        Turn(tool_calls=[FakeToolCall("shell_run", {"command": f"echo ran >> {target.name}"})]),
        Turn(text="Approved and ran."),
    )
    send(page, "run it once")
    tool = page.locator('.jp-AgiTool[data-status="waiting_approval"]')
    expect(tool).to_be_visible(timeout=30_000)
    expect(tool.locator(".jp-AgiApproval-approve")).to_be_visible()
    shoot(page, "approval-01-waiting")
    assert not target.exists()

    tool.locator(".jp-AgiApproval-approve").click()

    answer = page.locator(ASSISTANT).last
    expect(answer).to_contain_text("Approved and ran.", timeout=60_000)
    expect(page.locator(".jp-AgiTool").last).to_have_attribute("data-status", "completed")
    assert target.read_text() == "ran\n"
    shoot(page, "approval-02-approved")
