"""``H1Transport`` (providers/h1_transport.py) against servers on 127.0.0.1 that write exact
bytes: body framings, reads split anywhere, keep-alive, a connection dropped mid-body, a stream
closed or cancelled mid-body, error bodies, timeouts, TLS, and what goes to the fallbacks."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx2
import pytest

from agi_jupyter.errors import ProviderDisconnected
from agi_jupyter.providers import h1_transport
from agi_jupyter.providers.anthropic_http import AnthropicHttpProvider
from agi_jupyter.providers.base import TextDelta
from agi_jupyter.providers.h1_transport import (
    _COALESCE,
    _PROMPT_READS,
    H1Transport,
    _Connection,
    stream_client,
)
from agi_jupyter.providers.openai_chat_http import HttpChatProvider
from agi_jupyter.providers.openai_responses_http import HttpResponsesProvider
from agi_jupyter.testing import FakeLLMServer, Turn
from tests.providers.wire_common import REQUEST, config, outcome

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

PARTS = [b'data: {"a":1}\n\n', b"event: x\ndata: 2\n\n", b"\r\n\r\n"]  # CRLFs in a chunk too
CHUNKED = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    + b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in PARTS)
    + b"0\r\n\r\n"
)
CHUNKED_BODY = b"".join(PARTS)
FIRST_CHUNK = CHUNKED[: CHUNKED.index(PARTS[0]) + len(PARTS[0]) + 2]  # the head, one chunk
SIZED = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-n: 1\r\n\r\nhello"


class Server:
    """A server on 127.0.0.1 whose connections ``handler`` serves; ``connections`` counts them."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.server: asyncio.Server | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    async def start(self, ssl_context: ssl.SSLContext | None = None) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=ssl_context)
        port = self.server.sockets[0].getsockname()[1]
        return f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        try:
            await self.handler(reader, writer)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                await writer.wait_closed()

    async def stop(self) -> None:
        """Closes the listener, then waits for the connections' handlers, which end when their
        client closes (as every test's does before this)."""
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()
        if self.tasks:
            await asyncio.wait(self.tasks, timeout=10)


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One request's head and its content-length body ('' when the client closed)."""
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head + (await reader.readexactly(length) if length else b"")


def answering(*answers: bytes) -> Handler:
    """Answers the requests of each connection with ``answers`` in turn, then waits for EOF."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for answer in answers:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(answer)
            await writer.drain()
        await reader.read()

    return handle


@contextlib.asynccontextmanager
async def serving(
    handler: Handler, ssl_context: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[Server, str]]:
    server = Server(handler)
    url = await server.start(ssl_context)
    try:
        yield server, url
    finally:
        await server.stop()


@pytest.mark.asyncio
async def test_chunked_and_sized_bodies_share_one_kept_alive_connection() -> None:
    async with serving(answering(CHUNKED, SIZED, CHUNKED)) as (server, url):
        transport = H1Transport()
        async with httpx2.AsyncClient(transport=transport) as client:
            first = await client.post(url + "/a", content=b"{}")
            second = await client.get(url + "/b")
            async with client.stream("POST", url + "/c", content=b"x" * 100_000) as third:
                streamed = b"".join([part async for part in third.aiter_raw()])
        assert (first.status_code, first.content) == (200, CHUNKED_BODY)
        assert first.headers["content-type"] == "text/event-stream"
        assert (second.content, second.headers["x-n"]) == (b"hello", "1")
        assert second.extensions["http_version"] == b"HTTP/1.1"
        assert streamed == CHUNKED_BODY
        assert server.connections == 1
        assert transport.handled == 3


def feed(pieces: list[bytes]) -> _Connection:
    conn = _Connection(asyncio.new_event_loop())
    for piece in pieces:
        conn.data_received(piece)
    conn.loop.close()
    return conn


@pytest.mark.parametrize(("answer", "body"), [(CHUNKED, CHUNKED_BODY), (SIZED, b"hello")])
def test_an_answer_split_between_two_reads_anywhere_parses_the_same(
    answer: bytes, body: bytes
) -> None:
    whole = feed([answer])
    assert (whole.status, whole.complete, whole.error) == (200, True, None)
    for cut in range(1, len(answer)):  # every byte, CR and LF of the chunk framing included
        conn = feed([answer[:cut], answer[cut:]])
        assert conn.error is None, cut
        assert conn.complete, cut
        assert (conn.status, conn.headers) == (whole.status, whole.headers), cut
        assert b"".join(conn.body) == body, cut
    bytewise = feed([answer[i : i + 1] for i in range(len(answer))])
    assert (bytewise.complete, b"".join(bytewise.body)) == (True, body)


def test_a_malformed_chunk_is_a_protocol_error() -> None:
    conn = feed([CHUNKED.replace(b"\r\n12\r\n", b"\r\nzz\r\n")])
    assert isinstance(conn.error, httpx2.RemoteProtocolError)
    assert not conn.complete


@pytest.mark.asyncio
async def test_a_connection_dropped_mid_body_raises_and_the_adapter_retries_it() -> None:
    partial = FIRST_CHUNK

    async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(partial)
        await writer.drain()

    async with serving(drop) as (server, url):
        async with (
            httpx2.AsyncClient(transport=H1Transport()) as client,
            client.stream("GET", url) as response,
        ):
            with pytest.raises(httpx2.RemoteProtocolError, match="complete message body"):
                await response.aread()
        chat = HttpChatProvider(config(base_url=url + "/v1"))
        events, error = await outcome(chat, REQUEST)
        assert events == []
        assert isinstance(error, ProviderDisconnected)
        assert error.retryable
        assert server.connections == 1 + 3  # the adapter's first attempt and its two retries


def held_open(eof: asyncio.Event) -> Handler:
    """Sends a streamed answer's first chunk, then waits for the client to close."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(FIRST_CHUNK)
        await writer.drain()
        await reader.read()  # returns at the client's close
        eof.set()

    return handle


@pytest.mark.asyncio
async def test_closing_a_stream_mid_body_closes_its_connection() -> None:
    eof = asyncio.Event()
    async with serving(held_open(eof)) as (server, url):
        transport = H1Transport()
        async with httpx2.AsyncClient(transport=transport) as client:
            async with client.stream("GET", url) as response:
                async for part in response.aiter_raw():
                    assert part == b'data: {"a":1}\n\n'
                    break
            await asyncio.wait_for(eof.wait(), 10)  # the server saw the connection close
            assert not any(transport._idle.values())  # not pooled
            eof.clear()
            async with client.stream("GET", url) as response:  # a new connection
                assert response.status_code == 200
        await asyncio.wait_for(eof.wait(), 10)
        assert server.connections == 2


@pytest.mark.asyncio
async def test_cancelling_a_task_reading_a_stream_closes_its_connection() -> None:
    eof = asyncio.Event()
    first_part = asyncio.Event()
    async with (
        serving(held_open(eof)) as (_, url),
        httpx2.AsyncClient(transport=H1Transport()) as client,
    ):

        async def read() -> None:
            async with client.stream("GET", url) as response:
                async for _ in response.aiter_raw():
                    first_part.set()

        task = asyncio.create_task(read())
        await asyncio.wait_for(first_part.wait(), 10)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await asyncio.wait_for(eof.wait(), 10)


@pytest.mark.asyncio
async def test_an_error_status_body_is_read_and_the_connection_kept() -> None:
    error = b'{"error":{"message":"bad"}}'
    answer = b"HTTP/1.1 400 Bad Request\r\ncontent-length: %d\r\n\r\n%s" % (len(error), error)
    async with serving(answering(answer, SIZED)) as (server, url):
        async with httpx2.AsyncClient(transport=H1Transport()) as client:
            async with client.stream("POST", url, content=b"{}") as response:
                assert response.status_code == 400
                assert response.reason_phrase == "Bad Request"
                assert await response.aread() == error
            assert (await client.get(url)).content == b"hello"
        assert server.connections == 1


@pytest.mark.asyncio
async def test_an_idle_connection_the_server_closed_is_replaced() -> None:
    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SIZED)
        await writer.drain()  # then closes: the client's pooled connection is stale

    async with serving(once) as (server, url):
        async with httpx2.AsyncClient(transport=H1Transport()) as client:
            assert (await client.get(url)).content == b"hello"
            assert (await client.get(url)).content == b"hello"
        assert server.connections == 2


@pytest.mark.asyncio
async def test_a_silent_server_is_a_read_timeout() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await reader.read()

    async with (
        serving(silent) as (_, url),
        httpx2.AsyncClient(transport=H1Transport(), timeout=0.2) as client,
    ):
        with pytest.raises(httpx2.ReadTimeout):
            await client.get(url)


@pytest.mark.asyncio
async def test_a_refused_connection_is_a_connect_error() -> None:
    async with serving(answering()) as (_, url):
        pass  # closed: nothing listens on its port any more
    async with httpx2.AsyncClient(transport=H1Transport()) as client:
        with pytest.raises(httpx2.ConnectError):
            await client.get(url)


@pytest.mark.asyncio
async def test_head_and_chunked_uploads_go_to_the_fallback_transport() -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n"  # no body after a HEAD's answer

    async def parts() -> AsyncIterator[bytes]:
        yield b"ab"

    async def upload(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.readuntil(b"0\r\n\r\n")  # a chunked upload's last chunk
        assert b"transfer-encoding: chunked" in request.lower()
        writer.write(SIZED)
        await writer.drain()
        await reader.read()

    transport = H1Transport()
    async with serving(answering(head)) as (_, url), httpx2.AsyncClient(transport=transport) as c:
        assert (await c.head(url)).status_code == 200
    async with serving(upload) as (_, url), httpx2.AsyncClient(transport=transport) as c:
        assert (await c.post(url, content=parts())).content == b"hello"
    assert transport.handled == 0


EVENTS = [b"data: %d\n\n" % i for i in range(30)]


async def paced(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A streamed answer whose chunks come one by one, some together, some 2 ms apart: the
    transport's 1 ms rest after a read must neither lose nor reorder any."""
    await read_request(reader)
    writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
    for i, event in enumerate(EVENTS):
        writer.write(b"%x\r\n%s\r\n" % (len(event), event))
        await writer.drain()
        if i % 3 == 0:
            await asyncio.sleep(0.002)
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    await reader.read()


async def read_paced(client: httpx2.AsyncClient, url: str) -> bytes:
    async with client.stream("GET", url) as response:
        return b"".join([part async for part in response.aiter_raw()])


@pytest.mark.asyncio
async def test_a_paced_stream_arrives_whole_and_in_order() -> None:
    async with serving(paced) as (_, url), httpx2.AsyncClient(transport=H1Transport()) as client:
        assert await read_paced(client, url) == b"".join(EVENTS)


@pytest.mark.asyncio
async def test_https_verifies_the_server_certificate(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    async with serving(answering(CHUNKED, SIZED), server_context) as (server, url):
        trusting = H1Transport(verify=ssl.create_default_context(cafile=str(cert)))
        async with httpx2.AsyncClient(transport=trusting) as client:
            assert (await client.get(url)).content == CHUNKED_BODY
            assert (await client.get(url)).content == b"hello"
        assert server.connections == 1
    trusting = H1Transport(verify=ssl.create_default_context(cafile=str(cert)))
    async with (
        serving(paced, server_context) as (_, url),
        httpx2.AsyncClient(transport=trusting) as client,
    ):
        assert await read_paced(client, url) == b"".join(EVENTS)  # reads paused under TLS too
    async with (
        serving(answering(SIZED), server_context) as (_, url),
        httpx2.AsyncClient(
            transport=H1Transport()  # the system's CAs only
        ) as client,
    ):
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(url)


@pytest.mark.asyncio
async def test_a_proxy_from_the_environment_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    targets: list[bytes] = []
    stream = (
        b'data: {"choices":[{"index":0,"delta":{"content":"via proxy"},"finish_reason":null}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    answer = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s"
        % (len(stream), stream)
    )

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        targets.append((await read_request(reader)).split(b" ")[1])
        writer.write(answer)
        await writer.drain()
        await reader.read()

    for name in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    async with serving(proxy) as (_, url):
        async with stream_client(5) as direct:
            assert isinstance(direct._transport, H1Transport)
        monkeypatch.setenv("HTTP_PROXY", url)
        async with stream_client(5) as proxied:
            assert not isinstance(proxied._transport, H1Transport)
        chat = HttpChatProvider(config(base_url="http://model.test/v1"))
        events, error = await outcome(chat, REQUEST)
    assert error is None
    assert "via proxy" in repr(events)
    assert targets == [b"http://model.test/v1/chat/completions"]  # the absolute form: a proxy


@pytest.mark.asyncio
async def test_the_three_wire_adapters_stream_through_it(
    fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By default (no proxy in the environment) each wire adapter's client sends through
    ``H1Transport``, and one connection serves two answers."""
    for name in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("http_proxy", raising=False)
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    adapters = [
        HttpChatProvider(config(base_url=fake_llm.openai_base_url)),
        HttpResponsesProvider(config("openai", fake_llm.openai_base_url)),
        AnthropicHttpProvider(config("anthropic", fake_llm.anthropic_base_url)),
    ]
    for adapter in adapters:
        transport = adapter.client._transport
        assert isinstance(transport, H1Transport)
        for _ in range(2):
            fake_llm.enqueue(Turn(chunks=["a", "b", "c"]))
            events = [event async for event in adapter.stream(REQUEST)]
            assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "abc"
        assert transport.handled == 2
        assert sum(len(conns) for conns in transport._idle.values()) == 1  # kept alive
        await adapter.aclose()


@pytest.mark.asyncio
@pytest.mark.parametrize("burst", [True, False])
async def test_the_first_reads_of_a_body_are_not_held_and_later_ones_are(
    monkeypatch: pytest.MonkeyPatch, burst: bool
) -> None:
    """The first events of an answer go to the reader as they arrive (an Anthropic answer's
    first token is its fourth event or so): only reads after the first ``_PROMPT_READS`` of
    a body, in a burst (within ``_BURST`` of the read before), rest the socket for
    ``_COALESCE``. A paced stream (a real model's: each read apart from the one before) is
    never held. (``_BURST`` is set so that every read is in a burst, or none is.)"""
    monkeypatch.setattr(h1_transport, "_BURST", 3600.0 if burst else 0.0)
    head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
    events = [b"data: %d\n\n" % n for n in range(_PROMPT_READS + 2)]
    sent = asyncio.Queue[bytes]()
    for piece in [head, *(b"%x\r\n%s\r\n" % (len(e), e) for e in events), b"0\r\n\r\n"]:
        sent.put_nowait(piece)
    go = asyncio.Event()

    async def one_piece_per_go(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while not sent.empty():
            await go.wait()
            go.clear()
            writer.write(sent.get_nowait())
            await writer.drain()
        await reader.read()

    async with serving(one_piece_per_go) as (_, url):
        loop = asyncio.get_running_loop()
        port = int(url.rsplit(":", 1)[1])
        _, conn = await loop.create_connection(lambda: _Connection(loop), "127.0.0.1", port)
        held = []
        for _ in range(1 + len(events)):  # the head, then one event a read
            go.set()
            await conn.wait(10)
            held.append(conn.coalescing is not None)
            conn.take_body()
            if conn.coalescing is not None:  # as a reader would: the rest ends, reading resumes
                await asyncio.sleep(_COALESCE * 2)
        later = len(events) - _PROMPT_READS
        assert held == [False] * (1 + _PROMPT_READS) + [burst] * later
        assert conn.body_reads == len(events)
        assert conn.transport is not None
        conn.transport.close()


class Holding:
    """A keep-alive server that answers each request only when the test releases one (a token
    in ``release``), and counts the connections open at once (``peak``) and the requests it
    holds (``held``)."""

    def __init__(self) -> None:
        self.release = asyncio.Queue[None]()
        self.open = 0
        self.peak = 0
        self.held = 0

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        self.peak = max(self.peak, self.open)
        try:
            while True:
                try:
                    await read_request(reader)
                except asyncio.IncompleteReadError:
                    return
                if reader.at_eof():
                    return
                self.held += 1
                await self.release.get()
                self.held -= 1
                writer.write(SIZED)
                await writer.drain()
        finally:
            self.open -= 1


async def until(condition: Callable[[], bool], seconds: float = 10) -> None:
    """Waits (bounded) until ``condition()`` holds."""
    for _ in range(int(seconds / 0.005)):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the condition never held")


@pytest.mark.asyncio
async def test_open_connections_are_capped_and_the_waiters_reuse_them() -> None:
    """``max_connections`` N, N + k requests at once against a server that holds its answers:
    N sockets are accepted, k requests wait, and each released connection serves a waiter
    (kept alive: no new socket)."""
    cap, extra = 3, 4
    holding = Holding()
    async with serving(holding) as (server, url):
        transport = H1Transport(limits=httpx2.Limits(max_connections=cap))
        async with httpx2.AsyncClient(transport=transport, timeout=30) as client:
            requests = [asyncio.create_task(client.get(url)) for _ in range(cap + extra)]
            await until(lambda: holding.held == cap)
            assert server.connections == cap
            assert len(transport._waiters) == extra
            assert transport.open == cap
            for _ in range(cap + extra):
                holding.release.put_nowait(None)
            responses = await asyncio.wait_for(asyncio.gather(*requests), 30)
            assert [r.content for r in responses] == [b"hello"] * (cap + extra)
            assert transport.open == cap  # all idle now
        assert holding.peak == cap
        assert server.connections == cap
        assert transport.open == 0


@pytest.mark.asyncio
async def test_a_request_that_finds_no_connection_in_time_is_a_retryable_pool_timeout() -> None:
    holding = Holding()
    async with serving(holding) as (server, url):
        transport = H1Transport(limits=httpx2.Limits(max_connections=1))
        timeout = httpx2.Timeout(10, pool=0.1)
        async with httpx2.AsyncClient(transport=transport, timeout=timeout) as client:
            first = asyncio.create_task(client.get(url))  # holds the only connection
            await until(lambda: holding.held == 1)
            with pytest.raises(httpx2.PoolTimeout):
                await client.get(url)
            assert not transport._waiters
            chat = HttpChatProvider(config(base_url=url + "/v1"), http_client=client)
            events, error = await outcome(chat, REQUEST)  # closes the client: all at the end
            assert events == []
            assert isinstance(error, ProviderDisconnected)
            assert error.retryable
            assert "PoolTimeout" in str(error)
            holding.release.put_nowait(None)
            assert (await asyncio.wait_for(first, 10)).content == b"hello"
        assert server.connections == 1
        assert transport.open == 0


@pytest.mark.asyncio
async def test_a_waiter_cancelled_before_or_after_it_was_served_leaks_no_slot() -> None:
    eof = asyncio.Event()
    async with serving(held_open(eof)) as (server, url):
        transport = H1Transport(limits=httpx2.Limits(max_connections=1))
        async with httpx2.AsyncClient(transport=transport, timeout=10) as client:

            async def status() -> int:
                async with client.stream("GET", url) as response:
                    return response.status_code

            first = await client.send(client.build_request("GET", url), stream=True)
            cancelled = asyncio.create_task(status())  # waits, then is cancelled while waiting
            await until(lambda: len(transport._waiters) == 1)
            cancelled.cancel()
            with pytest.raises(asyncio.CancelledError):
                await cancelled
            assert not transport._waiters
            served = asyncio.create_task(status())  # handed the slot, cancelled before it ran
            behind = asyncio.create_task(status())
            await until(lambda: len(transport._waiters) == 2)
            await first.aclose()  # mid-body: the connection closes, its slot goes to `served`
            assert served.done() is False
            assert len(transport._waiters) == 1
            served.cancel()
            with pytest.raises(asyncio.CancelledError):
                await served
            assert await asyncio.wait_for(behind, 10) == 200  # the slot was handed on
            assert not transport._waiters
            assert transport.open == 0  # `behind` closed its stream mid-body too
        assert server.connections == 2  # `first`'s and `behind`'s


@pytest.mark.asyncio
async def test_a_body_the_server_does_not_read_is_a_write_timeout_and_its_connection_closed() -> (
    None
):
    read_now = asyncio.Event()
    closed = asyncio.Event()

    async def deaf(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_now.wait()  # reads nothing until the client timed out
        with contextlib.suppress(ConnectionError):
            while await reader.read(1 << 20):
                pass  # what the client sent before it closed, then its close
        closed.set()

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # inherited by its accepts
    listener.bind(("127.0.0.1", 0))
    server = Server(deaf)
    server.server = await asyncio.start_server(server._serve, sock=listener)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        transport = H1Transport()
        timeout = httpx2.Timeout(10, write=0.3)
        async with httpx2.AsyncClient(transport=transport, timeout=timeout) as client:
            body = b"x" * (32 << 20)  # more than the kernel buffers on both sides hold
            with pytest.raises(httpx2.WriteTimeout):
                await client.post(url, content=body)
            assert transport.open == 0
            assert not any(transport._idle.values())
            read_now.set()
            await asyncio.wait_for(closed.wait(), 10)  # the server saw the connection end
    finally:
        read_now.set()
        await server.stop()
