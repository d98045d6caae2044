"""Fixtures for the provider adapters: real SDK clients against the fake LLM server."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from agi_jupyter.config import ProviderSettings, WirePath
from agi_jupyter.model_specs import KNOWN_PROVIDERS
from agi_jupyter.providers import (
    Provider,
    ProviderEvent,
    ProviderRequest,
    RetryPolicy,
    create_provider,
)

if TYPE_CHECKING:
    from agi_jupyter.testing import FakeLLMServer

API_KEY = "sk-test-secret-0123456789abcdef"
FAST_RETRY = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.05)

MakeProvider = Callable[..., Provider]
Collect = Callable[[Provider, ProviderRequest], Awaitable[list[ProviderEvent]]]


def settings_for(
    name: str, base_url: str | None, api_key: str | None = API_KEY
) -> ProviderSettings:
    known = KNOWN_PROVIDERS[name]
    return ProviderSettings(
        name=name,
        wire=known.wire,
        base_url=base_url,
        enabled=True,
        requires_key=known.requires_key,
        default_model=known.default_model,
        api_key=api_key,
    )


def fake_base_url(server: FakeLLMServer, name: str) -> str:
    wire = KNOWN_PROVIDERS[name].wire
    return server.anthropic_base_url if wire == "anthropic" else server.openai_base_url


@pytest_asyncio.fixture
async def make_provider(fake_llm: FakeLLMServer) -> AsyncIterator[MakeProvider]:
    """``make_provider(name, retry=..., timeout=..., wire=...)``: an adapter aimed at the fake
    server, closed after the test (Chat Completions: the HTTP path unless ``wire="sdk"``)."""
    created: list[Provider] = []

    def make(
        name: str,
        *,
        retry: RetryPolicy = FAST_RETRY,
        timeout: float = 10.0,
        wire: WirePath = "http",
    ) -> Provider:
        settings = settings_for(name, fake_base_url(fake_llm, name))
        provider = create_provider(settings, retry=retry, timeout=timeout, wire=wire)
        created.append(provider)
        return provider

    yield make
    for provider in created:
        await provider.aclose()


async def _collect(provider: Provider, request: ProviderRequest) -> list[ProviderEvent]:
    return [event async for event in provider.stream(request)]


@pytest.fixture
def api_key() -> str:
    """The key every provider made by ``make_provider`` sends (it must never leak)."""
    return API_KEY


@pytest.fixture
def collect() -> Collect:
    """``await collect(provider, request)``: every event of one turn."""
    return _collect


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl, in a temporary directory)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key
