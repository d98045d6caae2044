"""CPU per streamed token, as a real model streams: one token per read (issue 31, item 5).

The figures of ``runtime_overhead.py`` come from a fake that sends a 20,000-chunk answer in one
burst: the transport then reads many events per socket read and the per-read costs (a poll, a
``recv``, a wake-up of each consumer) are shared by hundreds of tokens. A real model sends one
token every few milliseconds, so every token pays them. This measures, in one process, the CPU
(this process's, all threads; the server is another process) per streamed token of:

- ``raw``: the raw ``openai`` SDK loop (``AsyncOpenAI().chat.completions.create(stream=True)``,
  one client on one event loop kept across rounds), the reference;
- ``agi``: ``Agi.stream`` on the ``compat`` provider (runner, emitter, store thread with
  ``persist_deltas``, bus, the follower's thread), a new session per answer made before the clock;
- ``floor``: the same stream's lines read by httpx2 alone (``aiter_lines``, no JSON): what any
  reader on httpx2's own transport pays;
- ``noise`` (with ``--noise``): the raw loop again, an A/A figure.

The sides run interleaved (the order rotates every round), round 0 warms up, figures are the
medians over rounds of CPU microseconds per text chunk received and of each round's ratio to
the raw side. Sources (``--source``, repeatable):

- ``llama``: a real llama.cpp ``llama-server`` (``scripts/llama_server.sh`` builds it) serving
  SmolLM2-135M-Instruct greedily, asked to count (``--tokens`` is ``max_tokens``);
- ``paced``: the fake LLM server (its own process) sending ``--tokens`` chunks ``--pace``
  seconds apart (default 8.7 ms: SmolLM2's ~115 tokens/s here), one event per read;
- ``burst``: the fake sending them all at once (the old figure's setting).

Compile the bytecode of both sides first (the environment sets ``PYTHONDONTWRITEBYTECODE``):

    .venv/bin/python -m compileall -q agi_jupyter benchmarks tests \
        .venv/lib/python3.11/site-packages
    .venv/bin/python benchmarks/paced_stream.py --source llama --source paced --source burst
    .venv/bin/python benchmarks/paced_stream.py --source paced --noise
    .venv/bin/python benchmarks/paced_stream.py --source llama --profile 5   # where it goes
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from runtime_overhead import start_server  # noqa: E402

from agi_jupyter.app import Agi  # noqa: E402
from agi_jupyter.testing import FakeLLMClient, Fault, Turn  # noqa: E402

PROMPT = "Count from 1 to 1000, one number per line."
_TEXT = '"content":"'  # a chunk with text (not null, not absent)
SMOLLM2_PACE = 0.0087  # seconds per token of SmolLM2-135M Q4_1 on 2 threads here (~115 tokens/s)


class Source:
    """Where the stream comes from: ``before_request()`` is called before each request."""

    def __init__(self, name: str, base_url: str, before_request: Callable[[], None]) -> None:
        self.name = name
        self.base_url = base_url
        self.before_request = before_request


class Raw:
    """The raw SDK loop and the httpx2 floor, each on one client and one event loop."""

    def __init__(self, base_url: str, tokens: int) -> None:
        import httpx2
        import openai

        self.loop = asyncio.new_event_loop()
        self.sdk = openai.AsyncOpenAI(api_key="sk-bench", base_url=base_url, max_retries=0)
        self.http = httpx2.AsyncClient(timeout=120)
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.body: dict[str, Any] = {
            "model": "smollm2",
            "messages": [{"role": "user", "content": PROMPT}],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": tokens,
        }

    async def _sdk(self) -> int:
        texts = 0
        stream = await self.sdk.chat.completions.create(**self.body)
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                texts += 1
        return texts

    async def _lines(self) -> int:
        texts = 0
        async with self.http.stream("POST", self.url, json=self.body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:") and _TEXT in line.replace(" ", ""):
                    texts += 1
        return texts

    def sdk_stream(self) -> int:
        return self.loop.run_until_complete(self._sdk())

    def floor_stream(self) -> int:
        return self.loop.run_until_complete(self._lines())

    def close(self) -> None:
        self.loop.run_until_complete(self.sdk.close())
        self.loop.run_until_complete(self.http.aclose())
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()


def agi_stream(agi: Agi, session_id: str) -> str:
    """One answer through ``Agi.stream``: its run id (its deltas are coalesced per loop turn,
    so the tokens are counted from the run's usage, after the clock)."""
    run_id = ""
    for event in agi.stream(PROMPT, session=session_id):
        run_id = event["run_id"]
    return run_id


def measured(fn: Callable[[], int | str], agi: Agi) -> tuple[float, int]:
    """(this process's CPU seconds, tokens received) of one answer."""
    cpu = time.process_time()
    got = fn()
    took = time.process_time() - cpu
    return took, (agi.run(got).usage.get("output_tokens") or 0) if isinstance(got, str) else got


@contextmanager
def sources(names: list[str], tokens: int, pace: float) -> Iterator[list[Source]]:
    made: list[Source] = []
    stops: list[Callable[[], None]] = []
    try:
        if "llama" in names:
            from tests.realserver.llama_server import LlamaServer

            server = LlamaServer(threads=2)
            server.start()
            stops.append(server.stop)
            made.append(Source("llama", server.base_url, lambda: None))
        fakes = [n for n in names if n in ("paced", "burst")]
        if fakes:
            process, url = start_server()

            def stop_fake() -> None:
                process.terminate()
                process.wait(10)
                if process.stdout is not None:
                    process.stdout.close()

            stops.append(stop_fake)
            fake = FakeLLMClient(url, timeout=60)
            for name in fakes:
                fault = Fault(stall_between_events=pace) if name == "paced" else None
                turn = Turn(
                    chunks=[f"{i}\n" for i in range(tokens)], usage=(20, tokens), fault=fault
                )
                made.append(Source(name, url + "/v1", partial(fake.enqueue, turn)))
        yield made
    finally:
        for stop in reversed(stops):
            stop()


def compare(source: Source, args: argparse.Namespace) -> None:
    raw = Raw(source.base_url, args.tokens)
    env = {"HOME": tempfile.mkdtemp(), "AGI_REVIEW_MODE": "auto"}
    config = {
        "providers": {"compat": {"base_url": source.base_url}},
        "models": {"compat:smollm2": {"max_output_tokens": args.tokens}},
    }
    if args.persist_deltas is not None:
        env["AGI_PERSIST_DELTAS"] = "1" if args.persist_deltas == "on" else "0"
    sides = ["raw", "agi", "floor"] + (["noise"] if args.noise else [])
    results: dict[str, list[tuple[float, int]]] = {side: [] for side in sides}
    try:
        with tempfile.TemporaryDirectory() as project, Agi(project, env=env, config=config) as agi:
            for round_ in range(args.repeat + 1):  # round 0 warms every side up
                shift = round_ % len(sides)
                for side in sides[shift:] + sides[:shift]:
                    session_id = agi.new_session(agent="general", model="compat:smollm2").id
                    source.before_request()
                    run: Callable[[], int | str] = (
                        partial(agi_stream, agi, session_id)
                        if side == "agi"
                        else raw.floor_stream
                        if side == "floor"
                        else raw.sdk_stream
                    )
                    took = measured(run, agi)
                    if round_:
                        results[side].append(took)
    finally:
        raw.close()
    report(source.name, results)


def report(name: str, results: dict[str, list[tuple[float, int]]]) -> None:
    raw = results["raw"]
    chunks = statistics.median(t for _, t in raw)
    print(f"\n{name}: {len(raw)} rounds, ~{chunks:.0f} tokens per answer (median)")
    print(f"{'side':<8} {'CPU/answer':>11} {'us/token':>9} {'ratio (median of rounds)':>26}")
    for side, runs in results.items():
        per_chunk = statistics.median(cpu / max(texts, 1) * 1e6 for cpu, texts in runs)
        cpu = statistics.median(c for c, _ in runs)
        ratios = sorted(
            (c / max(t, 1)) / (rc / max(rt, 1)) for (c, t), (rc, rt) in zip(runs, raw, strict=True)
        )
        print(
            f"{side:<8} {cpu * 1000:>8.1f} ms {per_chunk:>9.1f} "
            f"{statistics.median(ratios):>10.3f}x ({ratios[0]:.3f}-{ratios[-1]:.3f}x)"
        )


def profile(source: Source, args: argparse.Namespace) -> None:
    """``Agi.stream`` alone, ``--profile`` answers, every thread under cProfile (threads started
    after this point each get a profiler of their own: the runtime loop, the store thread, the
    follower's), timed by each thread's CPU clock (waiting is not counted); prints the
    functions by own time. The other threads' profiles include one warm-up answer and the
    imports of the first one."""
    profilers: list[cProfile.Profile] = []
    lock = threading.Lock()

    def start_in_thread(*_: object) -> None:
        profiler = cProfile.Profile(time.thread_time)  # CPU, not the waits
        with lock:
            profilers.append(profiler)
        profiler.enable()  # replaces this hook for the thread

    env = {"HOME": tempfile.mkdtemp(), "AGI_REVIEW_MODE": "auto"}
    config = {
        "providers": {"compat": {"base_url": source.base_url}},
        "models": {"compat:smollm2": {"max_output_tokens": args.tokens}},
    }
    with tempfile.TemporaryDirectory() as project:
        threading.setprofile(start_in_thread)
        main = cProfile.Profile(time.thread_time)
        profilers.append(main)
        texts = 0
        try:
            with Agi(project, env=env, config=config) as agi:
                sessions = [
                    agi.new_session(agent="general", model="compat:smollm2").id
                    for _ in range(args.profile + 1)
                ]
                source.before_request()
                agi_stream(agi, sessions[0])  # warm-up, not profiled in the main thread
                main.enable()
                runs = []
                for session_id in sessions[1:]:
                    source.before_request()
                    runs.append(agi_stream(agi, session_id))
                main.disable()
                texts = sum(agi.run(r).usage.get("output_tokens") or 0 for r in runs)
        finally:
            threading.setprofile(None)
    for profiler in profilers:
        profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(*profilers, stream=out)
    stats.sort_stats("tottime").print_stats(args.top)
    print(f"{source.name}: {args.profile} answers, {texts} tokens (all threads)")
    print(out.getvalue())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--source", action="append", choices=["llama", "paced", "burst"], default=None
    )
    parser.add_argument("--tokens", type=int, default=400, help="max_tokens / the fake's chunks")
    parser.add_argument("--pace", type=float, default=SMOLLM2_PACE, help="paced fake: s/chunk")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--noise", action="store_true", help="the raw loop twice (A/A)")
    parser.add_argument("--persist-deltas", choices=["on", "off"], default=None)
    parser.add_argument("--profile", type=int, default=0, help="profile N answers of Agi.stream")
    parser.add_argument("--top", type=int, default=30, help="lines of the profile")
    args = parser.parse_args(argv)
    with sources(args.source or ["paced"], args.tokens, args.pace) as made:
        for source in made:
            if args.profile:
                profile(source, args)
            else:
                compare(source, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
