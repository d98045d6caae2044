"""What real OpenAI-compatible servers (llama.cpp, llama-cpp-python, vLLM, Ollama) need from a
run, end to end against the fake server: ``content: ""`` next to tool calls, no retry of a
request that cannot succeed, unknown usage kept unknown, a truncated answer said so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agi_jupyter.errors import ConfigError
from agi_jupyter.kernel.render import RunView
from agi_jupyter.request_extras import RequestExtras
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn
from tests.runtime.conftest import MakeAgi

CHAT = "openai-chat:gpt-4o-mini"
VALIDATION_500 = {
    "error": {
        "message": "1 validation error for CreateChatCompletionRequest\nmessages.1.content",
        "type": "internal_server_error",
    }
}


def _chat_posts(fake_llm: FakeLLMServer) -> int:
    return sum(1 for r in fake_llm.requests if r.path.endswith("/chat/completions"))


def test_an_assistant_tool_call_message_is_sent_with_empty_content(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})]), Turn(text="done"))
    agi = make_agi()
    session = agi.new_session(agent="plan", model=CHAT)
    assert agi.ask("list the files", session=session.id).text == "done"
    messages = fake_llm.requests[-1].body["messages"]
    (assistant,) = [m for m in messages if m["role"] == "assistant"]
    assert assistant["content"] == ""
    assert assistant["tool_calls"][0]["function"]["name"] == "fs_list"


@pytest.mark.parametrize(
    ("status", "body"),
    [(400, None), (404, None), (422, None), (500, VALIDATION_500), (500, {"detail": [{}]})],
)
def test_a_request_that_cannot_succeed_is_sent_once(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, status: int, body: dict[str, object] | None
) -> None:
    fake_llm.enqueue(*[Turn(fault=Fault(status=status, body=body)) for _ in range(20)])
    agi = make_agi()
    result = agi.ask("hi", model=CHAT)
    assert result.run.status == "failed"
    assert result.run.attempt == 1
    assert _chat_posts(fake_llm) == 1  # not our retry, not the run's, not the SDK's


def test_a_server_error_is_still_retried(make_agi: MakeAgi, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(fault=Fault(status=503)), Turn(text="ok"))
    agi = make_agi()
    assert agi.ask("hi", model=CHAT).text == "ok"
    assert _chat_posts(fake_llm) == 2


def test_a_stream_without_usage_records_unknown_usage(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="no usage here", send_usage=False))
    agi = make_agi()
    session = agi.new_session(model=CHAT)
    result = agi.ask("hi", session=session.id)
    assert result.text == "no usage here"
    run = result.run
    assert run.usage == {"input_tokens": None, "output_tokens": None, "unknown_turns": 1}
    assert run.cost_usd is None  # unknown, never $0
    assistant = agi.history(session.id, view="full")[-1]
    assert assistant.meta["usage"] is None
    assert assistant.meta["cost_usd"] is None
    events = agi.store.list_run_events(run.id)
    assert "usage" not in [e.type for e in events]  # no event claims 0 tokens
    ses = agi.session(session.id)
    assert (ses.input_tokens, ses.output_tokens) == (0, 0)  # nothing known was added
    assert agi.stats()["unknown_usage_runs"] == 1
    view = RunView()
    for event in events:
        view.apply({"type": event.type, "run_id": event.run_id, **event.payload})
    assert "usage unknown" in view.footer()
    assert "0 in" not in view.footer()


def test_known_usage_after_an_unknown_turn_stays_unknown(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})], send_usage=False),
        Turn(text="done", usage=(10, 2)),
    )
    result = make_agi().ask("list", agent="plan", model=CHAT)
    assert result.run.usage["unknown_turns"] == 1
    assert result.run.usage["input_tokens"] is None


@pytest.mark.parametrize(
    "model", ["openai-chat:gpt-4o-mini", "openai:gpt-5-mini", "anthropic:claude-haiku-4-5"]
)
def test_an_answer_cut_at_the_token_limit_is_truncated(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, model: str
) -> None:
    fake_llm.enqueue(Turn(text="the answer was cut", hit_max_tokens=True))
    agi = make_agi()
    session = agi.new_session(model=model)
    result = agi.ask("hi", session=session.id)
    assert result.text == "the answer was cut"
    assert result.run.usage["truncated"] is True
    assistant = agi.history(session.id, view="full")[-1]
    assert (assistant.meta["stop_reason"], assistant.meta["truncated"]) == ("length", True)
    view = RunView()
    for event in agi.store.list_run_events(result.run.id):
        view.apply({"type": event.type, "run_id": event.run_id, **event.payload})
    assert "truncated" in view.footer()


def test_extra_body_of_the_provider_and_of_the_model_reach_the_request(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    config = {
        "providers": {
            "openai-chat": {"extra_body": {"tool_choice": "auto", "chat_template_kwargs": {"a": 1}}}
        },
        "models": {
            "openai-chat:gpt-4o-mini": {"extra_body": {"chat_template_kwargs": {"b": 2}}},
            "gpt-4o-mini": {"extra_body": {"top_k": 20}},
            "other-model": {"extra_body": {"top_k": 99}},
        },
    }
    (project / ".agi" / "config.json").write_text(json.dumps(config))
    fake_llm.enqueue(Turn(text="ok"))
    assert make_agi().ask("hi", model=CHAT).text == "ok"
    body = fake_llm.requests[-1].body
    assert body["tool_choice"] == "auto"
    assert body["chat_template_kwargs"] == {"a": 1, "b": 2}
    assert body["top_k"] == 20
    assert body["messages"][-1] == {"role": "user", "content": "hi"}


def test_extra_body_cannot_replace_what_the_adapter_sets(make_agi: MakeAgi, project: Path) -> None:
    config = {"models": {"gpt-4o-mini": {"extra_body": {"stream": False}}}}
    (project / ".agi" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match="extra_body cannot set stream"):
        make_agi()


def test_request_extras_merge_objects_key_by_key() -> None:
    extras = RequestExtras(
        providers={"vllm": {"chat_template_kwargs": {"a": 1, "b": 1}, "top_k": 5}},
        models={"qwen3": {"chat_template_kwargs": {"b": 2}}, "vllm:qwen3": {"top_k": 7}},
    )
    assert extras.body_for("vllm", "qwen3") == {
        "chat_template_kwargs": {"a": 1, "b": 2},
        "top_k": 7,
    }
    assert extras.body_for("ollama", "qwen3") == {"chat_template_kwargs": {"b": 2}}
    assert extras.body_for("ollama", "llama3") == {}
    body = extras.body_for("vllm", "qwen3")
    body["chat_template_kwargs"]["a"] = 9  # a fresh dict: the config is not changed
    assert extras.providers["vllm"]["chat_template_kwargs"]["a"] == 1
