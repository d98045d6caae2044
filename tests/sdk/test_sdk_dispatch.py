"""The SDK layer without a real SDK: canonical history assembly, the queue/interrupt matrix,
session ``sdk`` settings and backward compatibility.

``ScriptedAdapter`` is a real ``SdkAdapter`` that plays a fixed list of history events (as an
SDK's messages would map to) and can hold its turn open, so every row of seed 003's matrix can
be driven deterministically; the real SDKs have their own tests (test_claude_*, test_codex_*).
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.errors import SdkNotAvailable, UsageError
from agi_jupyter.records import Run, Session, TextPart, ToolCallPart, ToolResultPart
from agi_jupyter.runtime.agent_loop import AttemptResult
from agi_jupyter.sdk.base import (
    AssistantText,
    AssistantThinking,
    DisplayModel,
    HistoryEvent,
    SdkAdapter,
    SdkCapabilities,
    SdkRunParams,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnMeta,
    UserInput,
)
from agi_jupyter.sdk.history import META_KEYS
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from agi_jupyter.tools import ArtifactDraft
from tests.sdk.conftest import MakeAgi


class ScriptedAdapter(SdkAdapter):
    id = "scripted"
    display_name = "Scripted SDK"

    def __init__(
        self,
        script: list[HistoryEvent],
        *,
        capabilities: SdkCapabilities,
        hold: bool = False,
        available: bool = True,
    ) -> None:
        self.script = script
        self.capabilities = capabilities
        self.hold = hold
        self.available = available
        self.release = threading.Event()  # set from the test thread to end a held turn
        self.started = threading.Event()
        self.queued: list[str] = []
        self.aborted = False
        self.tool_outputs: list[str] = []
        self.saved_states: list[dict[str, Any]] = []
        self.seen_state: list[dict[str, Any]] = []
        self.prompts: list[str] = []

    def resolve_display_model(self, session: Session) -> DisplayModel:
        return DisplayModel("scripted", session.model)

    def check_available(self) -> None:
        if not self.available:
            raise SdkNotAvailable("the scripted SDK is not installed: pip install scripted")

    async def run(self, params: SdkRunParams) -> AttemptResult:
        self.prompts.append(params.prompt)
        self.seen_state.append(dict(params.state))
        params.on_handle(self)
        for event in self.script:
            if isinstance(event, ToolCallEvent) and event.name == "fs.read":
                await params.on_history(event)
                outcome = await params.call_tool(event.id, event.name, event.arguments)
                self.tool_outputs.append(outcome.output)
                continue
            await params.on_history(event)
        self.started.set()
        # ``release`` is set from the test's thread, so poll it rather than await an event.
        while self.hold and not self.release.is_set() and not self.aborted:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        for text in self.queued:
            await params.on_history(TurnDone())
            await params.on_history(UserInput(text=text))
            await params.on_history(AssistantText(text=f"re: {text}"))
        await params.on_history(TurnDone())
        new_state = {"session_id": f"s{len(self.saved_states) + 1}"}
        await params.save_state(new_state)
        self.saved_states.append(new_state)
        return await params.result()

    async def queue_message(self, handle: object, text: str) -> None:
        self.queued.append(text)

    async def abort(self, handle: object) -> None:
        self.aborted = True


ALL = SdkCapabilities(
    queue_while_streaming=True, interrupt=True, tool_events=True, full_history=True
)
NONE = SdkCapabilities(tool_events=True, full_history=True)

TOOL_LOOP: list[HistoryEvent] = [
    AssistantThinking(text="look at the notes", signature="sig"),
    AssistantText(text="Reading "),
    AssistantText(text="the notes."),
    ToolCallEvent(id="t1", name="fs.read", arguments={"path": "notes.txt"}),
    ToolResultEvent(id="t1", name="fs.read", output="ignored: our own tool's outcome wins"),
    AssistantText(text="The notes say hello."),
    TurnMeta(provider="scripted", model="m1", input_tokens=11, output_tokens=7, cost_usd=0.5),
]


def _with_adapter(agi: Any, adapter: SdkAdapter) -> None:
    agi.sdk.adapters[adapter.id] = adapter


def test_canonical_history_of_a_tool_loop(make_agi: MakeAgi, project: Path) -> None:
    (project / "notes.txt").write_text("hello from the notes\n")
    agi = make_agi()
    adapter = ScriptedAdapter(TOOL_LOOP, capabilities=ALL)
    _with_adapter(agi, adapter)
    ses = agi.new_session(agent="plan", sdk="scripted", model="fake:echo")
    events = list(agi.stream("what do the notes say?", session=ses.id))

    assert adapter.prompts == ["what do the notes say?"]
    assert adapter.tool_outputs
    assert "hello from the notes" in adapter.tool_outputs[0]
    types = [e["type"] for e in events]
    assert types[0] == "run.meta"
    assert types[-1] == "run.final"
    assert types.count("iteration") == 2
    assert "tool.call.started" in types
    assert "tool.call.output" in types
    assert events[-1]["run"]["status"] == "succeeded"

    full = agi.history(ses.id, view="full")
    assert [m.role for m in full] == ["user", "assistant", "tool", "assistant"]
    first, tool, last = full[1], full[2], full[3]
    assert [p.type for p in first.parts] == ["reasoning", "text", "tool_call"]
    assert first.text == "Reading the notes."
    call = first.parts[2]
    assert isinstance(call, ToolCallPart)
    assert call.arguments == {"path": "notes.txt"}
    result = tool.parts[0]
    assert isinstance(result, ToolResultPart)
    assert "hello from the notes" in result.output
    assert last.text == "The notes say hello."
    assert last.meta["usage"] == {"input_tokens": 11, "output_tokens": 7}
    assert last.meta["cost_usd"] == 0.5
    assert last.meta["sdk"] == "scripted"
    simple = agi.history(ses.id, view="simple")
    assert [(m.role, m.text) for m in simple] == [
        ("user", "what do the notes say?"),
        ("assistant", "Reading the notes."),
        ("assistant", "The notes say hello."),
    ]
    (row,) = agi.store.list_tool_calls(run_id=events[-1]["run_id"])
    assert row.status == "completed"
    assert row.message_id == first.id
    assert not row.is_error
    run = agi.run(events[-1]["run_id"])
    assert run.usage == {"input_tokens": 11, "output_tokens": 7}
    assert run.cost_usd == 0.5
    assert agi.session(ses.id).cost_usd == 0.5
    assert adapter.seen_state == [{}]
    assert agi.session(ses.id).metadata["sdk_state"]["scripted"] == {"session_id": "s1"}


def test_history_has_the_same_shape_as_the_native_runner(
    make_agi: MakeAgi, project: Path, fake_llm: FakeLLMServer
) -> None:
    """The same conversation run natively and through an adapter stores the same structure."""
    (project / "notes.txt").write_text("hello from the notes\n")
    agi = make_agi()
    read = FakeToolCall("fs_read", {"path": "notes.txt"})
    fake_llm.enqueue(
        Turn(text="Reading the notes.", tool_calls=[read]), Turn(text="The notes say hello.")
    )
    native = agi.new_session(agent="plan", model="openai:gpt-5-mini")
    agi.ask("what do the notes say?", session=native.id)
    _with_adapter(agi, ScriptedAdapter(TOOL_LOOP[1:], capabilities=ALL))
    scripted = agi.new_session(agent="plan", sdk="scripted", model="openai:gpt-5-mini")
    agi.ask("what do the notes say?", session=scripted.id)

    def shape(session_id: str) -> list[tuple[str, list[str], bool]]:
        return [
            (m.role, [p.type for p in m.parts], m.meta.keys() >= META_KEYS)
            for m in agi.history(session_id, view="full")
        ]

    assert shape(native.id) == shape(scripted.id)


def test_tool_result_artifact_and_error(make_agi: MakeAgi) -> None:
    agi = make_agi()
    diff = ArtifactDraft(kind="file_diff", title="Changes", data={"summary": {"files": 1}})
    script: list[HistoryEvent] = [
        ToolCallEvent(id="c1", name="shell", arguments={"command": "false"}, tool_type="shell"),
        ToolResultEvent(id="c1", name="shell", output="exit 1", is_error=True),
        ToolResultEvent(id="c2", name="file_change", output="1 file", artifact=diff),
        AssistantText(text="done"),
    ]
    _with_adapter(agi, ScriptedAdapter(script, capabilities=ALL))
    ses = agi.new_session(sdk="scripted")
    events = list(agi.stream("go", session=ses.id))
    outputs = [e for e in events if e["type"] == "tool.call.output"]
    assert [(o["ok"], o["status"]) for o in outputs] == [(False, "failed"), (True, "completed")]
    assert outputs[1]["artifact"]["kind"] == "file_diff"
    assert outputs[1]["artifact"]["summary"] == {"files": 1}
    rows = {r.tool_call_id: r for r in agi.store.list_tool_calls(run_id=events[-1]["run_id"])}
    assert rows["c1"].status == "failed"
    assert rows["c1"].is_error
    assert rows["c2"].status == "completed"  # a result without a reported call got its call
    roles = [m.role for m in agi.history(ses.id, view="full")]
    # The result without a reported call got an assistant message with that call before it.
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_secrets_in_sdk_tool_arguments_and_outputs_are_redacted(make_agi: MakeAgi) -> None:
    agi = make_agi()
    secret = "sk-test-openai-secret-0001"
    script: list[HistoryEvent] = [
        ToolCallEvent(id="c1", name="shell", arguments={"command": f"echo {secret}"}),
        ToolResultEvent(id="c1", name="shell", output=f"{secret}\n"),
        AssistantText(text="ok"),
    ]
    _with_adapter(agi, ScriptedAdapter(script, capabilities=ALL))
    ses = agi.new_session(sdk="scripted")
    events = list(agi.stream("go", session=ses.id))
    assert secret not in json.dumps(events)
    stored = json.dumps([m.parts for m in agi.history(ses.id, view="full")], default=str)
    assert secret not in stored
    assert "REDACTED" in stored
    (row,) = agi.store.list_tool_calls(run_id=events[-1]["run_id"])
    assert secret not in json.dumps(row.args) + json.dumps(row.result)


# --- seed 003's queue / interrupt matrix ----------------------------------------------------


def _start_held(agi: Any, adapter: ScriptedAdapter, session: Session) -> Run:
    run = agi.submit("first", session=session.id)
    assert adapter.started.wait(10), "the scripted turn did not start"
    return agi.run(run.id)


def test_matrix_queue_into_a_turn_that_takes_messages(make_agi: MakeAgi) -> None:
    agi = make_agi()
    adapter = ScriptedAdapter([AssistantText(text="one")], capabilities=ALL, hold=True)
    _with_adapter(agi, adapter)
    ses = agi.new_session(sdk="scripted", queue_mode="queue")
    first = _start_held(agi, adapter, ses)
    stream = agi.stream("second", session=ses.id)  # queued into the turn at once
    assert adapter.queued == ["second"]
    adapter.release.set()
    events = list(stream)
    assert {e["run_id"] for e in events} == {first.id}  # joined the running turn
    assert events[0]["seq"] > 2  # and the stream starts after what was already sent
    assert events[-1]["type"] == "run.final"
    assert events[-1]["run"]["status"] == "succeeded"
    assert adapter.queued == ["second"]
    assert len(agi.runs(ses.id).items) == 1
    assert [(m.role, m.text) for m in agi.history(ses.id)] == [
        ("user", "first"),
        ("assistant", "one"),
        ("user", "second"),
        ("assistant", "re: second"),
    ]


def test_matrix_queue_without_the_capability_waits_as_a_run(make_agi: MakeAgi) -> None:
    agi = make_agi()
    adapter = ScriptedAdapter([AssistantText(text="answer")], capabilities=NONE, hold=True)
    _with_adapter(agi, adapter)
    ses = agi.new_session(sdk="scripted", queue_mode="queue")
    first = _start_held(agi, adapter, ses)
    second = agi.submit("second", session=ses.id)
    assert second.id != first.id
    assert agi.run(second.id).status == "queued"
    assert adapter.queued == []
    adapter.release.set()
    final = list(agi.follow(second.id))[-1]
    assert final["run"]["status"] == "succeeded"
    assert agi.run(first.id).status == "succeeded"
    assert adapter.prompts == ["first", "second"]  # drained in order, one after the other
    assert [m.role for m in agi.history(ses.id)] == ["user", "assistant", "user", "assistant"]


def test_matrix_interrupt_aborts_then_starts_the_new_run(make_agi: MakeAgi) -> None:
    agi = make_agi()
    adapter = ScriptedAdapter([AssistantText(text="partial")], capabilities=ALL, hold=True)
    _with_adapter(agi, adapter)
    ses = agi.new_session(sdk="scripted", queue_mode="interrupt")
    first = _start_held(agi, adapter, ses)
    adapter.started.clear()
    second = agi.submit("second", session=ses.id)
    assert adapter.aborted
    assert agi.run(first.id).status == "cancelled"
    adapter.hold = False
    assert list(agi.follow(second.id))[-1]["run"]["status"] == "succeeded"
    history = agi.history(ses.id)
    assert ("assistant", "partial") in [(m.role, m.text) for m in history]  # kept, not lost


def test_matrix_interrupt_without_the_capability_falls_back_to_the_queue(
    make_agi: MakeAgi,
) -> None:
    agi = make_agi()
    adapter = ScriptedAdapter([AssistantText(text="answer")], capabilities=NONE, hold=True)
    _with_adapter(agi, adapter)
    ses = agi.new_session(sdk="scripted", queue_mode="interrupt")
    first = _start_held(agi, adapter, ses)
    second = agi.submit("second", session=ses.id)
    assert not adapter.aborted
    assert agi.run(first.id).status == "running"
    adapter.release.set()
    assert list(agi.follow(second.id))[-1]["run"]["status"] == "succeeded"
    assert agi.run(first.id).status == "succeeded"


# --- settings, errors, backward compatibility ---------------------------------------------


def test_sdk_setting_precedence_and_validation(make_agi: MakeAgi, project: Path) -> None:
    coder = {"sdk": "codex", "model": "openai:gpt-5-codex"}  # a model its SDK runs
    (project / ".agi" / "agents.json").write_text(json.dumps({"coder": coder}))
    agi = make_agi(config={"default_sdk": "claude", "default_model": "anthropic:claude-x"})
    assert agi.new_session().sdk == "claude"  # the configured default
    assert agi.new_session(agent="coder").sdk == "codex"  # the agent's own
    assert agi.new_session(agent="coder", sdk="native").sdk == "native"  # explicit wins
    with pytest.raises(UsageError, match="unknown sdk 'pi'"):
        agi.new_session(sdk="pi")
    ses = agi.new_session()
    assert agi.update_session(ses.id, sdk="native").sdk == "native"
    with pytest.raises(UsageError, match="unknown sdk"):
        agi.update_session(ses.id, sdk="nope")


def test_missing_sdk_fails_the_run_with_a_clear_code(make_agi: MakeAgi) -> None:
    agi = make_agi()
    _with_adapter(agi, ScriptedAdapter([], capabilities=ALL, available=False))
    ses = agi.new_session(sdk="scripted")
    final = list(agi.stream("hi", session=ses.id))[-1]["run"]
    assert final["status"] == "failed"
    assert final["error"]["code"] == "SDK_NOT_AVAILABLE"
    assert "pip install scripted" in final["error"]["message"]
    assert final["attempt"] == 1  # not retried: installing is the user's move
    listed = {s["id"]: s for s in agi.sdks()}
    assert listed["scripted"]["available"] is False
    assert listed["native"] == {
        "id": "native",
        "display_name": "agi-jupyter (native)",
        "capabilities": {
            "queue_while_streaming": False,
            "interrupt": True,
            "tool_events": True,
            "full_history": True,
        },
        "available": True,
        "reason": None,
    }


def test_configs_and_sessions_without_sdk_run_natively(
    make_agi: MakeAgi, project: Path, fake_llm: FakeLLMServer
) -> None:
    """Backward compatibility: a config, agents file and session rows written before the SDK
    layer (no ``sdk`` anywhere) keep working, on the native runner."""
    (project / ".agi" / "config.json").write_text(json.dumps({"default_agent": "plan"}))
    (project / ".agi" / "agents.json").write_text(json.dumps({"plan": {"description": "p"}}))
    agi = make_agi()
    assert agi.config.default_sdk == "native"
    old = agi.store.create_session(provider="openai", model="gpt-5-mini")  # as before: no sdk
    assert old.sdk == "native"
    fake_llm.enqueue(Turn(text="still native"))
    result = agi.ask("hello", session=old.id)
    assert result.text == "still native"
    assert result.messages[-1].meta["sdk"] == "native"
    assert isinstance(result.messages[0].parts[0], TextPart)


def test_agi_sdk_env_variable_sets_the_default(make_agi: MakeAgi, agi_env: dict[str, str]) -> None:
    agi_env["AGI_SDK"] = "codex"
    assert make_agi().config.default_sdk == "codex"
