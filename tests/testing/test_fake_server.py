"""The fake server itself: recording, default rule, control endpoints, routing, timing faults."""

from __future__ import annotations

import json
import time

import anthropic
import httpx2
import openai
import pytest

import agi_jupyter.testing as testing
from agi_jupyter.testing import (
    FakeLLMClient,
    FakeLLMServer,
    FakeToolCall,
    Fault,
    RecordedRequest,
    Turn,
)


def test_public_api() -> None:
    assert sorted(testing.__all__) == [
        "FakeHostedCall",
        "FakeLLMClient",
        "FakeLLMServer",
        "FakeToolCall",
        "Fault",
        "RecordedRequest",
        "Turn",
        "default_rule",
    ]
    assert all(hasattr(testing, name) for name in testing.__all__)


def test_server_urls_and_lifecycle() -> None:
    server = FakeLLMServer()
    assert not server.running
    with server:
        assert server.running
        assert server.url.startswith("http://127.0.0.1:")
        assert server.port > 0
        assert server.openai_base_url == server.url + "/v1"
        assert server.anthropic_base_url == server.url
        assert httpx2.get(server.url + "/_fake/health").json()["ok"] is True
    assert not server.running
    server.stop()  # stopping twice is harmless


def test_requests_are_recorded(
    fake_llm: FakeLLMServer, oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    oai.chat.completions.create(model="a", messages=[{"role": "user", "content": "one"}])
    oai.responses.create(model="b", input="two", extra_headers={"Idempotency-Key": "run-1"})
    claude.messages.create(model="c", max_tokens=9, messages=[{"role": "user", "content": "3"}])
    oai.models.list()
    chat, responses, messages, models = fake_llm.requests
    assert isinstance(chat, RecordedRequest)
    assert (chat.method, chat.path, chat.protocol) == ("POST", "/v1/chat/completions", "chat")
    assert chat.headers["authorization"] == "Bearer sk-test"
    assert chat.body["messages"] == [{"role": "user", "content": "one"}]
    assert (responses.protocol, responses.body["input"]) == ("responses", "two")
    assert responses.headers["idempotency-key"] == "run-1"
    assert (messages.protocol, messages.body["max_tokens"]) == ("anthropic", 9)
    assert "sk-ant-test" in (messages.headers.get("x-api-key") or messages.headers["authorization"])
    assert "anthropic-version" in messages.headers
    assert (models.method, models.path, models.protocol, models.body) == (
        "GET",
        "/v1/models",
        "other",
        None,
    )


def test_one_queue_for_all_protocols(
    fake_llm: FakeLLMServer, oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    fake_llm.enqueue(Turn(text="first"), Turn(text="second"))
    assert fake_llm.pending_turns == 2
    message = claude.messages.create(
        model="c", max_tokens=9, messages=[{"role": "user", "content": "x"}]
    )
    assert message.content[0].text == "first"
    assert oai.responses.create(model="m", input="x").output_text == "second"
    assert oai.responses.create(model="m", input="x").output_text.startswith("(offline fake model)")


def test_default_rule_echo(oai: openai.OpenAI, claude: anthropic.Anthropic) -> None:
    chat = oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "ping"}])
    assert chat.choices[0].message.content == "(offline fake model) echo: ping"
    parts = [{"type": "input_text", "text": "pong"}]
    response = oai.responses.create(model="m", input=[{"role": "user", "content": parts}])
    assert response.output_text == "(offline fake model) echo: pong"
    message = claude.messages.create(
        model="c",
        max_tokens=9,
        messages=[{"role": "user", "content": [{"type": "text", "text": "hey"}]}],
    )
    assert message.content[0].text == "(offline fake model) echo: hey"


def test_default_rule_tool_lines(oai: openai.OpenAI, claude: anthropic.Anthropic) -> None:
    prompt = 'Please:\n/tool fs.read {"path": "a.txt"}\n/tool shell.run {"cmd": "ls"}\n/tool bad {'
    chat = oai.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
    calls = chat.choices[0].message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("fs.read", {"path": "a.txt"}),
        ("shell.run", {"cmd": "ls"}),
    ]
    assert chat.choices[0].message.content is None
    message = claude.messages.create(
        model="c", max_tokens=9, messages=[{"role": "user", "content": "/tool now"}]
    )
    assert [(b.type, b.name, b.input) for b in message.content] == [("tool_use", "now", {})]


def test_default_rule_chat_tool_result(oai: openai.OpenAI) -> None:
    messages = [
        {"role": "user", "content": "/tool fs_read {}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "fs_read", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 300},
    ]
    chat = oai.chat.completions.create(model="m", messages=messages)
    assert chat.choices[0].message.content == (
        "(offline fake model) tool fs_read returned: " + "x" * 200
    )


def test_default_rule_responses_tool_result(oai: openai.OpenAI) -> None:
    items = [
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c9", "name": "sql_query", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c9", "output": "3 rows"},
    ]
    response = oai.responses.create(model="m", input=items)
    assert response.output_text == "(offline fake model) tool sql_query returned: 3 rows"


def test_default_rule_anthropic_tool_result(claude: anthropic.Anthropic) -> None:
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "a b"}],
                }
            ],
        },
    ]
    message = claude.messages.create(model="c", max_tokens=9, messages=messages)
    assert message.content[0].text == "(offline fake model) tool ls returned: a b"


def test_custom_default_rule_and_reset(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    seen: list[str] = []

    def rule(protocol: str, body: dict[str, object]) -> Turn:
        seen.append(protocol)
        return Turn(text="custom")

    fake_llm.default_rule = rule
    assert oai.responses.create(model="m", input="x").output_text == "custom"
    assert seen == ["responses"]
    fake_llm.reset()
    assert oai.responses.create(model="m", input="x").output_text.startswith("(offline")


def test_clear_empties_queue_and_log(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="a"), Turn(text="b"))
    oai.responses.create(model="m", input="x")
    fake_llm.clear()
    assert (fake_llm.pending_turns, fake_llm.requests) == (0, [])


def test_models_lists(oai: openai.OpenAI, claude: anthropic.Anthropic) -> None:
    assert "fake" in [m.id for m in oai.models.list()]
    assert "claude-fake" in [m.id for m in claude.models.list()]


def test_unknown_route_and_bad_json(fake_llm: FakeLLMServer) -> None:
    missing = httpx2.post(fake_llm.url + "/v1/embeddings", json={})
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "invalid_request_error"
    bad = httpx2.post(
        fake_llm.url + "/v1/messages", content=b"{nope", headers={"anthropic-version": "x"}
    )
    assert bad.status_code == 400
    assert bad.json()["type"] == "error"
    assert [r.protocol for r in fake_llm.requests] == ["other", "other"]


def test_other_base_paths_work(fake_llm: FakeLLMServer) -> None:
    url = fake_llm.url + "/v1beta/openai"
    with openai.OpenAI(base_url=url, api_key="k", max_retries=0) as client:
        chat = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "g"}]
        )
    assert chat.choices[0].message.content == "(offline fake model) echo: g"
    assert fake_llm.requests[0].path == "/v1beta/openai/chat/completions"


def test_chat_wire_format(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text="a b"))
    body = {"model": "m", "messages": [], "stream": True}
    with httpx2.stream("POST", fake_llm.openai_base_url + "/chat/completions", json=body) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        assert resp.headers["transfer-encoding"] == "chunked"
        raw = resp.read().decode()
    blocks = [b for b in raw.split("\n\n") if b]
    assert all(b.startswith("data: ") for b in blocks)
    assert blocks[-1] == "data: [DONE]"


def test_responses_wire_format(fake_llm: FakeLLMServer) -> None:
    body = {"model": "m", "input": "x", "stream": True}
    raw = httpx2.post(fake_llm.openai_base_url + "/responses", json=body).text
    for block in filter(None, raw.split("\n\n")):
        event_line, data_line = block.split("\n")
        assert event_line == "event: " + json.loads(data_line.removeprefix("data: "))["type"]


def test_delay_and_stall(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(
        Turn(text="a b c", fault=Fault(delay_before_headers=0.1, stall_between_events=0.03))
    )
    started = time.monotonic()
    stream = oai.chat.completions.create(model="m", messages=[], stream=True)
    assert time.monotonic() - started >= 0.1
    with stream:
        chunks = list(stream)
    assert time.monotonic() - started >= 0.1 + 0.03 * (len(chunks) - 1)


def test_fault_with_raw_body(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(fault=Fault(status=502, body="<html>Bad gateway</html>")))
    with pytest.raises(openai.InternalServerError) as info:
        oai.responses.create(model="m", input="x")
    assert info.value.status_code == 502
    assert "Bad gateway" in info.value.response.text


def test_control_client(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    remote = FakeLLMClient(fake_llm.url)
    remote.enqueue(
        Turn(
            text="scripted",
            tool_calls=[FakeToolCall("t", {"a": 1})],
            usage=(3, 4),
            citations=[("https://x", "X")],
        ),
        Turn(text="bg", background_delay=60, response_id="resp_remote"),
        Turn(fault=Fault(status=429, headers={"retry-after": "0"})),
    )
    assert remote.health()["pending_turns"] == 3
    response = oai.responses.create(model="m", input="x")
    assert (response.output_text, response.output[1].name) == ("scripted", "t")
    assert response.usage is not None
    assert response.usage.input_tokens == 3
    oai.responses.create(model="m", input="x", background=True)
    remote.complete_background("resp_remote")
    assert oai.responses.retrieve("resp_remote").status == "completed"
    with pytest.raises(openai.RateLimitError):
        oai.responses.create(model="m", input="x")
    recorded = remote.requests()
    assert [r.method for r in recorded] == ["POST", "POST", "GET", "POST"]
    assert recorded[0].body["input"] == "x"
    remote.reset()
    assert fake_llm.requests == []


def test_control_errors(fake_llm: FakeLLMServer) -> None:
    bad_turn = httpx2.post(fake_llm.url + "/_fake/enqueue", json=[{"txet": "typo"}])
    assert bad_turn.status_code == 400
    assert "txet" in bad_turn.json()["error"]
    assert httpx2.post(fake_llm.url + "/_fake/complete/resp_nope").status_code == 404
    assert httpx2.get(fake_llm.url + "/_fake/nothing").status_code == 404
    assert fake_llm.requests == []
    with pytest.raises(KeyError):
        fake_llm.complete_background("resp_nope")


def test_enqueue_checks_types(fake_llm: FakeLLMServer) -> None:
    with pytest.raises(TypeError):
        fake_llm.enqueue("hello")  # type: ignore[arg-type]
