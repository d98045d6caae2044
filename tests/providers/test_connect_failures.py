"""Connections that can never succeed fail at once; pooled connections are not kept too long.

A certificate that fails verification is the same on every attempt: each adapter (both wire
paths) fails after one connection with a message that says what to fix, instead of retrying
with backoff. A pooled connection idle for longer than ``keepalive_expiry`` is not reused: a
NAT or proxy may have dropped it without a word, and a request sent on it would wait for an
answer that never comes.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from pathlib import Path

import httpx2
import pytest

from agi_jupyter.config import ProviderSettings
from agi_jupyter.errors import ProviderDisconnected, ProviderError
from agi_jupyter.model_specs import KNOWN_PROVIDERS
from agi_jupyter.providers import create_provider
from agi_jupyter.providers._common import permanent_cause
from agi_jupyter.providers.h1_transport import H1Transport
from agi_jupyter.providers.retry import RetryPolicy
from tests.providers.test_h1_transport import SIZED, Handler, read_request, serving
from tests.providers.wire_common import REQUEST, outcome


def handshake(context: ssl.SSLContext) -> Handler:
    """Serves TLS over a plain TCP connection, so the server counts every connection attempt
    (an asyncio TLS server never hands a failed handshake to its handler)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await writer.start_tls(context)
        except (ssl.SSLError, ConnectionError):
            return
        await read_request(reader)
        writer.write(SIZED)
        await writer.drain()

    return handle


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("name", "wire"),
    [
        ("openai-chat", "http"),
        ("openai-chat", "sdk"),
        ("openai", "http"),
        ("openai", "sdk"),
        ("anthropic", "http"),
        ("anthropic", "sdk"),
    ],
)
async def test_an_untrusted_certificate_fails_at_once_without_a_retry(
    name: str, wire: str, certificate: tuple[Path, Path]
) -> None:
    cert, key = certificate
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    async with serving(handshake(context)) as (server, url):
        settings = ProviderSettings(
            name=name,
            wire=KNOWN_PROVIDERS[name].wire,
            base_url=url.replace("http://", "https://") + "/v1",
            enabled=True,
            requires_key=True,
            default_model=None,
            api_key="sk-unused-0123456789",
        )
        retry = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.01)
        provider = create_provider(settings, retry=retry, timeout=10, wire=wire)  # type: ignore[arg-type]
        try:
            events, error = await outcome(provider, REQUEST)
        finally:
            await provider.aclose()
    assert events == []
    assert isinstance(error, ProviderError)
    assert not isinstance(error, ProviderDisconnected)
    assert not error.retryable
    assert "TLS certificate failed verification" in error.message
    assert "SSL_CERT_FILE" in error.message
    assert server.connections == 1, "one attempt, not four"


def _wrapped(cause: BaseException) -> httpx2.ConnectError:
    """How httpx2 and the SDKs hand a socket-level error on: as the cause of their own."""
    try:
        raise httpx2.ConnectError("connection failed") from cause
    except httpx2.ConnectError as error:
        return error


def test_permanent_and_passing_causes() -> None:
    unknown = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert permanent_cause(_wrapped(unknown)) == "the host name cannot be resolved"
    handshake_error = ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")
    assert (permanent_cause(_wrapped(handshake_error)) or "").startswith("the TLS handshake")
    for passing in (
        socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"),
        ConnectionRefusedError(111, "Connection refused"),
        ssl.SSLEOFError(8, "EOF occurred in violation of protocol"),
        TimeoutError(),
    ):
        assert permanent_cause(_wrapped(passing)) is None, passing


def silent_after_first(counts: list[int]) -> Handler:
    """Answers the first request of a connection, then reads further requests and never
    answers them: a connection a NAT dropped looks like this to the client."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SIZED)
        await writer.drain()
        counts.append(1)
        await reader.read()

    return handle


@pytest.mark.asyncio
async def test_a_connection_idle_past_keepalive_expiry_is_not_reused() -> None:
    answered: list[int] = []
    limits = httpx2.Limits(max_connections=10, max_keepalive_connections=5, keepalive_expiry=0.2)
    async with serving(silent_after_first(answered)) as (server, url):
        transport = H1Transport(limits=limits)
        async with httpx2.AsyncClient(transport=transport, timeout=5) as client:
            assert (await client.get(url)).content == b"hello"
            await asyncio.sleep(0.4)  # the scenario itself: idle for longer than the expiry
            assert (await client.get(url)).content == b"hello"
        assert server.connections == 2
        assert answered == [1, 1]


@pytest.mark.asyncio
async def test_a_connection_within_keepalive_expiry_is_reused() -> None:
    limits = httpx2.Limits(max_connections=10, max_keepalive_connections=5, keepalive_expiry=60)
    async with serving(silent_after_first([])) as (server, url):
        transport = H1Transport(limits=limits)
        async with httpx2.AsyncClient(transport=transport, timeout=0.5) as client:
            assert (await client.get(url)).content == b"hello"
            with pytest.raises(httpx2.ReadTimeout):  # reused: this server answers once only
                await client.get(url)
        assert server.connections == 1
