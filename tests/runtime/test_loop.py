"""The agent loop end to end: real SDKs against the fake server, the store checked after."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agi_jupyter.records import ToolCallPart, ToolResultPart
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn
from tests.runtime.conftest import MakeAgi

MODELS = ["openai:gpt-5-mini", "openai-chat:gpt-4o-mini", "anthropic:claude-haiku-4-5"]


@pytest.mark.parametrize("model", MODELS)
def test_full_tool_loop_is_streamed_and_persisted(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, model: str
) -> None:
    (project / "notes.txt").write_text("the secret number is 42\n")
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_read", {"path": "notes.txt"})], usage=(50, 10)),
        Turn(text="The number is 42.", usage=(80, 6)),
    )
    agi = make_agi()
    session = agi.new_session(agent="plan", model=model)

    result = agi.ask("What is the number?", session=session.id)

    assert result.text == "The number is 42."
    run = result.run
    assert (run.status, run.attempt, run.error) == ("succeeded", 1, None)
    assert run.usage == {"input_tokens": 130, "output_tokens": 16}
    assert run.cost_usd > 0
    messages = agi.history(session.id, view="full")
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    call = messages[1].parts[-1]
    assert isinstance(call, ToolCallPart)
    assert (call.name, call.arguments) == ("fs.read", {"path": "notes.txt"})
    output = messages[2].parts[0]
    assert isinstance(output, ToolResultPart)
    assert "the secret number is 42" in output.output
    assert not output.is_error
    assert messages[3].meta["provider"] == model.split(":")[0]
    assert messages[3].meta["cost_usd"] > 0
    (tool_call,) = agi.store.list_tool_calls(run_id=run.id)
    assert (tool_call.name, tool_call.status, tool_call.is_error) == ("fs.read", "completed", False)
    assert tool_call.started_at
    assert tool_call.finished_at
    stored = agi.store.list_run_events(run.id)
    seqs = [e.seq for e in stored]
    assert seqs == sorted(set(seqs))
    assert stored[0].type == "run.meta"
    assert stored[-1].type == "run.final"
    ses = agi.session(session.id)
    assert (ses.input_tokens, ses.output_tokens, ses.message_count) == (130, 16, 4)
    assert ses.cost_usd == pytest.approx(run.cost_usd)
    # the second request carried the tool result back, and the tools were offered by wire name
    second = fake_llm.requests[-1].body or {}
    assert "the secret number is 42" in json.dumps(second)
    assert "fs_read" in json.dumps(second.get("tools"))


def test_event_sequence_of_a_tool_using_run(make_agi: MakeAgi, fake_llm: FakeLLMServer) -> None:
    """A snapshot of the vocabulary: any change to it shows up here."""
    fake_llm.enqueue(
        Turn(text="Let me look.", tool_calls=[FakeToolCall("fs_list", {"path": "."}, chunks=2)]),
        Turn(text="Done.", chunks=["Do", "ne."]),
    )
    agi = make_agi()
    session = agi.new_session(agent="plan", model="openai-chat:gpt-4o-mini")
    events = list(agi.stream("list files", session=session.id))
    types = [e["type"] for e in events if not e["type"].endswith(".delta")]
    assert types == [
        "run.meta",
        "run.status",
        "message.completed",  # the user message
        "iteration",
        "tool.call.started",
        "tool.call.arguments.done",
        "output.text.done",
        "message.completed",
        "usage",
        "tool.call.output",
        "iteration",
        "output.text.done",
        "message.completed",
        "usage",
        "run.status",
        "run.final",
    ]
    deltas = [e["delta"] for e in events if e["type"] == "output.text.delta"]
    assert "".join(deltas) == "Let me look.Done."
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["run"]["status"] == "succeeded"
    assert all(e["run_id"] == events[0]["run_id"] and e["ts"] for e in events)


def test_offline_fake_model_is_the_default_and_announces_itself(
    make_agi: MakeAgi, agi_env: dict[str, str]
) -> None:
    agi_env.pop("OPENAI_API_KEY")
    agi_env.pop("ANTHROPIC_API_KEY")
    agi = make_agi()
    result = agi.ask("hello there")
    assert result.run.provider == "fake"
    assert result.text == "(offline fake model) echo: hello there"


def test_unconfigured_provider_is_refused_before_anything_is_stored(
    make_agi: MakeAgi, agi_env: dict[str, str]
) -> None:
    from agi_jupyter.errors import ProviderNotConfigured

    agi_env.pop("ANTHROPIC_API_KEY")
    agi = make_agi()
    session = agi.new_session(model="fake:echo")
    with pytest.raises(ProviderNotConfigured, match="ANTHROPIC_API_KEY"):
        agi.ask("hi", session=session.id, model="anthropic:claude-haiku-4-5")
    assert agi.runs(session.id).items == []
    assert agi.history(session.id) == []


def test_a_provider_disabled_in_config_says_so_not_set_a_key(make_agi: MakeAgi) -> None:
    """Its key is in the environment: the message named the key anyway."""
    from agi_jupyter.errors import ProviderNotConfigured

    agi = make_agi(config={"providers": {"anthropic": {"enabled": False}}})
    session = agi.new_session(model="fake:echo")
    with pytest.raises(ProviderNotConfigured) as refused:
        agi.ask("hi", session=session.id, model="anthropic:claude-haiku-4-5")
    assert "'anthropic' is disabled in config" in refused.value.message
    assert "providers.anthropic.enabled" in refused.value.message
    assert "ANTHROPIC_API_KEY" not in refused.value.message


def test_model_turn_limit_ends_the_run_with_a_note(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    for _ in range(2):
        fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})]))
    agi = make_agi()
    session = agi.new_session(agent="plan", model="openai-chat:gpt-4o-mini")
    result = agi.ask("loop", session=session.id, max_iterations=2)
    assert result.run.status == "succeeded"
    assert result.run.error is not None
    assert result.run.error["code"] == "MAX_ITERATIONS_REACHED"
    assert len(fake_llm.requests) == 2


def test_provider_drop_is_retried_as_a_new_attempt(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(text="partial answer that will be lost", fault=Fault(drop_after=3)),
        Turn(text="complete answer"),
    )
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    events = list(agi.stream("q", session=session.id))
    run = agi.run(events[0]["run_id"])
    assert (run.status, run.attempt) == ("succeeded", 2)
    errors = [e for e in events if e["type"] == "error"]
    assert errors[0]["code"] == "PROVIDER_DISCONNECTED"
    assert errors[0]["retryable"] is True
    assert [m.text for m in agi.history(session.id)] == ["q", "complete answer"]
    assert all(m.status == "complete" for m in agi.store.list_messages(session.id))


def test_retries_exhausted_fail_the_run_with_the_reason(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    for _ in range(2):
        fake_llm.enqueue(Turn(text="never finishes", fault=Fault(truncate=True)))
    agi = make_agi(config={"max_attempts": 2})
    session = agi.new_session(model="anthropic:claude-haiku-4-5")
    result = agi.ask("q", session=session.id)
    run = result.run
    assert (run.status, run.attempt) == ("failed", 2)
    assert run.error is not None
    assert run.error["code"] == "PROVIDER_DISCONNECTED"
    # what the last attempt streamed is kept, marked partial (it was lost while it still sat
    # in the emitter's coalescing buffer or a redaction stream's held-back tail)
    user, partial = agi.store.list_messages(session.id)
    assert (user.role, partial.role, partial.status) == ("user", "assistant", "error")
    assert partial.meta["partial"] is True
    assert partial.text == "never finishes"
    final = agi.store.list_run_events(run.id)[-1]
    assert final.type == "run.final"
    assert final.payload["run"]["status"] == "failed"
