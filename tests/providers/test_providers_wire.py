"""The differential test of the two ways of reading Chat Completions: recorded streams (text,
reasoning, parallel tool calls, usage, refusals, errors, dropped and truncated streams, what
llama.cpp and llama-cpp-python send) are served byte for byte to the SDK path
(``OpenAIChatProvider``, the reference) and to the HTTP path (``HttpChatProvider``), and what
both yield (events, or the typed error) must be the same."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest

from agi_jupyter.errors import ProviderDisconnected, ProviderError, ProviderHTTPError
from agi_jupyter.providers import (
    AdapterConfig,
    Provider,
    ProviderEvent,
    ProviderRequest,
    RetryPolicy,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from agi_jupyter.providers.openai_chat import OpenAIChatProvider
from agi_jupyter.providers.openai_chat_http import HttpChatProvider
from agi_jupyter.records import ChatMessage, TextPart

REQUEST = ProviderRequest(
    model="m",
    messages=[ChatMessage(role="user", parts=[TextPart(text="hi")])],
    idempotency_key="run_1-1-1",
)
ENVELOPE = {"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1, "model": "m"}
USAGE = {
    "prompt_tokens": 11,
    "completion_tokens": 7,
    "total_tokens": 18,
    "prompt_tokens_details": {"cached_tokens": 3},
    "completion_tokens_details": {"reasoning_tokens": 2},
}


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return json.dumps({**ENVELOPE, "choices": choices, **extra})


def body(*data: str, done: bool = True, newline: str = "\n") -> bytes:
    events = [f"data: {d}{newline}{newline}" for d in data]
    if done:
        events.append(f"data: [DONE]{newline}{newline}")
    return "".join(events).encode()


def call(index: int, call_id: str | None = None, name: str | None = None, args: str = "") -> Any:
    function: dict[str, Any] = {"arguments": args}
    if name is not None:
        function["name"] = name
    entry: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        entry.update(id=call_id, type="function")
    return entry


class Dropping(httpx2.AsyncByteStream):
    """A 200 body that sends ``data`` and then loses the connection."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.data
        raise httpx2.RemoteProtocolError("peer closed connection without sending complete body")


Answer = Callable[[], httpx2.Response]


def sse_answer(data: bytes) -> Answer:
    return lambda: httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=data)


def status_answer(status: int, payload: object) -> Answer:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return lambda: httpx2.Response(status, headers={"content-type": "application/json"}, text=text)


def dropping_answer(data: bytes) -> Answer:
    return lambda: httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, stream=Dropping(data)
    )


STREAMS: dict[str, list[Answer]] = {
    "text": [
        sse_answer(
            body(
                chunk({"role": "assistant", "content": "", "refusal": None}),
                *(chunk({"content": w}) for w in ["Hel", "lo ", "wor", "ld."]),
                chunk({}, "stop"),
                chunk(None, usage=USAGE),
            )
        )
    ],
    "crlf_and_comments": [
        sse_answer(
            b": keep-alive\r\n\r\n"
            + body(
                chunk({"content": "a"}), chunk({"content": "b"}), chunk({}, "stop"), newline="\r\n"
            )
        )
    ],
    "reasoning": [
        sse_answer(
            body(
                chunk({"role": "assistant", "reasoning_content": "think "}),
                chunk({"reasoning_content": "more"}),
                chunk({"reasoning": "and more"}),
                chunk({"content": "Answer."}),
                chunk({}, "stop"),
                chunk(None, usage=USAGE),
            )
        )
    ],
    "parallel_tool_calls": [
        sse_answer(
            body(
                chunk({"role": "assistant", "content": None}),
                chunk({"tool_calls": [call(0, "call_a", "fs_read", '{"pa')]}),
                chunk({"tool_calls": [call(1, "call_b", "fs_list", "")]}),
                chunk({"tool_calls": [call(0, args='th": "x"}')]}),
                chunk({"tool_calls": [call(1, args='{"path": "."}')]}),
                chunk({}, "tool_calls"),
                chunk(None, usage=USAGE),
            )
        )
    ],
    "tool_call_bad_json_and_stop": [
        sse_answer(
            body(
                chunk({"tool_calls": [call(0, "call_c", "fs_read", '{"path": ')]}),
                chunk({}, "stop"),
            )
        )
    ],
    "refusal": [
        sse_answer(
            body(
                chunk({"role": "assistant", "content": None, "refusal": ""}),
                chunk({"refusal": "I can't help with that."}),
                chunk({}, "stop"),
            )
        )
    ],
    "length_without_usage": [
        sse_answer(
            body(chunk({"content": "cut"}), chunk({"content": " short"}), chunk({}, "length"))
        )
    ],
    "content_filter": [sse_answer(body(chunk({}, "content_filter")))],
    "llama_cpp": [  # content null first, usage with choices [] and timings
        sse_answer(
            body(
                chunk({"role": "assistant", "content": None}),
                chunk({"content": "hi"}),
                chunk({}, "stop"),
                chunk(None, usage=USAGE, timings={"prompt_ms": 1.5}),
            )
        )
    ],
    "no_finish_reason": [sse_answer(body(chunk({"content": "a"}), done=True))],
    "truncated_body": [sse_answer(body(chunk({"content": "a"}), done=False))],
    "dropped_mid_stream": [dropping_answer(body(chunk({"content": "par"}), done=False))],
    "dropped_then_ok": [
        dropping_answer(b""),
        sse_answer(body(chunk({"content": "ok"}), chunk({}, "stop"))),
    ],
    "in_stream_error_retryable": [
        sse_answer(body(json.dumps({"error": {"message": "upstream overloaded", "code": 502}})))
    ]
    * 3,
    "in_stream_error_final": [
        sse_answer(body(json.dumps({"error": {"message": "bad", "code": "invalid_prompt"}})))
    ],
    "in_stream_error_without_message": [sse_answer(body(json.dumps({"error": {"code": "x"}})))],
    "http_400": [status_answer(400, {"error": {"message": "bad request", "type": "invalid"}})],
    "http_401": [status_answer(401, {"error": {"message": "no key"}})],
    "http_500_validation": [
        status_answer(
            500,
            {"error": {"message": "1 validation error for Req", "type": "internal_server_error"}},
        )
    ],
    "http_500_then_ok": [
        status_answer(500, "upstream exploded"),
        sse_answer(body(chunk({"content": "ok"}), chunk({}, "stop"))),
    ],
    "http_429_exhausted": [status_answer(429, {"error": {"message": "slow down"}})] * 3,
}


def client_for(answers: list[Answer], seen: list[httpx2.Request]) -> httpx2.AsyncClient:
    queue = list(answers)

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return queue.pop(0)()

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handle))


def config() -> AdapterConfig:
    return AdapterConfig(
        name="compat",
        base_url="http://model.test/v1",
        api_key="sk-wire-0123456789",
        retry=RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.001),
    )


async def outcome(provider: Provider) -> tuple[list[ProviderEvent], ProviderError | None]:
    events: list[ProviderEvent] = []
    try:
        async for event in provider.stream(REQUEST):
            events.append(event)
    except ProviderError as error:
        return events, error
    finally:
        await provider.aclose()
    return events, None


def normalized(events: list[ProviderEvent]) -> list[ProviderEvent]:
    """Events with generated tool-call ids replaced by their order of appearance."""
    ids: dict[str, str] = {}
    out: list[ProviderEvent] = []
    for event in events:
        if isinstance(event, ToolCallStart | ToolCallArgsDelta | ToolCallEnd):
            stable = ids.setdefault(event.tool_call_id, f"id{len(ids)}")
            event = type(event)(**{**vars(event), "tool_call_id": stable})
        out.append(event)
    return out


@pytest.mark.asyncio
@pytest.mark.parametrize("case", sorted(STREAMS))
async def test_both_wire_paths_yield_the_same(case: str) -> None:
    sdk_seen: list[httpx2.Request] = []
    http_seen: list[httpx2.Request] = []
    sdk = OpenAIChatProvider(config(), http_client=client_for(STREAMS[case], sdk_seen))
    http = HttpChatProvider(config(), http_client=client_for(STREAMS[case], http_seen))
    sdk_events, sdk_error = await outcome(sdk)
    http_events, http_error = await outcome(http)
    assert normalized(http_events) == normalized(sdk_events)
    assert type(http_error) is type(sdk_error)
    if sdk_error is not None and http_error is not None:
        assert http_error.retryable == sdk_error.retryable
        assert http_error.code == sdk_error.code
        if isinstance(sdk_error, ProviderHTTPError):
            assert isinstance(http_error, ProviderHTTPError)
            assert (http_error.status, http_error.message) == (sdk_error.status, sdk_error.message)
        elif not isinstance(sdk_error, ProviderDisconnected):
            assert http_error.message == sdk_error.message
    assert len(http_seen) == len(sdk_seen)  # the same retries
    for ours, theirs in zip(http_seen, sdk_seen, strict=True):
        assert json.loads(ours.content) == json.loads(theirs.content)
        assert ours.url == theirs.url
        for header in ("authorization", "idempotency-key", "content-type", "accept"):
            assert ours.headers.get(header) == theirs.headers.get(header), header


def test_a_streamed_answer_on_the_http_path_imports_no_sdk(fake_llm: Any) -> None:
    """``openai`` (and ``anthropic``) are not imported to stream a Chat Completions answer."""
    script = f"""
import asyncio, sys
from agi_jupyter.config import ProviderSettings
from agi_jupyter.providers import ProviderRequest, create_provider
from agi_jupyter.records import ChatMessage, TextPart

settings = ProviderSettings(
    name="compat", wire="openai-chat", base_url={fake_llm.openai_base_url!r},
    enabled=True, requires_key=False, default_model=None,
)
hi = [ChatMessage(role="user", parts=[TextPart(text="hi")])]

async def main():
    provider = create_provider(settings)
    events = [e async for e in provider.stream(ProviderRequest(model="m", messages=hi))]
    await provider.aclose()
    assert events[-1].kind == "finish", events

asyncio.run(main())
print(sorted(m for m in sys.modules if m.split(".")[0] in ("openai", "anthropic")))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
