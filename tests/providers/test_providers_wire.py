"""The differential test of the two ways of reading OpenAI's APIs: recorded streams (text,
reasoning, parallel tool calls, usage, refusals, errors, dropped and truncated streams, what
llama.cpp and llama-cpp-python send) are served byte for byte to the SDK path
(``OpenAIChatProvider`` / ``OpenAIResponsesProvider``, the reference) and to the HTTP path
(``HttpChatProvider`` / ``HttpResponsesProvider``), and what both yield (events, or the typed
error), the requests they send and their retries must be the same."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx2
import pytest

from agi_jupyter.providers.openai_chat import OpenAIChatProvider
from agi_jupyter.providers.openai_chat_http import HttpChatProvider
from agi_jupyter.providers.openai_responses import OpenAIResponsesProvider
from agi_jupyter.providers.openai_responses_http import HttpResponsesProvider
from tests.providers.wire_common import (
    Answer,
    assert_same,
    client_for,
    config,
    dropping_answer,
    served_client,
    sse_answer,
    status_answer,
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


@pytest.mark.asyncio
@pytest.mark.parametrize("case", sorted(STREAMS))
async def test_both_chat_paths_yield_the_same(case: str) -> None:
    sdk_seen: list[httpx2.Request] = []
    http_seen: list[httpx2.Request] = []
    sdk = OpenAIChatProvider(config(), http_client=client_for(STREAMS[case], sdk_seen))
    http = HttpChatProvider(config(), http_client=served_client(STREAMS[case], http_seen))
    await assert_same(sdk, http, sdk_seen, http_seen)


# --- Responses -------------------------------------------------------------------------------


def named(*events: dict[str, Any]) -> bytes:
    """A Responses stream: ``event:`` lines and sequence numbers, as the API sends them."""
    return "".join(
        f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': n})}\n\n"
        for n, e in enumerate(events)
    ).encode()


def response(status: str, **extra: Any) -> dict[str, Any]:
    return {"id": "resp_9", "object": "response", "status": status, "output": [], **extra}


R_USAGE = {
    "input_tokens": 9,
    "input_tokens_details": {"cached_tokens": 4},
    "output_tokens": 3,
    "output_tokens_details": {"reasoning_tokens": 1},
    "total_tokens": 12,
}
MESSAGE = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
           "content": []}  # fmt: skip
CREATED = ({"type": "response.created", "response": response("in_progress")},
           {"type": "response.in_progress", "response": response("in_progress")})  # fmt: skip
REASONING = {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc",
             "summary": [{"type": "summary_text", "text": "First."},
                         {"type": "summary_text", "text": "Second."}]}  # fmt: skip


def fcall(item_id: str, call_id: str, name: str, arguments: str = "") -> dict[str, Any]:
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name,
            "arguments": arguments, "status": "completed"}  # fmt: skip


def text_delta(delta: str) -> dict[str, Any]:
    return {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "delta": delta}  # fmt: skip


RESPONSES: dict[str, list[Answer]] = {
    "text": [
        sse_answer(
            named(
                *CREATED,
                {"type": "response.output_item.added", "output_index": 0, "item": MESSAGE},
                *(text_delta(w) for w in ["Hel", "lo", "."]),
                {"type": "response.output_item.done", "output_index": 0, "item": MESSAGE},
                {"type": "response.completed", "response": response("completed", usage=R_USAGE)},
            )
        )
    ],
    "reasoning_and_parallel_calls": [
        sse_answer(
            named(
                *CREATED,
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {**REASONING, "summary": []},
                },
                {
                    "type": "response.reasoning_summary_part.added",
                    "item_id": "rs_1",
                    "summary_index": 0,
                },
                {
                    "type": "response.reasoning_summary_text.delta",
                    "item_id": "rs_1",
                    "summary_index": 0,
                    "delta": "First.",
                },
                {
                    "type": "response.reasoning_summary_part.added",
                    "item_id": "rs_1",
                    "summary_index": 1,
                },
                {
                    "type": "response.reasoning_summary_text.delta",
                    "item_id": "rs_1",
                    "summary_index": 1,
                    "delta": "Second.",
                },
                {"type": "response.output_item.done", "output_index": 0, "item": REASONING},
                {
                    "type": "response.output_item.added",
                    "output_index": 1,
                    "item": fcall("fc_1", "call_1", "fs_read"),
                },
                {
                    "type": "response.output_item.added",
                    "output_index": 2,
                    "item": fcall("fc_2", "call_2", "fs_list"),
                },
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": "fc_1",
                    "delta": '{"path":',
                },
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": "fc_2",
                    "delta": "{}",
                },
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": "fc_1",
                    "delta": ' "a"}',
                },
                {
                    "type": "response.output_item.done",
                    "output_index": 1,
                    "item": fcall("fc_1", "call_1", "fs_read", '{"path": "a"}'),
                },
                {
                    "type": "response.output_item.done",
                    "output_index": 2,
                    "item": fcall("fc_2", "call_2", "fs_list", "{}"),
                },
                {"type": "response.completed", "response": response("completed", usage=R_USAGE)},
            )
        )
    ],
    "refusal": [
        sse_answer(
            named(
                *CREATED,
                {"type": "response.refusal.delta", "item_id": "msg_1", "delta": "I can't."},
                {"type": "response.completed", "response": response("completed")},
            )
        )
    ],
    "incomplete_max_output_tokens": [
        sse_answer(
            named(
                *CREATED,
                text_delta("cut"),
                {
                    "type": "response.incomplete",
                    "response": response(
                        "incomplete",
                        incomplete_details={"reason": "max_output_tokens"},
                        usage=R_USAGE,
                    ),
                },
            )
        )
    ],
    "failed_retryable": [
        sse_answer(
            named(
                *CREATED,
                {
                    "type": "response.failed",
                    "response": response(
                        "failed", error={"code": "server_error", "message": "boom"}
                    ),
                },
            )
        )
    ]
    * 3,
    "failed_final": [
        sse_answer(
            named(
                *CREATED,
                {
                    "type": "response.failed",
                    "response": response(
                        "failed", error={"code": "invalid_prompt", "message": "no"}
                    ),
                },
            )
        )
    ],
    "error_event": [
        sse_answer(named({"type": "error", "code": "invalid_request_error", "message": "bad"}))
    ],
    "no_completed": [sse_answer(named(*CREATED, text_delta("a")))],
    "dropped": [dropping_answer(named(*CREATED, text_delta("par")))],
    "http_400": [status_answer(400, {"error": {"message": "bad input", "type": "invalid"}})],
    "http_503_then_ok": [
        status_answer(503, {"error": {"message": "busy"}}),
        sse_answer(
            named(
                *CREATED,
                text_delta("ok"),
                {"type": "response.completed", "response": response("completed")},
            )
        ),
    ],
}


@pytest.mark.asyncio
@pytest.mark.parametrize("case", sorted(RESPONSES))
async def test_both_responses_paths_yield_the_same(case: str) -> None:
    sdk_seen: list[httpx2.Request] = []
    http_seen: list[httpx2.Request] = []
    sdk = OpenAIResponsesProvider(config(), http_client=client_for(RESPONSES[case], sdk_seen))
    http = HttpResponsesProvider(config(), http_client=served_client(RESPONSES[case], http_seen))
    await assert_same(sdk, http, sdk_seen, http_seen)


def test_a_streamed_answer_on_the_http_path_imports_no_sdk(fake_llm: Any) -> None:
    """``openai`` and ``anthropic`` are not imported to stream a Chat Completions, a Responses
    or an Anthropic Messages answer."""
    script = f"""
import asyncio, sys
from agi_jupyter.config import ProviderSettings
from agi_jupyter.providers import ProviderRequest, create_provider
from agi_jupyter.records import ChatMessage, TextPart

url = {fake_llm.openai_base_url!r}
chat = ProviderSettings(name="compat", wire="openai-chat", base_url=url, enabled=True,
    requires_key=False, default_model=None)
responses = ProviderSettings(name="openai", wire="openai-responses", base_url=url, enabled=True,
    requires_key=True, default_model=None, api_key="sk-test")
messages = ProviderSettings(name="anthropic", wire="anthropic",
    base_url={fake_llm.anthropic_base_url!r}, enabled=True, requires_key=True, default_model=None,
    api_key="sk-test")
hi = [ChatMessage(role="user", parts=[TextPart(text="hi")])]

async def main():
    for settings in (chat, responses, messages):
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
