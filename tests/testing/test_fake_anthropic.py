"""Anthropic Messages through the real ``anthropic`` SDK against the fake server."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn

USER = [{"role": "user", "content": "hi there"}]


def _raw_events(client: anthropic.Anthropic) -> list[Any]:
    stream = client.messages.create(model="claude-fake", max_tokens=256, messages=USER, stream=True)
    with stream:
        return list(stream)


def test_streamed_text_and_event_order(
    fake_llm: FakeLLMServer, claude: anthropic.Anthropic
) -> None:
    fake_llm.enqueue(Turn(text="Hello from Claude."))
    events = _raw_events(claude)
    text = "".join(e.delta.text for e in events if e.type == "content_block_delta")
    assert text == "Hello from Claude."
    types = [e.type for e in events if e.type != "content_block_delta"]
    assert types == [
        "message_start",
        "content_block_start",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[-2].delta.stop_reason == "end_turn"
    assert events[0].message.id.startswith("msg_")


def test_ping_and_event_lines_on_the_wire(fake_llm: FakeLLMServer) -> None:
    import httpx2

    fake_llm.enqueue(Turn(text="x"))
    body = {"model": "m", "max_tokens": 5, "messages": USER, "stream": True}
    raw = httpx2.post(fake_llm.url + "/v1/messages", json=body).text
    blocks = [b for b in raw.split("\n\n") if b]
    assert all(b.startswith("event: ") for b in blocks)
    names = [b.split("\n")[0].removeprefix("event: ") for b in blocks]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]


def test_tool_use_via_stream_helper(fake_llm: FakeLLMServer, claude: anthropic.Anthropic) -> None:
    args = {"city": "Paris", "units": ["C", "F"]}
    fake_llm.enqueue(Turn(text="Checking.", tool_calls=[FakeToolCall("weather", args, chunks=4)]))
    with claude.messages.stream(model="claude-fake", max_tokens=256, messages=USER) as stream:
        message = stream.get_final_message()
    assert [b.type for b in message.content] == ["text", "tool_use"]
    tool = message.content[1]
    assert (tool.name, tool.input) == ("weather", args)
    assert tool.id.startswith("toolu_")
    assert message.stop_reason == "tool_use"


def test_input_json_deltas(fake_llm: FakeLLMServer, claude: anthropic.Anthropic) -> None:
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("t", {"long": "x" * 30}, chunks=3, id="tu1")]))
    events = _raw_events(claude)
    parts = [e.delta.partial_json for e in events if e.type == "content_block_delta"]
    assert len(parts) == 3
    assert "".join(parts) == '{"long":"' + "x" * 30 + '"}'
    start = next(e for e in events if e.type == "content_block_start")
    assert (start.content_block.type, start.content_block.id, start.index) == ("tool_use", "tu1", 0)


def test_thinking_and_usage(fake_llm: FakeLLMServer, claude: anthropic.Anthropic) -> None:
    fake_llm.enqueue(Turn(text="42", reasoning="Six times seven is 42.", usage=(90, 12)))
    with claude.messages.stream(model="claude-fake", max_tokens=256, messages=USER) as stream:
        thinking = "".join(e.thinking for e in stream if e.type == "thinking")
        message = stream.get_final_message()
    assert thinking == "Six times seven is 42."
    assert message.content[0].type == "thinking"
    assert message.content[0].signature.startswith("fakesig-")
    assert message.content[1].text == "42"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (90, 12)


def test_non_streaming(fake_llm: FakeLLMServer, claude: anthropic.Anthropic) -> None:
    fake_llm.enqueue(Turn(text="Sure.", tool_calls=[FakeToolCall("ls", {"dir": "."})]))
    message = claude.messages.create(model="claude-fake", max_tokens=256, messages=USER)
    assert message.content[0].text == "Sure."
    assert message.content[1].input == {"dir": "."}
    assert message.stop_reason == "tool_use"
    assert message.model == "claude-fake"


def test_rate_limit_error_shape(fake_llm: FakeLLMServer, claude: anthropic.Anthropic) -> None:
    fake_llm.enqueue(Turn(fault=Fault(status=429, headers={"retry-after": "1"})))
    with pytest.raises(anthropic.RateLimitError) as info:
        claude.messages.create(model="claude-fake", max_tokens=256, messages=USER)
    assert info.value.body["error"]["type"] == "rate_limit_error"
    assert info.value.response.headers["retry-after"] == "1"


def test_overloaded(fake_llm: FakeLLMServer, claude: anthropic.Anthropic) -> None:
    fake_llm.enqueue(Turn(fault=Fault(status=529)))
    with pytest.raises(anthropic.APIStatusError) as info:
        claude.messages.create(model="claude-fake", max_tokens=256, messages=USER)
    assert info.value.status_code == 529


def test_dropped_stream_raises(fake_llm: FakeLLMServer, claude: anthropic.Anthropic) -> None:
    import httpx2

    fake_llm.enqueue(Turn(text="a b c d", fault=Fault(drop_after=3)))
    with (
        pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"),
        claude.messages.stream(model="claude-fake", max_tokens=256, messages=USER) as stream,
    ):
        stream.get_final_message()


def test_dropped_non_streaming_raises(fake_llm: FakeLLMServer, claude: anthropic.Anthropic) -> None:
    fake_llm.enqueue(Turn(text="a b c d", fault=Fault(drop_after=0)))
    with pytest.raises(anthropic.APIConnectionError):
        claude.messages.create(model="claude-fake", max_tokens=256, messages=USER)


def test_truncated_stream_has_no_stop(fake_llm: FakeLLMServer, claude: anthropic.Anthropic) -> None:
    cut = Turn(text="cut off", fault=Fault(truncate=True))
    fake_llm.enqueue(cut, cut)
    events = _raw_events(claude)
    assert [e.type for e in events][-1] == "content_block_stop"
    with claude.messages.stream(model="claude-fake", max_tokens=256, messages=USER) as stream:
        message = stream.get_final_message()  # the SDK raises nothing
    assert message.stop_reason is None


def test_truncated_non_streaming_is_max_tokens(
    fake_llm: FakeLLMServer, claude: anthropic.Anthropic
) -> None:
    fake_llm.enqueue(Turn(text="cut", fault=Fault(truncate=True)))
    message = claude.messages.create(model="claude-fake", max_tokens=256, messages=USER)
    assert message.stop_reason == "max_tokens"


def test_count_tokens(fake_llm: FakeLLMServer, claude: anthropic.Anthropic) -> None:
    result = claude.messages.count_tokens(model="claude-fake", messages=USER)
    assert result.input_tokens == 2
    assert fake_llm.requests[-1].path == "/v1/messages/count_tokens"
