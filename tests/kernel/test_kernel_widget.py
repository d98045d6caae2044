"""The chat widget with ipywidgets' DummyComm: traits, custom messages, threads, history."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn


@pytest.fixture
def dummy_comm() -> Iterator[None]:
    from ipywidgets.widgets.tests.utils import setup_test_comm, teardown_test_comm

    setup_test_comm()
    yield
    teardown_test_comm()


@pytest.fixture
def widget(shell: Any, dummy_comm: None) -> Iterator[Any]:
    from agi_jupyter import chat

    w = chat()
    yield w
    w.wait(10)
    w.close()


def _from_front_end(widget: Any, content: dict[str, Any]) -> None:
    widget._handle_msg(
        {"content": {"data": {"method": "custom", "content": content}}, "buffers": []}
    )


def _sent(widget: Any) -> list[dict[str, Any]]:
    return [kwargs.get("data") or args[0] for args, kwargs in widget.comm.messages]


def _deltas(widget: Any) -> list[dict[str, Any]]:
    return [
        m["content"]
        for m in _sent(widget)
        if m.get("method") == "custom" and m["content"].get("type") == "delta"
    ]


def test_pickers_and_empty_transcript(widget: Any, ctx: Any) -> None:
    assert widget.session_id == ctx.session_id
    assert widget.transcript == []
    assert {"general", "plan", "build"} <= set(widget.agents)
    assert widget.models[0] == "fake:echo"
    assert any(s["id"] == widget.session_id for s in widget.sessions)
    assert widget.agent == "general"


def test_send_streams_deltas_and_commits_the_transcript(
    widget: Any, fake_llm: FakeLLMServer
) -> None:
    widget._interval = 0.0
    fake_llm.enqueue(Turn(chunks=["Hel", "lo ", "there"], usage=(7, 3)))
    _from_front_end(widget, {"type": "send", "text": "hi"})
    result = widget.wait(10)

    assert result.text == "Hello there"
    roles = [e["role"] for e in widget.transcript]
    assert roles == ["user", "assistant", "info"]
    user, answer, info = widget.transcript
    assert user["text"] == "hi"
    assert (answer["text"], answer["streaming"]) == ("Hello there", False)
    assert info["text"].startswith("fake:echo · 7 in / 3 out tokens · $0.0000 · run_")
    deltas = _deltas(widget)
    assert {d["entry"] for d in deltas} == {answer["id"]}
    assert "".join(d["text"] for d in deltas) == "Hello there"
    assert widget.running == ""
    assert widget.status == "succeeded"
    # the trait updates went to the front end as state messages
    assert any("transcript" in m.get("state", {}) for m in _sent(widget))


def test_tool_calls_become_transcript_entries(
    widget: Any, shell: Any, fake_llm: FakeLLMServer
) -> None:
    widget.agent = "build"
    shell.user_ns["base"] = 4
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("python", {"code": "made = base * 2"})]),
        Turn(text="made it"),
    )
    widget.send_message("make it")
    widget.wait(10)  # runs the python tool's code on this (main) thread meanwhile
    assert shell.user_ns["made"] == 8
    tool = next(e for e in widget.transcript if e["role"] == "tool")
    assert (tool["name"], tool["status"], tool["ok"]) == ("python", "completed", True)
    assert "names: created made" in tool["output"]
    assert '"code": "made = base * 2"' in tool["arguments"]
    assert widget.transcript[-2]["text"] == "made it"


def test_stop_cancels_the_run(widget: Any, fake_llm: FakeLLMServer) -> None:
    import time

    fake_llm.enqueue(Turn(text=" ".join(["word"] * 200), fault=Fault(stall_between_events=0.05)))
    run_id = widget.send_message("long answer")
    deadline = time.monotonic() + 10
    while not _deltas(widget) and time.monotonic() < deadline:
        time.sleep(0.02)
    _from_front_end(widget, {"type": "stop"})
    result = widget.wait(20)
    assert result.run_id == run_id
    assert result.run.status == "cancelled"
    assert widget.status == "cancelled"
    assert widget.running == ""
    assert widget.transcript[-1]["text"].endswith("· cancelled")
    assert not any(e.get("streaming") for e in widget.transcript)
    # the answer streamed so far stays, marked partial, live and after a reload
    (answer,) = [e for e in widget.transcript if e["role"] == "assistant"]
    streamed = "".join(d["text"] for d in _deltas(widget))
    assert (answer["text"], answer["partial"]) == (streamed, True)
    assert answer["text"].startswith("word")
    widget._on_session_change({"new": widget.session_id})  # what picking the session does
    (reloaded,) = [e for e in widget.transcript if e["role"] == "assistant"]
    assert (reloaded["text"], reloaded["partial"]) == (streamed, True)


def test_a_retried_attempt_takes_its_partial_entry_back(
    widget: Any, fake_llm: FakeLLMServer
) -> None:
    widget._interval = 0.0
    first = " ".join(f"first{i}" for i in range(40))
    fake_llm.enqueue(Turn(text=first, fault=Fault(drop_after=8)), Turn(text="the final answer"))
    _from_front_end(widget, {"type": "send", "text": "hi"})
    result = widget.wait(30)
    assert (result.run.status, result.run.attempt) == ("succeeded", 2)
    (answer,) = [e for e in widget.transcript if e["role"] == "assistant"]
    assert (answer["text"], answer["streaming"]) == ("the final answer", False)
    streamed = {d["entry"] for d in _deltas(widget)}
    assert len(streamed) == 2  # the first attempt's entry was streamed, then taken out
    assert "first0" in "".join(d["text"] for d in _deltas(widget))


def test_the_session_picker_counts_the_messages_after_an_answer(widget: Any) -> None:
    def label() -> str:
        return str(next(s["label"] for s in widget.sessions if s["id"] == widget.session_id))

    assert label().endswith("· 0 msgs")
    widget.send_message("count me")
    widget.wait(10)
    assert label().endswith("· 2 msgs")


def test_session_picker_loads_history_and_new_session(
    widget: Any, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    first = widget.session_id
    widget.send_message("remember me")
    widget.wait(10)
    _from_front_end(widget, {"type": "new_session"})
    assert widget.session_id != first
    assert widget.transcript == []
    widget._handle_msg(
        {"content": {"data": {"method": "update", "state": {"session_id": first}}}, "buffers": []}
    )
    assert [e["role"] for e in widget.transcript] == ["user", "assistant"]
    assert widget.transcript[0]["text"] == "remember me"
    _from_front_end(widget, {"type": "send", "text": "   "})
    _from_front_end(widget, {"type": "unknown"})
    assert len(widget.transcript) == 2


def test_errors_in_handlers_never_reach_the_kernel(widget: Any) -> None:
    widget.model = "nosuchprovider:model-x"
    _from_front_end(widget, {"type": "send", "text": "hi"})
    assert widget.status.startswith("error: cannot tell the provider")


def test_a_notebook_change_shows_its_cell_diff_in_the_tool_entry(
    widget: Any, shell: Any, project: Any, fake_llm: FakeLLMServer
) -> None:
    from agi_jupyter.notebook import source_hash
    from tests.notebook.conftest import write_notebook

    write_notebook(project / "w.ipynb")
    widget.agent = "build"
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.edit",
                    {
                        "path": "w.ipynb",
                        "cell_id": "total",
                        "expected_hash": source_hash("x + 1"),
                        "source": "x + 5",
                    },
                )
            ]
        ),
        Turn(text="edited"),
    )
    widget.send_message("edit")
    widget.wait(10)
    tool = next(e for e in widget.transcript if e["role"] == "tool")
    assert tool["name"] == "notebook.edit"
    assert "--- a/w.ipynb [cell total code]" in tool["diff"]
    assert "-x + 1\n+x + 5" in tool["diff"]


def asking_session(widget: Any, ctx: Any) -> None:
    """The widget on a new build session that asks before every call."""
    session = ctx.new_session(agent="build", review_mode="ask")
    widget.session_id = session.id
    widget.agent = "build"


def test_a_waiting_call_is_approved_from_the_widget_and_the_answer_streams_on(
    widget: Any, shell: Any, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    asking_session(widget, ctx)
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("python", {"code": "decided = 'yes'"})]))
    run_id = widget.send_message("decide")
    widget.wait(10)
    tool = next(e for e in widget.transcript if e["role"] == "tool")
    assert (tool["status"], tool["run_id"]) == ("waiting_approval", run_id)
    assert widget.status == "waiting_approval"
    assert widget.transcript[-1]["text"] == f"waiting for your approval · {run_id}"
    assert "decided" not in shell.user_ns
    fake_llm.enqueue(Turn(text="Decided."))

    _from_front_end(
        widget,
        {"type": "approval", "run_id": run_id, "tool_call_id": tool["id"], "decision": "approve"},
    )
    widget.wait(10)

    assert shell.user_ns["decided"] == "yes"
    tool = next(e for e in widget.transcript if e["role"] == "tool")
    assert (tool["status"], tool["ok"]) == ("completed", True)
    assert widget.status == "succeeded"
    assert [e["text"] for e in widget.transcript if e["role"] == "assistant"] == ["Decided."]


def test_a_call_decided_in_the_panel_leaves_the_widget_saying_who_and_streams_on(
    widget: Any, ctx: Any, project: Path, fake_llm: FakeLLMServer
) -> None:
    from agi_jupyter import Agi
    from agi_jupyter.kinds import DecisionDoor

    asking_session(widget, ctx)
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_write", {"path": "w.txt", "content": "w"})]),
        Turn(text="Wrote w.txt."),
    )
    run_id = widget.send_message("write w.txt")
    widget.wait(10)
    assert widget.status == "waiting_approval"

    with Agi(project) as panel:  # another process, as the server deciding for the panel
        panel.decide(run_id, "approve", door=DecisionDoor.PANEL, by="alice")
        list(panel.follow(run_id))
    widget.wait(10)

    tool = next(e for e in widget.transcript if e["role"] == "tool")
    assert (tool["status"], tool["decided"]) == ("completed", "approved in the panel by alice")
    texts = [e.get("text") for e in widget.transcript]
    assert f"fs.write approved in the panel by alice · {run_id}" in texts
    assert f"waiting for your approval · {run_id}" not in texts
    assert [e["text"] for e in widget.transcript if e["role"] == "assistant"] == ["Wrote w.txt."]
    assert widget.status == "succeeded"


def test_the_footer_shows_the_session_budget(
    widget: Any, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    ctx.agi.store.update_session(widget.session_id, budget={"max_tokens": 100})
    fake_llm.enqueue(Turn(text="fine", usage=(7, 3)))
    widget.send_message("hi")
    widget.wait(10)
    info = widget.transcript[-1]
    assert info["role"] == "info"
    assert info["text"].endswith(" · session budget: 10/100 tokens")


def test_images_pasted_into_the_widget_go_with_the_message(
    project: Path,
    fake_llm: FakeLLMServer,
    request: pytest.FixtureRequest,
    dummy_comm: None,
    kernel_env: dict[str, str],
) -> None:
    """The front end sends pasted images as the message's buffers: refused (in the status,
    nothing run) for a model that reads no images, sent to one that does, and counted on
    the user's entry and in the history."""
    import base64
    import io
    import json

    from PIL import Image

    from agi_jupyter import chat
    from agi_jupyter.kernel.widget import history_entries

    out = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(out, format="PNG")
    png = out.getvalue()
    config = {"models": {"fake:vision": {"vision": True}}}
    (project / ".agi" / "config.json").write_text(json.dumps(config))
    request.getfixturevalue("shell")  # (after the config: the runtime reads it when loaded)
    widget = chat()
    try:
        widget._interval = 0.0

        def send(text: str) -> None:
            message = {
                "content": {"data": {"method": "custom", "content": {"type": "send", "text": text}}}
            }
            widget._handle_msg({**message, "buffers": [memoryview(png)]})

        send("what is this?")
        assert widget.status.startswith("error: fake:echo reads no images")
        assert widget.transcript == []
        assert fake_llm.requests == []

        widget.model = "fake:vision"
        fake_llm.enqueue(Turn(text="a red dot"))
        send("what is this?")
        widget.wait(10)
        user = widget.transcript[0]
        assert (user["text"], user["images"]) == ("what is this?", 1)
        (last,) = [m for m in fake_llm.requests[-1].body["messages"] if m["role"] == "user"]
        urls = [b["image_url"]["url"] for b in last["content"] if b["type"] == "image_url"]
        assert urls == ["data:image/png;base64," + base64.b64encode(png).decode()]
        (entry, _) = history_entries(widget._ctx.agi.messages(widget.session_id))
        assert entry["images"] == 1
    finally:
        widget.wait(10)
        widget.close()
