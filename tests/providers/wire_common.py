"""What the differential tests of the two wire paths (SDK, the reference, and HTTP) share:
answers served byte for byte (to the SDK path through ``httpx2.MockTransport``, to the HTTP
path over a real socket through its own transport, ``served_client``) and the comparison of what
both paths yield, raise and send."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable

import h11
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
from agi_jupyter.providers.h1_transport import H1Transport
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


class ServedTransport(H1Transport):
    """The HTTP path's own transport (``H1Transport``), its requests sent over a socket to a
    local server (h11, another HTTP/1.1 implementation) that answers them with ``answers`` in
    order: a streamed 200 in chunks of one SSE event each (as the APIs send them), a dropping
    answer as its bytes and then the connection closed mid-body, any other answer with a
    content-length. What the server read is recorded in ``seen`` with the URL the client
    addressed (its ``Host`` header and target). ``connections``: how many it accepted."""

    def __init__(self, answers: list[Answer], seen: list[httpx2.Request]) -> None:
        super().__init__()
        self.answers = list(answers)
        self.seen = seen
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._port = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self._port = self._server.sockets[0].getsockname()[1]
        request.url = request.url.copy_with(scheme="http", host="127.0.0.1", port=self._port)
        return await super().handle_async_request(request)

    async def aclose(self) -> None:
        await super().aclose()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await _next_request(conn, reader)
                if request is None:
                    return
                if not await self._answer(conn, writer, *request):
                    return
                conn.start_next_cycle()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _answer(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, head: h11.Request, body: bytes
    ) -> bool:
        """Sends the next answer; False: the connection is to be closed."""
        headers = [(bytes(k), bytes(v)) for k, v in head.headers]
        host = dict(headers)[b"host"].decode()
        url = f"http://{host}{bytes(head.target).decode()}"
        method = bytes(head.method).decode()
        self.seen.append(httpx2.Request(method, url, headers=headers, content=body))
        answer = self.answers.pop(0)()
        status, raw_headers = answer.status_code, answer.headers.raw
        if isinstance(answer.stream, Dropping):
            kept = [(k, v) for k, v in raw_headers if k.lower() != b"content-length"]
            writer.write(conn.send(h11.Response(status_code=status, headers=kept)) or b"")
            writer.write(conn.send(h11.Data(data=answer.stream.data)) or b"")
            await writer.drain()
            return False
        content = await answer.aread()
        if status == 200 and b"event-stream" in answer.headers.get("content-type", "").encode():
            kept = [(k, v) for k, v in raw_headers if k.lower() != b"content-length"]
            kept.append((b"transfer-encoding", b"chunked"))
            writer.write(conn.send(h11.Response(status_code=status, headers=kept)) or b"")
            for event in re.split(rb"(?<=\n\n)|(?<=\r\n\r\n)", content):
                if event:
                    writer.write(conn.send(h11.Data(data=event)) or b"")
                    await writer.drain()
        else:
            writer.write(conn.send(h11.Response(status_code=status, headers=raw_headers)) or b"")
            writer.write(conn.send(h11.Data(data=content)) or b"")
        writer.write(conn.send(h11.EndOfMessage()) or b"")
        await writer.drain()
        return True


async def _next_request(
    conn: h11.Connection, reader: asyncio.StreamReader
) -> tuple[h11.Request, bytes] | None:
    """The next request on the connection, with its body; None when the client closed it."""
    head: h11.Request | None = None
    body = b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(65536))
        elif isinstance(event, h11.Request):
            head = event
        elif isinstance(event, h11.Data):
            body += bytes(event.data)
        elif isinstance(event, h11.EndOfMessage) and head is not None:
            return head, body
        else:  # ConnectionClosed (the client closed the connection), or what cannot follow
            return None


def served_client(answers: list[Answer], seen: list[httpx2.Request]) -> httpx2.AsyncClient:
    """A client for the HTTP path: ``answers`` over a socket, through its own transport."""
    return httpx2.AsyncClient(transport=ServedTransport(answers, seen))


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
