"""OpenAI Chat Completions through the real ``openai`` SDK against the fake server."""

from __future__ import annotations

import json
import threading
from typing import Any

import openai
import pytest

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn

USER = [{"role": "user", "content": "hi there"}]


def _stream(client: openai.OpenAI, **kwargs: Any) -> list[Any]:
    stream = client.chat.completions.create(model="gpt-fake", messages=USER, stream=True, **kwargs)
    with stream:
        return list(stream)


def _tool_calls(chunks: list[Any]) -> dict[int, dict[str, str]]:
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = delta.id or call["id"]
                call["name"] = delta.function.name or call["name"]
                call["arguments"] += delta.function.arguments or ""
    return calls


def test_streamed_text_accumulates(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="Hello, streaming   world!\nBye."))
    chunks = _stream(oai)
    deltas = [c.choices[0].delta.content for c in chunks if c.choices]
    assert "".join(d or "" for d in deltas) == "Hello, streaming   world!\nBye."
    assert len([d for d in deltas if d]) == 4
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)


def test_explicit_chunks_are_the_deltas(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(chunks=["He", "llo"]))
    deltas = [c.choices[0].delta.content for c in _stream(oai)]
    assert deltas[1:3] == ["He", "llo"]


def test_tool_calls_stream_in_pieces(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    args = {"path": "notes/todo.md", "limit": 20}
    fake_llm.enqueue(
        Turn(
            text="Let me look.",
            tool_calls=[FakeToolCall("fs_read", args, chunks=4), FakeToolCall("ls", {}, id="c2")],
        )
    )
    chunks = _stream(oai)
    calls = _tool_calls(chunks)
    assert calls[0]["name"] == "fs_read"
    assert calls[0]["id"].startswith("call_")
    assert json.loads(calls[0]["arguments"]) == args
    assert calls[1] == {"id": "c2", "name": "ls", "arguments": "{}"}
    call_deltas = [d for c in chunks for d in c.choices[0].delta.tool_calls or []]
    assert len([d for d in call_deltas if d.id is None]) == 4 + 2  # "{}" is split in two
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Let me look."


def test_stream_helper_assembles_tool_calls(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("add", {"a": 1, "b": 2})]))
    with oai.chat.completions.stream(model="gpt-fake", messages=USER) as stream:
        completion = stream.get_final_completion()
    call = completion.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("add", {"a": 1, "b": 2})
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.choices[0].message.content is None


def test_usage_chunk_with_include_usage(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="four words right here", reasoning="hmm ok", usage=(120, 30)))
    chunks = _stream(oai, stream_options={"include_usage": True})
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (120, 30)
    assert last.usage.total_tokens == 150
    assert last.usage.completion_tokens_details.reasoning_tokens == 2


def test_default_usage_counts_words(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="one two three"))
    usage = _stream(oai, stream_options={"include_usage": True})[-1].usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens) == (2, 3)


def test_reasoning_content_deltas(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="42", reasoning="Let me think step by step."))
    chunks = _stream(oai)
    reasoning = "".join(
        (c.choices[0].delta.model_extra or {}).get("reasoning_content") or "" for c in chunks
    )
    assert reasoning == "Let me think step by step."


def test_non_streaming(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(
        Turn(
            text="Done.",
            reasoning="quick",
            tool_calls=[FakeToolCall("x", {"k": "v"})],
            citations=[("https://example.org/a", "A")],
            usage=(7, 3),
        )
    )
    completion = oai.chat.completions.create(model="gpt-fake", messages=USER)
    message = completion.choices[0].message
    assert message.content == "Done."
    assert message.tool_calls[0].function.name == "x"
    assert json.loads(message.tool_calls[0].function.arguments) == {"k": "v"}
    assert (message.model_extra or {})["reasoning_content"] == "quick"
    assert message.annotations[0].url_citation.url == "https://example.org/a"
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == 7
    assert completion.model == "gpt-fake"


def test_rate_limit_fault_then_success(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(
        Turn(fault=Fault(status=429, headers={"retry-after": "0.05"})), Turn(text="ok")
    )
    with pytest.raises(openai.RateLimitError) as info:
        oai.chat.completions.create(model="gpt-fake", messages=USER)
    assert info.value.response.headers["retry-after"] == "0.05"
    assert info.value.code == "rate_limit_exceeded"
    completion = oai.chat.completions.create(model="gpt-fake", messages=USER)
    assert completion.choices[0].message.content == "ok"


def test_sdk_retry_honours_retry_after(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(
        Turn(fault=Fault(status=500, headers={"retry-after-ms": "10"})), Turn(text="ok")
    )
    with openai.OpenAI(base_url=fake_llm.openai_base_url, api_key="k", max_retries=1) as client:
        completion = client.chat.completions.create(model="gpt-fake", messages=USER)
    assert completion.choices[0].message.content == "ok"
    assert len(fake_llm.requests) == 2


def test_server_error_body_shape(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(
        Turn(fault=Fault(status=500, body={"error": {"message": "boom", "type": "x"}}))
    )
    with pytest.raises(openai.InternalServerError, match="boom"):
        oai.chat.completions.create(model="gpt-fake", messages=USER)


def test_dropped_stream_raises_connection_error(
    fake_llm: FakeLLMServer, oai: openai.OpenAI
) -> None:
    fake_llm.enqueue(Turn(text="a b c d e f", fault=Fault(drop_after=3)))
    seen: list[Any] = []
    with pytest.raises(openai.APIConnectionError):  # noqa: PT012
        for chunk in oai.chat.completions.create(model="gpt-fake", messages=USER, stream=True):
            seen.append(chunk)
    assert len(seen) == 3


def test_a_held_stream_waits_for_release(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="a b c d e f", fault=Fault(hold_after=2)))
    stream = iter(oai.chat.completions.create(model="gpt-fake", messages=USER, stream=True))
    first = [next(stream), next(stream)]  # the role chunk, then "a "
    got: list[str] = []
    reader = threading.Thread(
        target=lambda: got.extend(c.choices[0].delta.content or "" for c in stream if c.choices)
    )
    reader.start()
    reader.join(timeout=0.5)
    assert reader.is_alive()  # held at the gate
    assert got == []
    fake_llm.release()
    reader.join(timeout=10)
    assert not reader.is_alive()
    text = "".join(c.choices[0].delta.content or "" for c in first) + "".join(got)
    assert text == "a b c d e f"


def test_dropped_non_streaming_raises(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="a b c", fault=Fault(drop_after=0)))
    with pytest.raises(openai.APIConnectionError):
        oai.chat.completions.create(model="gpt-fake", messages=USER)


def test_truncated_stream_has_no_finish_reason(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="cut short here", fault=Fault(truncate=True)))
    chunks = _stream(oai, stream_options={"include_usage": True})
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "cut short here"
    assert all(c.choices[0].finish_reason is None for c in chunks)
    assert all(c.usage is None for c in chunks)


def test_truncated_non_streaming_is_length(fake_llm: FakeLLMServer, oai: openai.OpenAI) -> None:
    fake_llm.enqueue(Turn(text="partial", fault=Fault(truncate=True)))
    completion = oai.chat.completions.create(model="gpt-fake", messages=USER)
    assert completion.choices[0].finish_reason == "length"


@pytest.mark.asyncio
async def test_async_client_streams(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text="async hello"))
    async with openai.AsyncOpenAI(
        base_url=fake_llm.openai_base_url, api_key="k", max_retries=0
    ) as client:
        stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in stream])
    assert text == "async hello"
