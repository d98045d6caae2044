"""An httpx2 transport that speaks HTTP/1.1 over an asyncio protocol parsed by ``httptools``.

Why: the wire adapters read answers of thousands of small chunks (one SSE event per chunk of
the chunked transfer encoding). httpcore2 + h11 handle each chunk as an event in Python,
~8.5 µs of CPU per chunk here, which by itself is 0.3x of the anthropic SDK's whole loop.
``httptools`` (llhttp in C, uvicorn's parser) parses the bytes of each socket read in one call;
the body chunks of one read are handed to the reader joined, so the per-chunk cost is a C
callback and a list append, and what is left per read is asyncio's (~10 µs), which resting the
socket 1 ms after a read of a body that followed the one before within 1 ms (``_COALESCE``,
not after the first few: the first token is not held) keeps to a few reads per fast stream.

What it keeps from httpx2's own transport: TLS (the same SSL context: ``SSL_CERT_FILE``/
``SSL_CERT_DIR`` or the system's certificates), keep-alive (idle connections pooled per
origin, a reused one that the server closed meanwhile is retried once on a new connection),
the connect/read/write timeouts of the request, httpx2's exception types (so the adapters'
error mapping is unchanged). Closing a response before its end closes its connection rather
than returning it to the pool. Anything it does not handle goes to a plain
``httpx2.AsyncHTTPTransport`` (``fallback``): a scheme other than http/https, ``HEAD`` and
``CONNECT``, a request body without a length (chunked upload), ``Upgrade``. With a proxy set
in the environment the adapters do not use this transport at all (``stream_client``: httpx2's
own client, which honours ``HTTPS_PROXY``/``NO_PROXY``). HTTP/2 is not spoken (httpx2's
default is HTTP/1.1 too).

The pool honours ``httpx2.Limits`` as httpcore2's does (``limits``, by default httpx2's client
default): at most ``max_connections`` connections open at once across origins (a runaway of
500 concurrent runs against one local server opens 100 sockets, not 500), at most
``max_keepalive_connections`` of them idle. A request beyond the cap waits, first come first
served, for a connection of its origin to come back idle (reused rather than a new one opened)
or for one to close (then it opens its own; a full pool closes an idle connection of another
origin to make room), up to the request's ``pool`` timeout: ``httpx2.PoolTimeout``, which the
adapters map, as every transport error, to a retryable ``ProviderDisconnected``. A waiter
cancelled or timed out after it was handed a connection or a slot hands it on.
An idle connection is reused only within ``keepalive_expiry`` seconds of its last answer
(httpx2's default: 5 s); an older one is closed instead, since a NAT or proxy may have dropped
it silently, and a request sent on it would wait for an answer that never comes. A reused
connection the server had closed is retried once on a new connection.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import urllib.request
from collections.abc import AsyncGenerator

import httptools
import httpx2

_HIGH_WATER = 1 << 20  # bytes of body buffered before the socket stops being read
# After a read of a body that came less than this after the one before (a burst), the socket
# is not read again for this long: the events a fast stream sends meanwhile arrive in one read
# and one wake of the reader, not one each (a read costs ~10 µs of asyncio's own work, more
# than parsing and mapping an event). A token the model sends later than that is read at once,
# so only events closer together wait, by at most this. A paced stream (a real model: a token
# every few ms) is never held: each of its reads would have paid a timer and two epoll calls
# (the pause and the resume) for nothing to coalesce.
_COALESCE = 0.001
_BURST = _COALESCE  # reads closer together than this are a burst
# The first reads of a body are never held: the first token of an Anthropic answer comes after
# ``message_start`` and ``content_block_start`` (and perhaps a ``ping``), each a read of its own
# when the server sends them apart; resting after those delayed it by up to _COALESCE each.
_PROMPT_READS = 4
# httpx2's own client default (``httpx2._config.DEFAULT_LIMITS``, not exported)
DEFAULT_LIMITS = httpx2.Limits(max_connections=100, max_keepalive_connections=20)
_NOT_HERE = (b"HEAD", b"CONNECT")  # a body-less answer to HEAD llhttp cannot be told about

Origin = tuple[str, str, int]
# the response extension holding the body stream itself, for ``raw_body``
BODY = "agi_jupyter.h1_body"


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: the parser's callbacks fill the current response's fields;
    the reader waits on ``waiter``, woken once per socket read."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False  # the socket is gone (or going)
        self.error: Exception | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.paused = False  # by the high-water mark
        self.coalescing: asyncio.TimerHandle | None = None  # reads paused for _COALESCE
        self.write_paused: asyncio.Future[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.timeout = 0.0  # the read timeout the timer checks
        self.last = 0.0  # loop time of the last read, or of the start of a wait
        self.idle_since = 0.0  # loop time it went back to the pool
        self.reset()

    def reset(self) -> None:
        """Ready for the next response on this connection."""
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.complete = False
        self.keep_alive = False
        self.framed = False  # a content-length or chunked body: EOF before its end is an error
        self.body: list[bytes] = []
        self.buffered = 0
        self.received = False  # any byte of this response arrived
        self.body_reads = 0  # reads that brought body bytes (the first _PROMPT_READS are not held)
        self.body_read_at = float("-inf")  # loop time of the last of them

    # --- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.received = True
        self.last = self.loop.time()
        before = self.buffered
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(httpx2.RemoteProtocolError("the server switched protocols"))
        except httptools.HttpParserError as error:
            self._fail(httpx2.RemoteProtocolError(f"invalid HTTP/1.1 answer: {error}"))
        transport = self.transport
        if transport is not None and not self.paused and self.coalescing is None:
            if self.buffered > _HIGH_WATER:
                self.paused = True
                transport.pause_reading()
            elif self.buffered > before and not self.complete and not self.closed:
                # a read of the body (not of the head only, nor one of the first few: the first
                # events are not held up), close behind the one before: a burst
                self.body_reads += 1
                previous, self.body_read_at = self.body_read_at, self.last
                if self.body_reads > _PROMPT_READS and self.last - previous < _BURST:
                    transport.pause_reading()
                    self.coalescing = self.loop.call_later(_COALESCE, self._coalesced)
        self._wake()

    def _coalesced(self) -> None:
        self.coalescing = None
        if self.transport is not None and not self.paused and not self.closed:
            self.transport.resume_reading()

    def eof_received(self) -> bool:
        return False  # close our side too; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.headers_done and not self.complete and not self.framed and self.error is None:
            self.complete = True  # a body delimited by the end of the connection
        elif not self.complete and self.error is None:
            if not self.headers_done:
                message = "Server disconnected without sending a response."
            else:
                message = "peer closed connection without sending complete message body"
            self.error = httpx2.RemoteProtocolError(message + (f" ({exc})" if exc else ""))
        if self.write_paused is not None and not self.write_paused.done():
            self.write_paused.set_result(None)
        self._wake()

    def pause_writing(self) -> None:
        self.write_paused = self.loop.create_future()

    def resume_writing(self) -> None:
        if self.write_paused is not None and not self.write_paused.done():
            self.write_paused.set_result(None)
        self.write_paused = None

    # --- httptools callbacks -----------------------------------------------------------------

    def on_status(self, status: bytes) -> None:
        self.reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        lower = name.lower()
        if lower == b"content-length" or (
            lower == b"transfer-encoding" and b"chunked" in value.lower()
        ):
            self.framed = True

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if self.status >= 200:
            self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.body.append(body)
        self.buffered += len(body)

    def on_message_complete(self) -> None:
        if self.status < 200:  # an interim answer (103 Early Hints): the real one follows
            self.reason, self.headers, self.framed = b"", [], False
            return
        # asked now: llhttp forgets the message's flags once it is ready for the next one
        self.keep_alive = self.parser.should_keep_alive()
        self.complete = True

    # --- for the transport and the body reader --------------------------------------------------

    def _fail(self, error: Exception) -> None:
        if self.error is None:
            self.error = error
        self.abort()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def wait(self, limit: float | None) -> None:
        """Until the next socket read, the end of the connection, or ``limit`` seconds without
        a byte. One timer per connection, re-armed only when it fires early: a timer per wait
        (a ``call_later`` and its cancel) was a tenth of the cost of a read."""
        waiter: asyncio.Future[None] = self.loop.create_future()
        self.waiter = waiter
        if limit is not None:
            self.last = self.loop.time()
            self.timeout = limit
            if self.timer is None:
                self.timer = self.loop.call_at(self.last + limit, self._check_timeout)
        await waiter

    def _check_timeout(self) -> None:
        self.timer = None
        waiter = self.waiter
        if waiter is None or waiter.done():
            return  # not waiting: the next wait arms the timer again
        deadline = self.last + self.timeout
        if self.loop.time() >= deadline:
            self.waiter = None
            waiter.set_exception(httpx2.ReadTimeout("timed out waiting for the server"))
        else:
            self.timer = self.loop.call_at(deadline, self._check_timeout)

    def stop_timer(self) -> None:
        """No timer left running; reading resumed (an idle connection must see its EOF)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.coalescing is not None:
            self.coalescing.cancel()
            self._coalesced()

    def take_body(self) -> bytes:
        """The body bytes buffered since the last call, joined."""
        body = self.body
        data = body[0] if len(body) == 1 else b"".join(body)
        body.clear()
        self.buffered = 0
        if self.paused and self.transport is not None:
            self.paused = False
            if self.coalescing is None:
                self.transport.resume_reading()
        return data

    def reusable(self) -> bool:
        return (
            self.complete
            and not self.closed
            and self.error is None
            and self.keep_alive
            and self.transport is not None
            and not self.transport.is_closing()
        )

    def abort(self) -> None:
        self.closed = True
        self.stop_timer()
        if self.transport is not None:
            self.transport.abort()


class _Body(httpx2.AsyncByteStream):
    """A response body read off its connection: each item is what one or more socket reads
    brought; at the end the connection goes back to the pool, or is closed if the body was
    left unread (a cancelled stream) or the server will not keep it."""

    def __init__(
        self, transport: H1Transport, origin: Origin, conn: _Connection, timeout: float | None
    ) -> None:
        self._transport = transport
        self._origin = origin
        self._conn: _Connection | None = conn
        self._timeout = timeout

    async def __aiter__(self) -> AsyncGenerator[bytes, None]:
        conn = self._conn
        if conn is None:
            raise httpx2.StreamClosed()
        try:
            while True:
                if conn.body:
                    yield conn.take_body()
                elif conn.complete:
                    break
                elif conn.error is not None:
                    raise conn.error
                else:
                    await conn.wait(self._timeout)
        finally:
            self._release()

    async def aclose(self) -> None:
        self._release()

    def _release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        conn.stop_timer()
        if conn.reusable() and not conn.body:
            self._transport.put_idle(self._origin, conn)
        else:
            self._transport.discard(conn)


class H1Transport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 with ``httptools`` for what it handles, ``fallback`` for the rest (see the
    module's docstring). ``verify``: as httpx2's (True: the default context, honouring
    ``SSL_CERT_FILE``/``SSL_CERT_DIR``; an ``ssl.SSLContext``; False: no verification).
    ``limits``: the pool's (see the module's docstring), the fallback's too."""

    def __init__(
        self,
        *,
        verify: ssl.SSLContext | bool = True,
        limits: httpx2.Limits = DEFAULT_LIMITS,
        fallback: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self._verify = verify
        self._ssl: ssl.SSLContext | None = None
        self.fallback = fallback or httpx2.AsyncHTTPTransport(verify=verify, limits=limits)
        self._max_open = limits.max_connections
        self._max_idle = limits.max_keepalive_connections
        self._expiry = limits.keepalive_expiry
        self._idle: dict[Origin, list[_Connection]] = {}
        self._idle_count = 0
        # connections open (idle, in use, or a slot granted to one being opened)
        self.open = 0
        # requests waiting for a connection, first come first served: each future gets an idle
        # connection of its origin, or None (a slot to open one)
        self._waiters: collections.deque[tuple[Origin, asyncio.Future[_Connection | None]]] = (
            collections.deque()
        )
        self.handled = 0  # requests this transport served itself (the rest: fallback)

    def applies(self, request: httpx2.Request) -> bool:
        """Whether this transport serves ``request`` itself."""
        headers = request.headers
        return (
            request.url.scheme in ("http", "https")
            and request.method.encode() not in _NOT_HERE
            and "transfer-encoding" not in headers
            and "upgrade" not in headers
            and isinstance(request.stream, httpx2.AsyncByteStream)
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        stream = request.stream
        if not self.applies(request) or not isinstance(stream, httpx2.AsyncByteStream):
            return await self.fallback.handle_async_request(request)
        self.handled += 1
        timeouts = request.extensions.get("timeout", {})
        url = request.url
        scheme = url.scheme
        origin = (scheme, url.host, url.port or (443 if scheme == "https" else 80))
        payload = _head(request) + b"".join([part async for part in stream])
        for attempt in (0, 1):
            conn = await self._acquire(origin, timeouts.get("pool"))
            reused = conn is not None
            if conn is not None:
                conn.reset()
            else:  # a slot of the pool: open a connection in it
                try:
                    conn = await self._connect(origin, timeouts.get("connect"))
                except BaseException:
                    self._free_slot()
                    raise
            try:
                await self._send(conn, payload, timeouts.get("write"))
                while not conn.headers_done:
                    if conn.error is not None:
                        raise conn.error
                    await conn.wait(timeouts.get("read"))
            except httpx2.RemoteProtocolError:
                self.discard(conn)
                if reused and not conn.received and not attempt:
                    continue  # an idle connection the server closed meanwhile: once more, fresh
                raise
            except BaseException:
                self.discard(conn)
                raise
            body = _Body(self, origin, conn, timeouts.get("read"))
            return httpx2.Response(
                conn.status,
                headers=conn.headers,
                stream=body,
                extensions={"http_version": b"HTTP/1.1", "reason_phrase": conn.reason, BODY: body},
            )
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        self._idle_count = 0
        for conns in idle.values():
            for conn in conns:
                self._drop(conn)
        await self.fallback.aclose()

    # --- the pool ------------------------------------------------------------------------

    def _take_idle(self, origin: Origin) -> _Connection | None:
        conns = self._idle.get(origin)
        loop = asyncio.get_running_loop()
        expired = None if self._expiry is None else loop.time() - self._expiry
        while conns:
            conn = conns.pop()
            self._idle_count -= 1
            fresh = expired is None or conn.idle_since >= expired
            if conn.loop is loop and fresh and conn.reusable():
                return conn
            self._drop(conn)
        return None

    def _room(self) -> bool:
        """Whether a connection may be opened (no idle one of the origin was left): under the
        cap, or at it with an idle connection of another origin, which is closed for it."""
        if self._max_open is None or self.open < self._max_open:
            return True
        for conns in self._idle.values():
            if conns:
                self._idle_count -= 1
                self._drop(conns.pop(0))  # the longest idle
                return True
        return False

    async def _acquire(self, origin: Origin, limit: float | None) -> _Connection | None:
        """An idle connection of ``origin``, or None: a slot taken to open one in."""
        if not self._waiters:  # else others wait already: in turn
            conn = self._take_idle(origin)
            if conn is not None:
                return conn
            if self._room():
                self.open += 1
                return None
        return await self._wait(origin, limit)

    async def _wait(self, origin: Origin, limit: float | None) -> _Connection | None:
        """Queue for an idle connection of ``origin`` or a slot (None), ``limit`` seconds at
        most: ``httpx2.PoolTimeout``. What a waiter is handed after it stopped waiting
        (cancelled, timed out) goes to the next."""
        waiter: asyncio.Future[_Connection | None] = asyncio.get_running_loop().create_future()
        entry = (origin, waiter)
        self._waiters.append(entry)
        self._dispatch()
        try:
            async with asyncio.timeout(limit):
                return await waiter
        except BaseException as error:
            if waiter.done() and not waiter.cancelled():
                conn = waiter.result()
                if conn is None:
                    self._free_slot()
                else:
                    self.put_idle(origin, conn)
            else:
                waiter.cancel()
                if entry in self._waiters:
                    self._waiters.remove(entry)
            if isinstance(error, TimeoutError):
                message = f"no connection free within {limit} s (max_connections={self._max_open})"
                raise httpx2.PoolTimeout(message) from error
            raise

    def _dispatch(self) -> None:
        """Hand the waiters, in turn, an idle connection of their origin or a free slot."""
        waiters = self._waiters
        while waiters:
            origin, waiter = waiters[0]
            if waiter.done():  # gone (cancelled)
                waiters.popleft()
                continue
            conn = self._take_idle(origin)
            if conn is None:
                if not self._room():
                    return
                self.open += 1
            waiters.popleft()
            waiter.set_result(conn)

    def put_idle(self, origin: Origin, conn: _Connection) -> None:
        """``conn`` is free: to a waiter of its origin, or idle (beyond
        ``max_keepalive_connections`` idle ones, closed)."""
        conn.idle_since = conn.loop.time()
        self._idle.setdefault(origin, []).append(conn)
        self._idle_count += 1
        if self._waiters:
            self._dispatch()
        if self._max_idle is not None and self._idle_count > self._max_idle:
            conns = self._idle[origin] or next(c for c in self._idle.values() if c)
            self._idle_count -= 1
            self.discard(conns.pop(0))

    def _drop(self, conn: _Connection) -> None:
        """Close ``conn`` and free its slot."""
        conn.abort()
        self.open -= 1

    def discard(self, conn: _Connection) -> None:
        """Close ``conn`` (in use, not idle) and give its slot to a waiter."""
        self._drop(conn)
        if self._waiters:
            self._dispatch()

    def _free_slot(self) -> None:
        self.open -= 1
        if self._waiters:
            self._dispatch()

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            context = httpx2.create_ssl_context(verify=self._verify)
            context.set_alpn_protocols(["http/1.1"])
            self._ssl = context
        return self._ssl

    async def _connect(self, origin: Origin, limit: float | None) -> _Connection:
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        context = self._context() if scheme == "https" else None
        try:
            async with asyncio.timeout(limit):
                _, conn = await loop.create_connection(
                    lambda: _Connection(loop),
                    host,
                    port,
                    ssl=context,
                    server_hostname=host if context is not None else None,
                )
        except TimeoutError as error:
            raise httpx2.ConnectTimeout(f"connecting to {host}:{port} timed out") from error
        except OSError as error:  # ssl.SSLError and socket.gaierror included
            raise httpx2.ConnectError(str(error) or type(error).__name__) from error
        return conn

    @staticmethod
    async def _send(conn: _Connection, payload: bytes, limit: float | None) -> None:
        if conn.transport is None or conn.closed:
            raise httpx2.RemoteProtocolError("Server disconnected without sending a response.")
        conn.transport.write(payload)
        paused = conn.write_paused
        if paused is not None and not paused.done():
            try:
                async with asyncio.timeout(limit):
                    await paused
            except TimeoutError as error:
                raise httpx2.WriteTimeout("timed out sending the request") from error


def stream_client(timeout: float | None) -> httpx2.AsyncClient:
    """The wire adapters' client: ``H1Transport`` under httpx2's client, or httpx2's own
    transport when the environment sets a proxy (``HTTPS_PROXY``, ``ALL_PROXY``, ...: httpx2
    honours those, and ``NO_PROXY``, only for a client without a transport of its own)."""
    if any(scheme in ("http", "https", "all") for scheme in urllib.request.getproxies()):
        return httpx2.AsyncClient(timeout=httpx2.Timeout(timeout), follow_redirects=True)
    return httpx2.AsyncClient(
        transport=H1Transport(), timeout=httpx2.Timeout(timeout), follow_redirects=True
    )


def _head(request: httpx2.Request) -> bytes:
    """The request line and headers, checked as h11 checks them (no CR, LF or NUL)."""
    parts = [request.method.encode("ascii"), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
    for name, value in request.headers.raw:
        parts += (name, b": ", value, b"\r\n")
    parts.append(b"\r\n")
    head = b"".join(parts)
    crlf = head.count(b"\r\n")
    if b"\0" in head or head.count(b"\n") != crlf or head.count(b"\r") != crlf:
        raise httpx2.LocalProtocolError("a header name or value holds CR, LF or NUL")
    return head


def raw_body(response: httpx2.Response) -> AsyncGenerator[bytes, None] | None:
    """The undecoded body of a response this transport served, read straight off its
    connection rather than through httpx2's iterators (two async generators a read fewer);
    None for any other response. Marks the response consumed; closing it still releases the
    connection."""
    body = response.extensions.get(BODY)
    if not isinstance(body, _Body) or response.is_stream_consumed:
        return None
    response.is_stream_consumed = True
    return body.__aiter__()
