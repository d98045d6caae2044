"""How much an adapter adds on top of its SDK's own stream loop.

For each adapter (OpenAI Responses, OpenAI Chat Completions, Anthropic Messages), stream a turn of
N text chunks (default 20,000) from the fake LLM server, running in its own process, once through
the raw SDK loop and once through the adapter (request mapping, retry wrapper, event mapping),
alternating, several times, and report the medians: wall-clock and CPU time (of this process,
so the server's work is not counted), the ratios adapter/raw (goal <= 1.05x) and the difference
in time to the first event (of those turns, and of 21 short turns, where the fake server's own
work of building a 20,000-event stream does not hide it).

    .venv/bin/python benchmarks/provider_overhead.py [--chunks 20000] [--repeat 7]
        [--adapter NAME ...] [--noise] [--replay] [--wire sdk|http] [--floor]
        [--transport h1|httpx]

``--wire http`` (the default) measures the adapters that read the wire with httpx2 + orjson
(``openai_chat_http``, ``openai_responses_http``, ``anthropic_http``; the goal there is <= 0.3x
the raw SDK loop, issue 20); ``--wire sdk`` the SDK adapters. The raw loop is always the
SDK's. ``--noise`` runs the raw loop on both sides (an A/A run: the noise floor of this
machine); ``--floor`` puts on the adapter side the answer's bytes read and nothing else (no SSE,
JSON or mapping: what any reader built on that HTTP client pays); ``--transport`` picks the
adapter side's HTTP/1.1 transport under httpx2: ``h1`` (the default, as the adapters have it:
``providers/h1_transport.py``, httptools) or ``httpx`` (httpx2's own, httpcore2 + h11);
``--replay`` records one real answer, then
replays it from memory through ``httpx2.MockTransport`` for both paths, which takes the socket
and the server process out of the measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import orjson

from agi_jupyter.config import ProviderSettings, WirePath
from agi_jupyter.model_specs import KNOWN_PROVIDERS
from agi_jupyter.providers import (
    AdapterConfig,
    ProviderRequest,
    RetryPolicy,
    TextDelta,
    create_provider,
)
from agi_jupyter.providers.anthropic_http import AnthropicHttpProvider
from agi_jupyter.providers.anthropic_messages import AnthropicProvider
from agi_jupyter.providers.openai_chat import OpenAIChatProvider
from agi_jupyter.providers.openai_chat_http import HttpChatProvider
from agi_jupyter.providers.openai_http import HttpAdapter, body_chunks
from agi_jupyter.providers.openai_responses import OpenAIResponsesProvider
from agi_jupyter.providers.openai_responses_http import HttpResponsesProvider
from agi_jupyter.records import ChatMessage, TextPart
from agi_jupyter.testing import FakeLLMClient, Turn

ADAPTERS = ("openai", "openai-chat", "anthropic")
MESSAGES = [ChatMessage(role="user", parts=[TextPart(text="Count to a large number.")])]
SHORT_TURN = 20  # chunks of the turns that measure the time to the first event
Adapter = OpenAIResponsesProvider | OpenAIChatProvider | AnthropicProvider | HttpAdapter
SdkAdapter = OpenAIResponsesProvider | OpenAIChatProvider | AnthropicProvider


@dataclass
class Timing:
    total: list[float] = field(default_factory=list)  # wall clock
    cpu: list[float] = field(default_factory=list)  # this process's CPU time
    first: list[float] = field(default_factory=list)  # wall clock to the first item

    def add(self, first: float, total: float, cpu: float) -> None:
        self.first.append(first)
        self.total.append(total)
        self.cpu.append(cpu)


async def timed(
    events: AsyncIterator[Any], count: Callable[[Any], int]
) -> tuple[float, float, float, int]:
    """(seconds to the first item, seconds in all, CPU seconds, text chunks seen)."""
    cpu_started = time.process_time()
    started = time.perf_counter()
    first = 0.0
    chunks = 0
    async for item in events:
        if not first:
            first = time.perf_counter() - started
        chunks += count(item)
    return first, time.perf_counter() - started, time.process_time() - cpu_started, chunks


# --- the raw SDK loops: the same request, the least work that still reads every text delta ---


async def raw_chat(provider: Any, params: dict[str, Any]) -> AsyncIterator[Any]:
    async for chunk in await provider.client.chat.completions.create(**params):
        yield chunk


async def raw_responses(provider: Any, params: dict[str, Any]) -> AsyncIterator[Any]:
    async for event in await provider.client.responses.create(**params):
        yield event


async def raw_anthropic(provider: Any, params: dict[str, Any]) -> AsyncIterator[Any]:
    async for event in await provider.client.messages.create(**params):
        yield event


def count_chat(chunk: Any) -> int:
    return 1 if chunk.choices and chunk.choices[0].delta.content else 0


def count_responses(event: Any) -> int:
    return 1 if event.type == "response.output_text.delta" and event.delta else 0


def count_anthropic(event: Any) -> int:
    return 1 if event.type == "content_block_delta" and event.delta.type == "text_delta" else 0


def count_adapter(event: Any) -> int:
    return 1 if isinstance(event, TextDelta) else 0


async def body_reads(provider: HttpAdapter, request: ProviderRequest) -> AsyncIterator[bytes]:
    """The adapter's request, its answer's bytes read as the adapter reads them and nothing else
    (no SSE, no JSON, no mapping): the floor of any reader on that client (``--floor``)."""
    params = provider.request_params(request)
    headers = {**provider._headers, **params.pop("extra_headers", {})}
    content = orjson.dumps({**params, **params.pop("extra_body", {})})
    async with provider.client.stream("POST", provider._url, content=content, headers=headers) as r:
        async for chunk in body_chunks(r):
            yield chunk


RawLoop = Callable[[Any, dict[str, Any]], AsyncIterator[Any]]
RAW: dict[str, tuple[RawLoop, Callable[[Any], int]]] = {
    "openai": (raw_responses, count_responses),
    "openai-chat": (raw_chat, count_chat),
    "anthropic": (raw_anthropic, count_anthropic),
}


# --- the run ---------------------------------------------------------------------------------


def start_server() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "agi_jupyter.testing.fake_llm", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("FAKE_LLM_URL="):
        process.terminate()
        raise SystemExit(f"the fake server did not start: {line!r}")
    return process, line.partition("=")[2]


def make_provider(name: str, url: str, wire: WirePath = "sdk", transport: str = "h1") -> Adapter:
    known = KNOWN_PROVIDERS[name]
    base_url = url if known.wire == "anthropic" else url + "/v1"
    settings = ProviderSettings(
        name=name,
        wire=known.wire,
        base_url=base_url,
        enabled=True,
        requires_key=True,
        default_model=None,
        api_key="sk-bench",
    )
    provider = create_provider(settings, retry=RetryPolicy(max_retries=0), timeout=120, wire=wire)
    assert isinstance(provider, SdkAdapter | HttpAdapter)
    if isinstance(provider, HttpAdapter) and transport == "httpx":  # httpx2's own transport
        provider.client = httpx2.AsyncClient(timeout=httpx2.Timeout(120), follow_redirects=True)
    return provider


async def bench_adapter(
    raw_provider: Adapter,
    provider: Adapter,
    enqueue: Callable[[Turn], None],
    chunks: int,
    rounds: int,
    noise: bool = False,
    floor: bool = False,
) -> tuple[Timing, Timing]:
    """Raw and adapter timings of ``rounds`` alternating turns of ``chunks`` text chunks; with
    ``noise``, the raw loop on both sides (an A/A run: how far apart two identical runs land
    on this machine); with ``floor``, the answer read by httpx2 alone on the adapter side."""
    raw_loop, raw_count = RAW[provider.name]
    turn = Turn(chunks=["tok "] * chunks, usage=(10, chunks))
    request = ProviderRequest(model="bench", messages=MESSAGES)
    params = provider.request_params(request)
    raw, adapter = Timing(), Timing()
    for round_ in range(rounds + 1):  # round 0 warms up both paths
        order = ("raw", "adapter") if round_ % 2 else ("adapter", "raw")
        for which in order:
            enqueue(turn)
            if which == "raw" or noise:
                first, total, cpu, seen = await timed(raw_loop(raw_provider, params), raw_count)
            elif floor:
                assert isinstance(provider, HttpAdapter)
                first, total, cpu, _ = await timed(body_reads(provider, request), len)
                seen = chunks
            else:
                first, total, cpu, seen = await timed(provider.stream(request), count_adapter)
            assert seen == chunks, (provider.name, which, seen)
            if round_:
                (raw if which == "raw" else adapter).add(first, total, cpu)
    return raw, adapter


def report(name: str, raw: Timing, adapter: Timing, chunks: int, goal: float = 1.05) -> str:
    med = statistics.median
    wall = med(adapter.total) / med(raw.total)
    cpu = med(adapter.cpu) / med(raw.cpu)
    per_chunk = (med(adapter.cpu) - med(raw.cpu)) / chunks * 1e6
    first = (med(adapter.first) - med(raw.first)) * 1000
    verdict = "ok" if cpu <= goal else f"MISSES {goal}x"
    return (
        f"{name:<12} wall: raw {med(raw.total) * 1000:7.1f} ms, adapter "
        f"{med(adapter.total) * 1000:7.1f} ms, {wall:5.3f}x | CPU: raw {med(raw.cpu) * 1000:7.1f} "
        f"ms, adapter {med(adapter.cpu) * 1000:7.1f} ms, {cpu:5.3f}x ({per_chunk:+.2f} us/chunk, "
        f"{verdict}) | first event: raw {med(raw.first) * 1000:5.1f} ms, {first:+.2f} ms"
    )


def report_first(raw: Timing, adapter: Timing, chunks: int) -> str:
    med = statistics.median
    first = (med(adapter.first) - med(raw.first)) * 1000
    return (
        f"{'':<12} first event of a {chunks}-chunk turn: raw {med(raw.first) * 1000:5.2f} ms, "
        f"adapter {med(adapter.first) * 1000:5.2f} ms ({first:+.2f} ms)"
    )


# --- replay: the same recorded stream from memory, without a socket --------------------------


class Recording(httpx2.AsyncBaseTransport):
    """Forwards to the network and keeps the last response's headers and body."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.headers: list[tuple[bytes, bytes]] = []
        self.body = b""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        self.body = await response.aread()
        self.headers = [
            (k, v) for k, v in response.headers.raw if k.lower() != b"transfer-encoding"
        ]
        return httpx2.Response(response.status_code, headers=self.headers, content=self.body)

    async def aclose(self) -> None:
        await self.inner.aclose()


def adapter_with(
    name: str, url: str, transport: httpx2.AsyncBaseTransport, wire: WirePath = "sdk"
) -> Adapter:
    known = KNOWN_PROVIDERS[name]
    config = AdapterConfig(
        name=name,
        base_url=url if known.wire == "anthropic" else url + "/v1",
        api_key="sk-bench",
        retry=RetryPolicy(max_retries=0),
        timeout=120,
    )
    client = httpx2.AsyncClient(transport=transport)
    if known.wire == "anthropic" and wire == "http":
        return AnthropicHttpProvider(config, http_client=client)
    if known.wire == "anthropic":
        return AnthropicProvider(config, http_client=client)
    if known.wire == "openai-responses" and wire == "http":
        return HttpResponsesProvider(config, http_client=client)
    if known.wire == "openai-responses":
        return OpenAIResponsesProvider(config, http_client=client)
    if wire == "http":
        return HttpChatProvider(config, http_client=client)
    return OpenAIChatProvider(config, http_client=client)


async def replay_provider(
    name: str, url: str, fake: FakeLLMClient, chunks: int, wire: WirePath = "sdk"
) -> Adapter:
    """An adapter whose every request gets the recorded answer of one real turn."""
    recording = Recording()
    recorder = adapter_with(name, url, recording)
    fake.enqueue(Turn(chunks=["tok "] * chunks, usage=(10, chunks)))
    raw_loop, raw_count = RAW[name]
    params = recorder.request_params(ProviderRequest(model="bench", messages=MESSAGES))
    await timed(raw_loop(recorder, params), raw_count)
    await recorder.aclose()
    headers, body = recording.headers, recording.body

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers=headers, content=body)

    return adapter_with(name, url, httpx2.MockTransport(answer), wire)


def no_enqueue(turn: Turn) -> None:
    """Replayed answers need no scripting."""


async def main(
    chunks: int,
    repeat: int,
    adapters: list[str],
    noise: bool = False,
    replay: bool = False,
    wire: WirePath = "http",
    floor: bool = False,
    transport: str = "h1",
) -> None:
    process, url = start_server()
    fake = FakeLLMClient(url, timeout=60)
    try:
        mode = "A/A noise floor: raw loop on both sides" if noise else "adapter vs raw SDK loop"
        if floor:
            mode = "the body's bytes read alone vs raw SDK loop"
        source = "replayed from memory" if replay else f"fake server at {url}"
        print(
            f"{chunks} chunks per turn, {repeat} rounds (medians), {mode}, {source}, "
            f"wire {wire}, transport {transport}"
        )
        for name in adapters:
            if replay:
                raw_provider = await replay_provider(name, url, fake, chunks)
                provider = await replay_provider(name, url, fake, chunks, wire)
                enqueue: Callable[[Turn], None] = no_enqueue
            else:
                raw_provider, enqueue = make_provider(name, url), fake.enqueue
                provider = make_provider(name, url, wire, transport)
            try:
                args = (raw_provider, provider, enqueue)
                raw, adapter = await bench_adapter(*args, chunks, repeat, noise, floor)
                goal = 0.3 if isinstance(provider, HttpAdapter) and not noise else 1.05
                print(report(name, raw, adapter, chunks, goal), flush=True)
                if not replay and not floor:
                    raw, adapter = await bench_adapter(*args, SHORT_TURN, 21, noise)
                    print(report_first(raw, adapter, SHORT_TURN), flush=True)
            finally:
                await provider.aclose()
                await raw_provider.aclose()
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--adapter", action="append", choices=ADAPTERS)
    parser.add_argument("--noise", action="store_true", help="A/A run: raw loop against itself")
    parser.add_argument(
        "--replay", action="store_true", help="replay one recorded stream from memory (no socket)"
    )
    parser.add_argument(
        "--wire", choices=["http", "sdk"], default="http", help="how the adapters read the stream"
    )
    parser.add_argument(
        "--floor", action="store_true", help="the adapter side reads the body with httpx2 only"
    )
    parser.add_argument(
        "--transport",
        choices=["h1", "httpx"],
        default="h1",
        help="the adapter side's HTTP/1.1 transport (h1: the adapters' default, httptools)",
    )
    args = parser.parse_args()
    adapters = args.adapter or list(ADAPTERS)
    run = main(
        args.chunks,
        args.repeat,
        adapters,
        args.noise,
        args.replay,
        args.wire,
        args.floor,
        args.transport,
    )
    asyncio.run(run)
