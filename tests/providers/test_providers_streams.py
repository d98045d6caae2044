"""Each adapter, through its real SDK, against the fake server: events, faults and retries."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest

from agi_jupyter.errors import ProviderDisconnected, ProviderHTTPError
from agi_jupyter.providers import (
    Finish,
    Provider,
    ProviderEvent,
    ProviderRequest,
    ReasoningDelta,
    ReasoningDone,
    ResponseId,
    RetryPolicy,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    Usage,
)
from agi_jupyter.records import ChatMessage, TextPart
from agi_jupyter.testing import FakeToolCall, Fault, Turn

if TYPE_CHECKING:
    from agi_jupyter.testing import FakeLLMServer

ADAPTERS = pytest.mark.parametrize("name", ["openai", "openai-chat", "anthropic"])
ADD_TOOL = ToolSpec(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


def request(text: str = "hi", **kwargs: Any) -> ProviderRequest:
    message = ChatMessage(role="user", parts=[TextPart(text=text)])
    return ProviderRequest(model="test-model", messages=[message], **kwargs)


def of_type(events: list[ProviderEvent], cls: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


async def drain(provider: Provider, req: ProviderRequest, seen: list[ProviderEvent]) -> None:
    """Collect events into ``seen`` until the stream ends or fails."""
    async for event in provider.stream(req):
        seen.append(event)


def assert_well_formed(events: list[ProviderEvent]) -> Finish:
    """Exactly one Finish, last; a response id first."""
    finishes = of_type(events, Finish)
    assert len(finishes) == 1
    finish = events[-1]
    assert finish is finishes[0]
    assert isinstance(finish, Finish)
    assert isinstance(events[0], ResponseId)
    assert events[0].id
    return finish


@pytest.mark.asyncio
@ADAPTERS
async def test_streamed_text(name, make_provider, collect, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(chunks=["Hel", "lo", ", world"], usage=(12, 3)))
    events = await collect(make_provider(name), request())
    assert [e.text for e in of_type(events, TextDelta)] == ["Hel", "lo", ", world"]
    assert assert_well_formed(events).reason == "stop"
    assert of_type(events, Usage) == [Usage(input_tokens=12, output_tokens=3)]
    assert of_type(events, ToolCallStart) == []


@pytest.mark.asyncio
@ADAPTERS
async def test_tool_call_arguments_streamed_over_chunks(
    name, make_provider, collect, fake_llm: FakeLLMServer
) -> None:
    call = FakeToolCall("add", {"a": 1, "b": 2}, id="call_add_1", chunks=4)
    fake_llm.enqueue(Turn(tool_calls=[call]))
    events = await collect(make_provider(name), request(tools=[ADD_TOOL]))
    kinds = [e.kind for e in events if e.kind.startswith("tool_call")]
    assert kinds[0] == "tool_call_start"
    assert kinds[-1] == "tool_call_end"
    assert kinds.count("tool_call_args_delta") >= 2
    (start,) = of_type(events, ToolCallStart)
    assert (start.tool_call_id, start.name, start.index) == ("call_add_1", "add", 0)
    deltas = of_type(events, ToolCallArgsDelta)
    assert {d.tool_call_id for d in deltas} == {"call_add_1"}
    (end,) = of_type(events, ToolCallEnd)
    assert end.arguments == {"a": 1, "b": 2}
    assert end.parse_error is None
    assert "".join(d.delta for d in deltas) == end.raw_arguments
    assert assert_well_formed(events).reason == "tool_calls"


@pytest.mark.asyncio
@ADAPTERS
async def test_two_tool_calls_in_one_turn(
    name, make_provider, collect, fake_llm: FakeLLMServer
) -> None:
    calls = [FakeToolCall("add", {"a": 1, "b": 2}), FakeToolCall("add", {"a": 3, "b": 4})]
    fake_llm.enqueue(Turn(text="Adding.", tool_calls=calls))
    events = await collect(make_provider(name), request(tools=[ADD_TOOL]))
    assert [s.index for s in of_type(events, ToolCallStart)] == [0, 1]
    ends = of_type(events, ToolCallEnd)
    assert [e.arguments for e in ends] == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert len({e.tool_call_id for e in ends}) == 2
    assert "".join(e.text for e in of_type(events, TextDelta)) == "Adding."


@pytest.mark.asyncio
@ADAPTERS
async def test_usage(name, make_provider, collect, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text="ok", usage=(1234, 56)))
    events = await collect(make_provider(name), request())
    (usage,) = of_type(events, Usage)
    assert (usage.input_tokens, usage.output_tokens) == (1234, 56)
    assert events[-2] is usage  # usage right before the finish


@pytest.mark.asyncio
@ADAPTERS
async def test_reasoning(name, make_provider, collect, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(reasoning="First add, then answer.", text="3"))
    events = await collect(make_provider(name), request(thinking_level="low"))
    deltas = of_type(events, ReasoningDelta)
    (done,) = of_type(events, ReasoningDone)
    assert "".join(d.text for d in deltas) == done.text == "First add, then answer."
    assert events.index(done) < events.index(of_type(events, TextDelta)[0])
    if name == "anthropic":
        assert done.signature is not None
        assert done.signature.startswith("fakesig-")
    if name == "openai":
        assert done.provider_data is not None
        assert done.provider_data["type"] == "reasoning"
        assert done.provider_data["encrypted_content"]


@pytest.mark.asyncio
@ADAPTERS
async def test_429_with_retry_after_is_retried(
    name, make_provider, collect, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(fault=Fault(status=429, headers={"retry-after-ms": "150"})), Turn(text="ok")
    )
    # backoff alone would wait 2.5-5 s; the server asks for 0.15 s
    provider = make_provider(name, retry=RetryPolicy(max_retries=2, base_delay=5, max_delay=10))
    started = time.monotonic()
    events = await collect(provider, request())
    elapsed = time.monotonic() - started
    assert len(fake_llm.requests) == 2
    assert 0.15 <= elapsed < 2.0
    assert [e.text for e in of_type(events, TextDelta)] == ["ok"]
    assert_well_formed(events)


@pytest.mark.asyncio
@ADAPTERS
async def test_500_then_success(name, make_provider, collect, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(fault=Fault(status=500)), Turn(text="recovered"))
    events = await collect(make_provider(name), request())
    assert len(fake_llm.requests) == 2
    assert "".join(e.text for e in of_type(events, TextDelta)) == "recovered"


@pytest.mark.asyncio
@ADAPTERS
async def test_retries_exhausted(name, make_provider, collect, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(*[Turn(fault=Fault(status=503)) for _ in range(3)], Turn(text="too late"))
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(make_provider(name), request())  # FAST_RETRY: 2 retries
    assert caught.value.status == 503
    assert caught.value.retryable
    assert len(fake_llm.requests) == 3


@pytest.mark.asyncio
@ADAPTERS
async def test_key_rejected(
    name, make_provider, collect, api_key: str, fake_llm: FakeLLMServer
) -> None:
    body = {"error": {"type": "authentication_error", "message": f"Incorrect API key {api_key}"}}
    fake_llm.enqueue(Turn(fault=Fault(status=401, body=body)))
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(make_provider(name), request())
    error = caught.value
    assert (error.status, error.retryable) == (401, False)
    assert "rejected the API key" in error.message
    assert "agi setup" in error.message
    assert api_key not in error.message
    assert len(fake_llm.requests) == 1


@pytest.mark.asyncio
@ADAPTERS
async def test_error_message_never_carries_the_key(
    name, make_provider, collect, api_key: str, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(fault=Fault(status=400, body={"error": {"message": f"bad {api_key}"}})))
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(make_provider(name), request())
    assert (caught.value.status, caught.value.retryable) == (400, False)
    assert api_key not in str(caught.value)
    assert "bad ***" in caught.value.message


@pytest.mark.asyncio
@ADAPTERS
async def test_drop_mid_stream(name, make_provider, collect, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text="one two three four five six", fault=Fault(drop_after=5)))
    provider = make_provider(name)
    seen: list[ProviderEvent] = []
    with pytest.raises(ProviderDisconnected):
        await drain(provider, request(), seen)
    assert seen  # the failure came after events went out ...
    assert not of_type(seen, Finish)
    assert len(fake_llm.requests) == 1  # ... so it is left to the run-level retry


@pytest.mark.asyncio
@ADAPTERS
async def test_truncated_stream(name, make_provider, collect, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text="cut short", fault=Fault(truncate=True)))
    provider = make_provider(name)
    seen: list[ProviderEvent] = []
    with pytest.raises(ProviderDisconnected):
        await drain(provider, request(), seen)
    assert "".join(e.text for e in of_type(seen, TextDelta)) == "cut short"
    assert not of_type(seen, Finish)


@pytest.mark.asyncio
@ADAPTERS
async def test_drop_before_any_event_is_retried(
    name, make_provider, collect, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="lost", fault=Fault(drop_after=0)), Turn(text="again"))
    events = await collect(make_provider(name), request())
    assert len(fake_llm.requests) == 2
    assert "".join(e.text for e in of_type(events, TextDelta)) == "again"


@pytest.mark.asyncio
@ADAPTERS
async def test_idempotency_key_header(
    name, make_provider, collect, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(fault=Fault(status=500)), Turn(text="ok"))
    await collect(make_provider(name), request(idempotency_key="run_123-attempt-1"))
    keys = [r.headers.get("idempotency-key") for r in fake_llm.requests]
    assert keys == ["run_123-attempt-1", "run_123-attempt-1"]  # the same key on a retry


@pytest.mark.asyncio
@ADAPTERS
async def test_invalid_tool_call_json(
    name, make_provider, collect, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("add", '{"a": 1, "b":', chunks=2)]))
    events = await collect(make_provider(name), request(tools=[ADD_TOOL]))
    (end,) = of_type(events, ToolCallEnd)
    assert end.arguments == {}
    assert end.raw_arguments == '{"a": 1, "b":'
    assert end.parse_error is not None
    assert "not valid JSON" in end.parse_error
    assert assert_well_formed(events).reason == "tool_calls"


@pytest.mark.asyncio
@ADAPTERS
async def test_tool_call_arguments_not_an_object(
    name, make_provider, collect, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("add", "[1, 2]", chunks=1)]))
    events = await collect(make_provider(name), request(tools=[ADD_TOOL]))
    (end,) = of_type(events, ToolCallEnd)
    assert (end.arguments, end.parse_error) == ({}, "arguments must be a JSON object, not list")


@pytest.mark.asyncio
@ADAPTERS
async def test_unreachable_server_is_a_disconnect(name, collect) -> None:
    from agi_jupyter.config import ProviderSettings
    from agi_jupyter.model_specs import KNOWN_PROVIDERS
    from agi_jupyter.providers import create_provider

    known = KNOWN_PROVIDERS[name]
    settings = ProviderSettings(
        name=name,
        wire=known.wire,
        base_url="http://127.0.0.1:9/v1",  # discard port: nothing listens
        enabled=True,
        requires_key=True,
        default_model=None,
        api_key="sk-unused-0123456789",
    )
    retry = RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.01)
    provider = create_provider(settings, retry=retry, timeout=5)
    try:
        with pytest.raises(ProviderDisconnected, match="failed or dropped"):
            await collect(provider, request())
    finally:
        await provider.aclose()


@pytest.mark.asyncio
async def test_read_timeout_is_a_disconnect(make_provider, collect, fake_llm) -> None:
    fake_llm.enqueue(Turn(text="slow", fault=Fault(delay_before_headers=1.0)))
    provider = make_provider("openai-chat", retry=RetryPolicy(max_retries=0), timeout=0.2)
    with pytest.raises(ProviderDisconnected):
        await collect(provider, request())


@pytest.mark.asyncio
async def test_echo_answer_when_nothing_is_scripted(make_provider, collect) -> None:
    events = await collect(make_provider("openai-chat"), request("ping"))
    text = "".join(e.text for e in of_type(events, TextDelta))
    assert text == "(offline fake model) echo: ping"
