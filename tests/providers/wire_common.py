"""What the differential tests of the two wire paths (SDK, the reference, and HTTP) share:
answers served byte for byte through ``httpx2.MockTransport`` and the comparison of what both
paths yield, raise and send."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import httpx2

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
from agi_jupyter.records import ChatMessage, TextPart

REQUEST = ProviderRequest(
    model="m",
    messages=[ChatMessage(role="user", parts=[TextPart(text="hi")])],
    idempotency_key="run_1-1-1",
)


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


def client_for(answers: list[Answer], seen: list[httpx2.Request]) -> httpx2.AsyncClient:
    queue = list(answers)

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return queue.pop(0)()

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handle))


def config(name: str = "compat", base_url: str = "http://model.test/v1") -> AdapterConfig:
    return AdapterConfig(
        name=name,
        base_url=base_url,
        api_key="sk-wire-0123456789",
        retry=RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.001),
    )


async def outcome(
    provider: Provider, request: ProviderRequest = REQUEST
) -> tuple[list[ProviderEvent], ProviderError | None]:
    events: list[ProviderEvent] = []
    try:
        async for event in provider.stream(request):
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


OPENAI_HEADERS = ("authorization", "idempotency-key", "content-type", "accept")


async def assert_same(
    sdk: Provider,
    http: Provider,
    sdk_seen: list[httpx2.Request],
    http_seen: list[httpx2.Request],
    *,
    request: ProviderRequest = REQUEST,
    headers: tuple[str, ...] = OPENAI_HEADERS,
) -> None:
    """Both paths yield the same events or typed error, after the same requests."""
    sdk_events, sdk_error = await outcome(sdk, request)
    http_events, http_error = await outcome(http, request)
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
        for header in headers:
            assert ours.headers.get(header) == theirs.headers.get(header), header
