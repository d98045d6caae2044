"""Wire cases the fake server does not script, served as canned SSE through ``httpx2.MockTransport``
to the real SDK clients: other finish reasons, in-stream errors, id-less tool calls, cache usage."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from agi_jupyter.errors import ProviderDisconnected, ProviderError, ProviderHTTPError
from agi_jupyter.providers import (
    AdapterConfig,
    Finish,
    Provider,
    ProviderEvent,
    ProviderRequest,
    ReasoningDelta,
    ReasoningDone,
    RetryPolicy,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from agi_jupyter.providers.anthropic_http import AnthropicHttpProvider
from agi_jupyter.providers.anthropic_messages import AnthropicProvider
from agi_jupyter.providers.openai_chat import OpenAIChatProvider
from agi_jupyter.providers.openai_responses import OpenAIResponsesProvider
from agi_jupyter.records import ChatMessage, TextPart

REQUEST = ProviderRequest(
    model="m", messages=[ChatMessage(role="user", parts=[TextPart(text="hi")])]
)


def sse(*events: dict[str, Any], named: bool = False, done: bool = False) -> bytes:
    lines = []
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        lines.append(f"{head}data: {json.dumps(event)}\n\n")
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def transport(*bodies: bytes) -> httpx2.AsyncClient:
    """A client whose n-th request gets the n-th body as a 200 event stream."""
    queue = list(bodies)

    def handle(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=queue.pop(0)
        )

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handle))


def config(name: str, retries: int = 0) -> AdapterConfig:
    return AdapterConfig(
        name=name,
        base_url="http://model.test/v1",
        api_key="sk-edge-0123456789",
        retry=RetryPolicy(max_retries=retries, base_delay=0.001, max_delay=0.001),
    )


async def run(provider: Provider) -> list[ProviderEvent]:
    try:
        return [event async for event in provider.stream(REQUEST)]
    finally:
        await provider.aclose()


def chat(*chunks: dict[str, Any], done: bool = True, retries: int = 0) -> Provider:
    body = sse(*({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
                  "model": "m", **c} for c in chunks), done=done)  # fmt: skip
    return OpenAIChatProvider(config("compat", retries), http_client=transport(body))


def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


# --- Chat Completions ------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_chat_length_without_usage() -> None:
    events = await run(chat(choice({"content": "cut"}), choice({}, "length")))
    assert [type(e).__name__ for e in events] == ["ResponseId", "TextDelta", "Finish"]
    assert events[-1] == Finish(reason="length", raw_reason="length")


@pytest.mark.asyncio
async def test_chat_content_filter() -> None:
    events = await run(chat(choice({}, "content_filter")))
    assert events[-1] == Finish(reason="content_filter", raw_reason="content_filter")


@pytest.mark.asyncio
async def test_chat_tool_call_without_id_and_stop() -> None:
    call = {"index": 0, "function": {"name": "look", "arguments": '{"q": "x"}'}}
    events = await run(chat(choice({"tool_calls": [call]}), choice({}, "stop")))
    (start,) = [e for e in events if isinstance(e, ToolCallStart)]
    (end,) = [e for e in events if isinstance(e, ToolCallEnd)]
    assert start.tool_call_id.startswith("call_")
    assert end.tool_call_id == start.tool_call_id
    assert end.arguments == {"q": "x"}
    assert events[-1] == Finish(reason="tool_calls", raw_reason="stop")


@pytest.mark.asyncio
async def test_chat_reasoning_field_and_usage_details() -> None:
    usage = {
        "prompt_tokens": 50,
        "completion_tokens": 20,
        "total_tokens": 70,
        "prompt_tokens_details": {"cached_tokens": 30},
        "completion_tokens_details": {"reasoning_tokens": 12},
    }
    events = await run(
        chat(
            choice({"reasoning": "hmm "}),
            choice({"reasoning": "ok"}),
            choice({"content": "A"}),
            choice({}, "stop"),
            {"choices": [], "usage": usage},
        )
    )
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["hmm ", "ok"]
    assert [e.text for e in events if isinstance(e, ReasoningDone)] == ["hmm ok"]
    usage_event = events[-2]
    assert usage_event == Usage(
        input_tokens=50, output_tokens=20, cached_input_tokens=30, reasoning_tokens=12
    )


@pytest.mark.asyncio
async def test_chat_in_stream_error() -> None:
    body = sse({"error": {"message": "upstream overloaded", "code": "502"}})
    provider = OpenAIChatProvider(config("openrouter"), http_client=transport(body))
    with pytest.raises(ProviderError, match="upstream overloaded") as caught:
        await run(provider)
    assert caught.value.retryable


@pytest.mark.asyncio
async def test_chat_no_finish_reason_is_a_disconnect_even_with_done() -> None:
    with pytest.raises(ProviderDisconnected, match="without a finish reason"):
        await run(chat(choice({"content": "a"}), done=True))


# --- Responses -------------------------------------------------------------------------------


def response(status: str, **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": status, "output": [], **extra}


def responses(*events: dict[str, Any], retries: int = 0) -> Provider:
    numbered = [{"sequence_number": n, **e} for n, e in enumerate(events)]
    body = sse(*numbered, named=True)
    return OpenAIResponsesProvider(config("openai", retries), http_client=transport(body))


USAGE = {
    "input_tokens": 9,
    "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 0},
    "output_tokens": 3,
    "output_tokens_details": {"reasoning_tokens": 1},
    "total_tokens": 12,
}


@pytest.mark.asyncio
async def test_responses_incomplete_is_length() -> None:
    incomplete = response(
        "incomplete", incomplete_details={"reason": "max_output_tokens"}, usage=USAGE
    )
    events = await run(
        responses(
            {"type": "response.created", "response": response("in_progress")},
            {"type": "response.incomplete", "response": incomplete},
        )
    )
    assert events[-2] == Usage(
        input_tokens=9, output_tokens=3, cached_input_tokens=4, reasoning_tokens=1
    )
    assert events[-1] == Finish(reason="length", raw_reason="max_output_tokens")


@pytest.mark.asyncio
async def test_responses_failed() -> None:
    failed = response("failed", error={"code": "server_error", "message": "try again"})
    provider = responses(
        {"type": "response.created", "response": response("in_progress")},
        {"type": "response.failed", "response": failed},
    )
    with pytest.raises(ProviderDisconnected, match="server_error"):  # after the response id
        await run(provider)


@pytest.mark.asyncio
async def test_responses_error_event_first_is_raised_as_is() -> None:
    provider = responses({"type": "error", "code": "invalid_prompt", "message": "no"})
    with pytest.raises(ProviderError, match="invalid_prompt") as caught:
        await run(provider)
    assert not caught.value.retryable


# --- Anthropic -------------------------------------------------------------------------------


def message_start(usage: dict[str, Any] | None = None) -> dict[str, Any]:
    usage = usage or {"input_tokens": 5, "output_tokens": 1}
    message: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
               "content": [], "stop_reason": None, "usage": usage}  # fmt: skip
    return {"type": "message_start", "message": message}


AnthropicPath = type[AnthropicProvider] | type[AnthropicHttpProvider]


@pytest.fixture(params=[AnthropicProvider, AnthropicHttpProvider], ids=["sdk", "http"])
def path(request: pytest.FixtureRequest) -> AnthropicPath:
    """Each Anthropic test runs on both wire paths."""
    cls: AnthropicPath = request.param
    return cls


def anthropic_provider(path: AnthropicPath, *events: dict[str, Any], retries: int = 0) -> Provider:
    body = sse(*events, named=True)
    return path(config("anthropic", retries), http_client=transport(body))


def stop(reason: str, output_tokens: int = 7) -> list[dict[str, Any]]:
    return [
        {"type": "message_delta", "delta": {"stop_reason": reason},
         "usage": {"output_tokens": output_tokens}},
        {"type": "message_stop"},
    ]  # fmt: skip


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("raw", "reason"),
    [("max_tokens", "length"), ("refusal", "content_filter"), ("pause_turn", "other")],
)
async def test_anthropic_stop_reasons(path: AnthropicPath, raw: str, reason: str) -> None:
    events = await run(anthropic_provider(path, message_start(), *stop(raw)))
    finish = events[-1]
    assert isinstance(finish, Finish)
    assert (finish.reason, finish.raw_reason) == (reason, raw)


@pytest.mark.asyncio
async def test_anthropic_cache_usage(path: AnthropicPath) -> None:
    usage = {"input_tokens": 100, "cache_read_input_tokens": 900,
             "cache_creation_input_tokens": 50, "output_tokens": 1}  # fmt: skip
    events = await run(anthropic_provider(path, message_start(usage), *stop("end_turn", 42)))
    assert events[-2] == Usage(input_tokens=1050, output_tokens=42, cached_input_tokens=900)


@pytest.mark.asyncio
async def test_anthropic_redacted_thinking(path: AnthropicPath) -> None:
    block = {"type": "redacted_thinking", "data": "opaque"}
    events = await run(
        anthropic_provider(
            path,
            message_start(),
            {"type": "content_block_start", "index": 0, "content_block": block},
            {"type": "content_block_stop", "index": 0},
            *stop("end_turn"),
        )
    )
    (done,) = [e for e in events if isinstance(e, ReasoningDone)]
    assert done.provider_data == {"type": "redacted_thinking", "data": "opaque"}


@pytest.mark.asyncio
async def test_anthropic_tool_use_without_input(path: AnthropicPath) -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}
    events = await run(
        anthropic_provider(
            path,
            message_start(),
            {"type": "content_block_start", "index": 0, "content_block": block},
            {"type": "content_block_stop", "index": 0},
            *stop("tool_use"),
        )
    )
    (end,) = [e for e in events if isinstance(e, ToolCallEnd)]
    assert (end.arguments, end.parse_error) == ({}, None)
    assert events[-1] == Finish(reason="tool_calls", raw_reason="tool_use")


OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


@pytest.mark.asyncio
async def test_anthropic_error_event_before_anything(path: AnthropicPath) -> None:
    with pytest.raises(ProviderHTTPError) as caught:
        await run(anthropic_provider(path, OVERLOADED))
    assert (caught.value.status, caught.value.retryable) == (529, True)


@pytest.mark.asyncio
async def test_anthropic_error_event_is_retried_before_the_first_event(path: AnthropicPath) -> None:
    client = transport(
        sse(OVERLOADED, named=True),
        sse(message_start(), {"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": "fine"}},
            *stop("end_turn"), named=True),
    )  # fmt: skip
    provider = path(config("anthropic", retries=1), http_client=client)
    events = await run(provider)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["fine"]


@pytest.mark.asyncio
async def test_anthropic_error_event_mid_stream_is_a_disconnect(path: AnthropicPath) -> None:
    provider = anthropic_provider(path, message_start(), OVERLOADED)
    with pytest.raises(ProviderDisconnected, match="Overloaded") as caught:
        await run(provider)
    assert isinstance(caught.value.__cause__, ProviderHTTPError)


@pytest.mark.asyncio
async def test_anthropic_tool_use_sent_whole_in_the_block_start(path: AnthropicPath) -> None:
    block = {"type": "tool_use", "id": "toolu_2", "name": "look", "input": {"q": "x"}}
    events = await run(
        anthropic_provider(
            path,
            message_start(),
            {"type": "content_block_start", "index": 0, "content_block": block},
            {"type": "content_block_stop", "index": 0},
            *stop("tool_use"),
        )
    )
    (end,) = [e for e in events if isinstance(e, ToolCallEnd)]
    assert end.arguments == {"q": "x"}


@pytest.mark.asyncio
async def test_anthropic_final_usage_keeps_the_cache_counts(path: AnthropicPath) -> None:
    usage = {"input_tokens": 10, "cache_read_input_tokens": 90,
             "cache_creation_input_tokens": 5, "output_tokens": 1}  # fmt: skip
    final = {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
             "usage": {"input_tokens": 10, "output_tokens": 8}}  # fmt: skip
    provider = anthropic_provider(path, message_start(usage), final, {"type": "message_stop"})
    events = await run(provider)
    assert events[-2] == Usage(input_tokens=105, output_tokens=8, cached_input_tokens=90)
