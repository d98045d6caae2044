"""What each adapter sends: request bodies in each API's own shape, as the fake server saw them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from agi_jupyter.providers import ProviderRequest, ToolSpec
from agi_jupyter.records import (
    ChatMessage,
    ImagePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from agi_jupyter.testing import Turn

if TYPE_CHECKING:
    from agi_jupyter.testing import FakeLLMServer

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
TOOL = ToolSpec(name="double", description="Double a number.", parameters=SCHEMA)
OPENAI_REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Use the tool."}],
    "encrypted_content": "enc-abc",
}


def second_turn(reasoning: ReasoningPart | None = None) -> list[ChatMessage]:
    """user -> assistant (reasoning, text, two tool calls) -> two tool results -> user."""
    assistant_parts: list[Any] = [reasoning] if reasoning else []
    assistant_parts += [
        TextPart(text="Let me compute."),
        ToolCallPart(tool_call_id="call_1", name="double", arguments={"a": 2}),
        ToolCallPart(tool_call_id="call_2", name="double", arguments={"a": 5}),
    ]
    return [
        ChatMessage(role="user", parts=[TextPart(text="Double 2 and 5.")]),
        ChatMessage(role="assistant", parts=assistant_parts),
        ChatMessage(
            role="tool", parts=[ToolResultPart(tool_call_id="call_1", name="double", output="4")]
        ),
        ChatMessage(
            role="tool",
            parts=[
                ToolResultPart(tool_call_id="call_2", name="double", output="boom", is_error=True)
            ],
        ),
        ChatMessage(role="user", parts=[TextPart(text="And now?")]),
    ]


async def sent_body(
    fake_llm: FakeLLMServer, make_provider: Any, collect: Any, name: str, request: ProviderRequest
) -> dict[str, Any]:
    fake_llm.enqueue(Turn(text="done"))
    await collect(make_provider(name), request)
    (recorded,) = fake_llm.requests
    assert isinstance(recorded.body, dict)
    return recorded.body


# --- OpenAI Responses ------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_responses_body(make_provider, collect, fake_llm: FakeLLMServer) -> None:
    reasoning = ReasoningPart(text="Use the tool.", provider_data=OPENAI_REASONING)
    request = ProviderRequest(
        model="gpt-5-mini",
        system="Be brief.",
        messages=second_turn(reasoning),
        tools=[TOOL],
        thinking_level="medium",
        max_output_tokens=500,
    )
    body = await sent_body(fake_llm, make_provider, collect, "openai", request)
    (recorded,) = fake_llm.requests
    assert recorded.path == "/v1/responses"
    assert body["model"] == "gpt-5-mini"
    assert body["stream"] is True
    assert body["instructions"] == "Be brief."
    assert body["max_output_tokens"] == 500
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "double",
            "description": "Double a number.",
            "parameters": SCHEMA,
            "strict": False,
        }
    ]
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Double 2 and 5."}],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Use the tool."}],
            "encrypted_content": "enc-abc",
        },
        {"type": "message", "role": "assistant", "content": "Let me compute."},
        {"type": "function_call", "call_id": "call_1", "name": "double", "arguments": '{"a":2}'},
        {"type": "function_call", "call_id": "call_2", "name": "double", "arguments": '{"a":5}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "4"},
        {"type": "function_call_output", "call_id": "call_2", "output": "boom"},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "And now?"}],
        },
    ]


@pytest.mark.asyncio
async def test_responses_body_without_thinking(make_provider, collect, fake_llm) -> None:
    anthropic_thinking = ReasoningPart(text="hmm", signature="sig")  # not echoed to OpenAI
    request = ProviderRequest(
        model="gpt-4.1", messages=second_turn(anthropic_thinking), temperature=0.3
    )
    body = await sent_body(fake_llm, make_provider, collect, "openai", request)
    assert "reasoning" not in body
    assert "include" not in body
    assert "instructions" not in body
    assert "tools" not in body
    assert body["temperature"] == 0.3
    assert [item.get("type") for item in body["input"]].count("reasoning") == 0


# --- OpenAI Chat Completions -----------------------------------------------------------------


@pytest.mark.asyncio
async def test_chat_body(make_provider, collect, fake_llm: FakeLLMServer) -> None:
    request = ProviderRequest(
        model="gpt-5-mini",
        system="Be brief.",
        messages=second_turn(ReasoningPart(text="not sent back")),
        tools=[TOOL],
        thinking_level="high",
        max_output_tokens=500,
    )
    body = await sent_body(fake_llm, make_provider, collect, "openai-chat", request)
    (recorded,) = fake_llm.requests
    assert recorded.path == "/v1/chat/completions"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["reasoning_effort"] == "high"
    assert body["max_completion_tokens"] == 500
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "double", "description": "Double a number.", "parameters": SCHEMA},
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Double 2 and 5."},
        {
            "role": "assistant",
            "content": "Let me compute.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "double", "arguments": '{"a":2}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "double", "arguments": '{"a":5}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "4"},
        {"role": "tool", "tool_call_id": "call_2", "content": "boom"},
        {"role": "user", "content": "And now?"},
    ]


@pytest.mark.asyncio
async def test_chat_body_for_compatible_servers(make_provider, collect, fake_llm) -> None:
    """reasoning_effort is OpenAI's; other servers get max_tokens and no reasoning field."""
    request = ProviderRequest(
        model="llama3",
        messages=second_turn(),
        thinking_level="high",
        max_output_tokens=200,
        extra_body={"top_k": 20},
    )
    body = await sent_body(fake_llm, make_provider, collect, "vllm", request)
    assert "reasoning_effort" not in body
    assert body["max_tokens"] == 200
    assert "max_completion_tokens" not in body
    assert body["top_k"] == 20
    assert body["messages"][0] == {"role": "user", "content": "Double 2 and 5."}


@pytest.mark.asyncio
async def test_chat_body_with_an_image(make_provider, collect, fake_llm) -> None:
    parts: list[Any] = [
        TextPart(text="What is this?"),
        ImagePart(mime="image/png", data_base64="iVBO"),
    ]
    request = ProviderRequest(model="gpt-4o", messages=[ChatMessage(role="user", parts=parts)])
    body = await sent_body(fake_llm, make_provider, collect, "openai-chat", request)
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
            ],
        }
    ]


# --- Anthropic Messages ----------------------------------------------------------------------


@pytest.mark.asyncio
async def test_anthropic_body(make_provider, collect, fake_llm: FakeLLMServer) -> None:
    thinking = ReasoningPart(text="Use the tool.", signature="sig-123")
    request = ProviderRequest(
        model="claude-haiku-4-5",
        system="Be brief.",
        messages=second_turn(thinking),
        tools=[TOOL],
        thinking_level="low",
        max_output_tokens=1000,
    )
    body = await sent_body(fake_llm, make_provider, collect, "anthropic", request)
    (recorded,) = fake_llm.requests
    assert recorded.path == "/v1/messages"
    assert recorded.headers["anthropic-version"]
    assert body["system"] == "Be brief."
    assert body["stream"] is True
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 1000 + 2048
    assert "temperature" not in body
    assert body["tools"] == [
        {"name": "double", "description": "Double a number.", "input_schema": SCHEMA}
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Double 2 and 5."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Use the tool.", "signature": "sig-123"},
                {"type": "text", "text": "Let me compute."},
                {"type": "tool_use", "id": "call_1", "name": "double", "input": {"a": 2}},
                {"type": "tool_use", "id": "call_2", "name": "double", "input": {"a": 5}},
            ],
        },
        {
            "role": "user",  # both tool results and the next user text in one message
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "4"},
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": "boom",
                    "is_error": True,
                },
                {"type": "text", "text": "And now?"},
            ],
        },
    ]


@pytest.mark.asyncio
async def test_anthropic_body_without_thinking(make_provider, collect, fake_llm) -> None:
    redacted = ReasoningPart(text="", provider_data={"type": "redacted_thinking", "data": "xyz"})
    messages = second_turn(redacted)
    messages[1].parts.insert(1, ReasoningPart(text="openai summary"))  # no signature: dropped
    request = ProviderRequest(model="claude-haiku-4-5", messages=messages, temperature=0.5)
    body = await sent_body(fake_llm, make_provider, collect, "anthropic", request)
    assert "thinking" not in body
    assert body["max_tokens"] == 8192
    assert body["temperature"] == 0.5
    assistant = body["messages"][1]["content"]
    assert assistant[0] == {"type": "redacted_thinking", "data": "xyz"}
    assert [block["type"] for block in assistant] == [
        "redacted_thinking",
        "text",
        "tool_use",
        "tool_use",
    ]


@pytest.mark.asyncio
async def test_anthropic_adaptive_thinking_where_the_sdk_wants_it(
    make_provider, collect, fake_llm
) -> None:
    request = ProviderRequest(
        model="claude-opus-4-6", messages=second_turn()[:1], thinking_level="high"
    )
    body = await sent_body(fake_llm, make_provider, collect, "anthropic", request)  # no warning
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "high"}


@pytest.mark.asyncio
async def test_chat_sends_what_the_sdk_create_would_send(
    make_provider: Any, fake_llm: FakeLLMServer
) -> None:
    """The chat adapter skips the SDK's request transform (``OpenAIChatProvider._open``): the
    same body and headers reach the server as with ``chat.completions.create(**params)``."""
    tool = ToolSpec(
        name="double",
        description="Double a number.",
        parameters={"type": "object", "properties": {"a": {"type": "integer"}}},
    )
    parts: list[Any] = [TextPart(text="And this?"), ImagePart(mime="image/png", data_base64="iVBO")]
    request = ProviderRequest(
        model="gpt-4o",
        system="Be brief.",
        messages=[*second_turn(), ChatMessage(role="user", parts=parts)],
        tools=[tool],
        thinking_level="low",
        max_output_tokens=300,
        temperature=0.2,
        idempotency_key="run_1-1-1",
        extra_body={"seed": 7},
    )
    provider = make_provider("openai-chat", wire="sdk")
    params = provider.request_params(request)
    fake_llm.enqueue(Turn(text="a"), Turn(text="b"), Turn(text="c"))
    async with await provider._open(params):
        pass
    async with await provider.client.chat.completions.create(**params):
        pass
    [_ async for _ in make_provider("openai-chat").stream(request)]  # the HTTP path
    ours, sdk, http = fake_llm.requests
    assert ours.body == sdk.body == http.body
    assert isinstance(ours.body, dict)
    assert ours.body["seed"] == 7
    for header in ("authorization", "idempotency-key", "content-type", "user-agent"):
        assert ours.headers.get(header) == sdk.headers.get(header), header
    for header in ("authorization", "idempotency-key", "content-type", "accept"):
        assert http.headers.get(header) == sdk.headers.get(header), header
    assert ours.headers["authorization"].startswith("Bearer ")
