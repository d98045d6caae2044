"""The differential test of the two ways of reading Anthropic Messages: recorded streams (text,
thinking with its signature, redacted thinking, parallel ``tool_use`` blocks, usage with cache
tokens, every stop reason, ``error`` events, HTTP errors, dropped and truncated streams) are
served byte for byte to the SDK path (``AnthropicProvider``, the reference) and to the HTTP path
(``AnthropicHttpProvider``); both must yield the same events or raise the same typed error,
after the same requests (bodies, headers, retries)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import httpx2
import pytest

from agi_jupyter.errors import ProviderHTTPError
from agi_jupyter.providers import ProviderRequest, ToolSpec
from agi_jupyter.providers.anthropic_http import ANTHROPIC_VERSION, AnthropicHttpProvider
from agi_jupyter.providers.anthropic_mapping import ADAPTIVE_THINKING_MODELS, messages_params
from agi_jupyter.providers.anthropic_messages import AnthropicProvider
from agi_jupyter.providers.sse import SseCutter, SseEvent
from agi_jupyter.records import (
    ChatMessage,
    ImagePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from tests.providers.wire_common import (
    REQUEST,
    Answer,
    assert_same,
    client_for,
    config,
    dropping_answer,
    outcome,
    served_client,
    sse_answer,
    status_answer,
)

HEADERS = (
    "authorization",
    "x-api-key",
    "anthropic-version",
    "idempotency-key",
    "content-type",
    "accept",
)
START_USAGE = {"input_tokens": 12, "cache_creation_input_tokens": 5,
               "cache_read_input_tokens": 40, "output_tokens": 1}  # fmt: skip


def events(*payloads: dict[str, Any], newline: str = "\n") -> bytes:
    """A Messages stream: each event named after its type, as the API sends them."""
    return "".join(
        f"event: {p['type']}{newline}data: {json.dumps(p)}{newline}{newline}" for p in payloads
    ).encode()


def message_start(usage: dict[str, Any] | None = None) -> dict[str, Any]:
    message = {"id": "msg_9", "type": "message", "role": "assistant", "model": "claude-x",
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": usage or START_USAGE}  # fmt: skip
    return {"type": "message_start", "message": message}


def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": fields}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def finish(reason: str | None, **usage: Any) -> list[dict[str, Any]]:
    end = {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
           "usage": {"output_tokens": 9, **usage}}  # fmt: skip
    return [end, {"type": "message_stop"}]


def text_block(index: int, *words: str) -> list[dict[str, Any]]:
    deltas = [delta(index, type="text_delta", text=w) for w in words]
    return [start(index, {"type": "text", "text": ""}), *deltas, stop(index)]


def tool_use(call_id: str, name: str, input_: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": input_ or {}}


def error_event(kind: str, message: str = "Overloaded") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def api_error(kind: str, message: str) -> dict[str, Any]:
    """An error body as the API answers an HTTP error status with."""
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_1"}


def answer(*payloads: dict[str, Any]) -> Answer:
    return sse_answer(events(*payloads))


PING = {"type": "ping"}
THINKING = [
    start(0, {"type": "thinking", "thinking": "", "signature": ""}),
    delta(0, type="thinking_delta", thinking="Let me "),
    delta(0, type="thinking_delta", thinking="think."),
    delta(0, type="signature_delta", signature="sig-abc"),
    stop(0),
]
OVERLOADED = error_event("overloaded_error")
STREAMS: dict[str, list[Answer]] = {
    "text": [answer(message_start(), PING, *text_block(0, "Hel", "lo."), *finish("end_turn"))],
    "crlf": [
        sse_answer(
            events(message_start(), *text_block(0, "a"), *finish("end_turn"), newline="\r\n")
        )
    ],
    "thinking_and_signature": [
        answer(message_start(), *THINKING, *text_block(1, "Answer."), *finish("end_turn"))
    ],
    "thinking_sent_whole": [
        answer(
            message_start(),
            start(0, {"type": "thinking", "thinking": "All at once.", "signature": ""}),
            delta(0, type="signature_delta", signature="sig-whole"),
            stop(0),
            *finish("end_turn"),
        )
    ],
    "redacted_thinking": [
        answer(
            message_start(),
            start(0, {"type": "redacted_thinking", "data": "EmwKAhgB"}),
            stop(0),
            *text_block(1, "ok"),
            *finish("end_turn"),
        )
    ],
    "parallel_tool_use": [
        answer(
            message_start(),
            *text_block(0, "Reading both."),
            start(1, tool_use("toolu_a", "fs_read")),
            start(2, tool_use("toolu_b", "fs_list")),
            delta(1, type="input_json_delta", partial_json=""),
            delta(1, type="input_json_delta", partial_json='{"path": '),
            delta(2, type="input_json_delta", partial_json='{"path": "."}'),
            delta(1, type="input_json_delta", partial_json='"a.py"}'),
            stop(1),
            stop(2),
            start(3, tool_use("toolu_c", "clock", {"tz": "UTC"})),  # input sent whole
            stop(3),
            start(4, tool_use("toolu_d", "fs_read")),
            delta(4, type="input_json_delta", partial_json='{"path": '),  # bad JSON
            stop(4),
            *finish("tool_use"),
        )
    ],
    "usage_repeated_in_message_delta": [
        answer(
            message_start(),
            *text_block(0, "x"),
            *finish(
                "end_turn",
                input_tokens=20,
                cache_read_input_tokens=50,
                cache_creation_input_tokens=7,
            ),
        )
    ],
    "max_tokens": [answer(message_start(), *text_block(0, "cut"), *finish("max_tokens"))],
    "refusal": [answer(message_start(), *text_block(0, "I can"), *finish("refusal"))],
    "stop_sequence": [answer(message_start(), *text_block(0, "a"), *finish("stop_sequence"))],
    "unknown_stop_reason": [answer(message_start(), *finish("pause_turn"))],
    "unknown_events_and_deltas": [
        sse_answer(
            events(
                message_start(),
                *text_block(0, "a"),
                delta(0, type="citations_delta", citation={"type": "char_location"}),
                {"type": "future_event", "x": 1},
                *finish("end_turn"),
            )
            + b'data: {"type": "message_stop"}\n\n'  # no event name: both skip it
            + b": a comment\n\nevent: ping\ndata: \n\n"
        )
    ],
    "error_event_mid_stream": [answer(message_start(), *text_block(0, "par"), OVERLOADED)],
    "error_event_first_retried_then_ok": [
        answer(OVERLOADED),
        answer(message_start(), *text_block(0, "ok"), *finish("end_turn")),
    ],
    "error_event_first_exhausted": [answer(OVERLOADED)] * 3,
    "error_event_invalid_request": [answer(error_event("invalid_request_error", "bad"))],
    "error_event_rate_limit": [answer(error_event("rate_limit_error", "slow"))] * 3,
    "error_event_unknown_type": [answer(error_event("brand_new_error", "?"))] * 3,
    "error_event_not_json": [sse_answer(b"event: error\ndata: upstream broke\n\n")] * 3,
    "no_message_stop": [answer(message_start(), *text_block(0, "a"), finish("end_turn")[0])],
    "empty_body": [sse_answer(b"")] * 3,
    "dropped_mid_stream": [
        dropping_answer(events(message_start(), start(0, {"type": "text", "text": ""})))
    ],
    "dropped_then_ok": [
        dropping_answer(b""),
        answer(message_start(), *text_block(0, "ok"), *finish("end_turn")),
    ],
    "http_400": [status_answer(400, api_error("invalid_request_error", "bad"))],
    "http_401": [status_answer(401, {"type": "error", "error": {"type": "authentication_error"}})],
    "http_429_exhausted": [status_answer(429, api_error("rate_limit_error", "slow down"))] * 3,
    "http_500_then_ok": [
        status_answer(500, "upstream exploded"),
        answer(message_start(), *text_block(0, "ok"), *finish("end_turn")),
    ],
    "http_500_empty": [status_answer(500, "")] * 3,
    "http_529_exhausted": [status_answer(529, api_error("overloaded_error", "Overloaded"))] * 3,
}


def pair(
    answers: list[Answer], sdk_seen: list[httpx2.Request], http_seen: list[httpx2.Request]
) -> tuple[AnthropicProvider, AnthropicHttpProvider]:
    cfg = config("anthropic", "http://model.test")
    return (
        AnthropicProvider(cfg, http_client=client_for(answers, sdk_seen)),
        AnthropicHttpProvider(cfg, http_client=served_client(answers, http_seen)),
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("case", sorted(STREAMS))
async def test_both_anthropic_paths_yield_the_same(case: str) -> None:
    sdk_seen: list[httpx2.Request] = []
    http_seen: list[httpx2.Request] = []
    sdk, http = pair(STREAMS[case], sdk_seen, http_seen)
    await assert_same(sdk, http, sdk_seen, http_seen, headers=HEADERS)


@pytest.mark.asyncio
async def test_a_deterministic_4xx_is_requested_once() -> None:
    seen: list[httpx2.Request] = []
    _, http = pair(STREAMS["http_400"], [], seen)
    events, error = await outcome(http)
    assert events == []
    assert isinstance(error, ProviderHTTPError)
    assert (error.status, error.retryable) == (400, False)
    assert "bad" in error.message
    assert len(seen) == 1


@pytest.mark.asyncio
async def test_an_overloaded_error_event_is_a_retryable_529() -> None:
    seen: list[httpx2.Request] = []
    _, http = pair(STREAMS["error_event_first_exhausted"], [], seen)
    events, error = await outcome(http)
    assert events == []
    assert isinstance(error, ProviderHTTPError)
    assert (error.status, error.retryable) == (529, True)
    assert len(seen) == 3  # the first attempt and two retries


SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
HISTORY = [
    ChatMessage(role="user", parts=[TextPart(text="Read it."), ImagePart(mime="image/png",
                                                                          data_base64="iVBO")]),
    ChatMessage(role="assistant", parts=[
        ReasoningPart(text="Hmm.", signature="sig-1"),
        ReasoningPart(text="", provider_data={"type": "redacted_thinking", "data": "xyz"}),
        TextPart(text="Reading."),
        ToolCallPart(tool_call_id="toolu_1", name="fs_read", arguments={"path": "a"}),
    ]),
    ChatMessage(role="tool", parts=[ToolResultPart(tool_call_id="toolu_1", name="fs_read",
                                                   output="boom", is_error=True)]),
    ChatMessage(role="user", parts=[ImagePart(mime="image/png", url="https://x.test/a.png")]),
]  # fmt: skip
REQUESTS = {
    "budget_thinking": ProviderRequest(
        model="claude-sonnet-4-6",
        system="Be brief.",
        messages=HISTORY,
        tools=[ToolSpec(name="fs_read", description="Read a file.", parameters=SCHEMA)],
        thinking_level="medium",
        max_output_tokens=300,
        idempotency_key="run_1-2-1",
        extra_body={"metadata": {"user_id": "u1"}, "top_k": 5},
    ),
    "adaptive_thinking": ProviderRequest(
        model="claude-opus-4-6", messages=HISTORY[:1], thinking_level="xhigh"
    ),
    "temperature_without_thinking": ProviderRequest(
        model="claude-haiku-4-5", messages=HISTORY[:1], temperature=0.3
    ),
}


@pytest.mark.asyncio
@pytest.mark.parametrize("case", sorted(REQUESTS))
async def test_both_anthropic_paths_send_the_same_request(case: str) -> None:
    sdk_seen: list[httpx2.Request] = []
    http_seen: list[httpx2.Request] = []
    sdk, http = pair(STREAMS["text"], sdk_seen, http_seen)
    request = REQUESTS[case]
    await assert_same(sdk, http, sdk_seen, http_seen, request=request, headers=HEADERS)
    assert http_seen[0].url == "http://model.test/v1/messages"
    body = json.loads(http_seen[0].content)
    expected = messages_params(request)
    expected |= expected.pop("extra_body", {})
    expected.pop("extra_headers", None)
    assert body == expected
    assert http_seen[0].headers["authorization"] == "Bearer sk-wire-0123456789"  # as the SDK
    assert http_seen[0].headers.get("idempotency-key") == request.idempotency_key


def test_our_tables_match_the_installed_sdk() -> None:
    """The HTTP path imports no SDK, so it keeps its own copies of what the SDK knows: the
    models that take adaptive thinking and the API version it sends."""
    data = pytest.importorskip("anthropic._data")
    constants = pytest.importorskip("anthropic._constants")
    assert set(data.MODELS_TO_WARN_WITH_THINKING_ENABLED) <= ADAPTIVE_THINKING_MODELS
    assert constants.ANTHROPIC_API_VERSION == ANTHROPIC_VERSION
    for model in data.MODELS_TO_WARN_WITH_THINKING_ENABLED:
        params = messages_params(replace(REQUEST, model=model, thinking_level="low"))
        assert params["thinking"] == {"type": "adaptive"}
        assert params["output_config"] == {"effort": "low"}


def cut_in_reads(data: bytes, size: int) -> list[SseEvent]:
    cutter = SseCutter()
    cut = [e for i in range(0, len(data), size) for e in cutter.feed(data[i : i + size])]
    return cut + cutter.end()


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_events_cut_from_reads_of_any_size_are_the_same(size: int) -> None:
    """The reader sees reads of any size: an event split across them (a CRLF too), several in
    one, a read that is exactly one event (the fast path), a last event without its blank
    line."""
    data = (
        events(message_start(), *THINKING, *text_block(1, "a", "b"), *finish("end_turn"))
        + b": comment\r\n\r\nevent: ping\r\ndata: {}\r\n\r\ndata: x\ndata: y\r\rdata: z\n\n"
        + b"event: last\ndata: no blank line"
    )
    whole = cut_in_reads(data, len(data))
    assert [e.event for e in whole[:2]] == ["message_start", "content_block_start"]
    assert whole[-4:] == [
        SseEvent("ping", b"{}"),
        SseEvent(None, b"x\ny"),
        SseEvent(None, b"z"),
        SseEvent("last", b"no blank line"),
    ]
    assert cut_in_reads(data, size) == whole
