"""CPU per streamed token, as a real model streams: one token per read (issue 31, item 5).

The figures of ``runtime_overhead.py`` come from a fake that sends a 20,000-chunk answer in one
burst: the transport then reads many events per socket read and the per-read costs (a poll, a
``recv``, a wake-up of each consumer) are shared by hundreds of tokens. A real model sends one
token every few milliseconds, so every token pays them. This measures, in one process, the CPU
(this process's, all threads; the server is another process) per streamed token of:

- ``raw``: the raw ``openai`` SDK loop (``AsyncOpenAI().chat.completions.create(stream=True)``,
  one client on one event loop kept across rounds), the reference. It sends the request
  ``Agi.stream`` sends (recorded once by the fake server: the agent's system prompt, the
  messages, ``temperature: 0``, ``max_tokens``), so both sides read the same answer: the report
  prints both sides' token counts and in how many rounds their texts were the same;
- ``agi``: ``Agi.stream`` on the ``compat`` provider (runner, emitter, store thread with
  ``persist_deltas``, bus, the follower's thread), a new session per answer made before the clock;
- ``floor``: the same stream's lines read by httpx2 alone (``aiter_lines``, no JSON): what any
  reader on httpx2's own transport pays;
- ``noise`` (with ``--noise``): the raw loop again, an A/A figure.

The sides run interleaved (the order rotates every round), round 0 warms up, figures are the
medians over rounds of CPU microseconds per text chunk received and of each round's ratio to
the raw side. Sources (``--source``, repeatable):

- ``llama``: a real llama.cpp ``llama-server`` (``scripts/llama_server.sh`` builds it) serving
  SmolLM2-135M-Instruct greedily on ``--threads`` threads (``--tokens`` is ``max_tokens``);
- ``llama-cpp-python``: llama-cpp-python's server, the same way (it streams no usage: its
  tokens are the raw side's text chunks, for ``Agi.stream`` too when the text is the same);
- ``paced``: the fake LLM server (its own process) sending ``--tokens`` chunks ``--pace``
  seconds apart (default 8.7 ms: SmolLM2's ~115 tokens/s here), one event per read;
- ``burst``: the fake sending them all at once (the old figure's setting).

Compile the bytecode of both sides first (the environment sets ``PYTHONDONTWRITEBYTECODE``):

    .venv/bin/python -m compileall -q agi_jupyter benchmarks tests \
        .venv/lib/python3.11/site-packages
    .venv/bin/python benchmarks/paced_stream.py --source paced --source burst --noise
    .venv/bin/python benchmarks/paced_stream.py --source llama --source llama-cpp-python \
        --tokens 100 --repeat 3 --noise
    .venv/bin/python benchmarks/paced_stream.py --source llama --tokens 100 --profile 2
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
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from runtime_overhead import start_server  # noqa: E402

from agi_jupyter.app import Agi  # noqa: E402
from agi_jupyter.testing import FakeLLMClient, Fault, Turn  # noqa: E402
from tests.realserver.llama_server import (  # noqa: E402
    LlamaCppPythonServer,
    LlamaServer,
    ModelServer,
)

MODEL = "compat:smollm2"
REAL: dict[str, type[ModelServer]] = {
    "llama": LlamaServer,
    "llama-cpp-python": LlamaCppPythonServer,
}
PROMPT = "Write the numbers from 1 to 500, separated by commas."  # SmolLM2: 190+ tokens
_TEXT = '"content":"'  # a chunk with text (not null, not absent)
SMOLLM2_PACE = 0.0087  # seconds per token of SmolLM2-135M Q4_1 on 2 threads here (~115 tokens/s)


class Source:
    """Where the stream comes from: ``before_request()`` is called before each request."""

    def __init__(self, name: str, base_url: str, before_request: Callable[[], None]) -> None:
        self.name = name
        self.base_url = base_url
        self.before_request = before_request


@dataclass(frozen=True)
class Answer:
    """One side's answer: this process's CPU seconds, its tokens (the server's usage; the
    text chunks when it sends none; None: not known to this side), the text (None: the side
    does not parse it)."""

    cpu: float
    tokens: int | None
    text: str | None


def config_for(base_url: str, tokens: int) -> dict[str, Any]:
    """The project config of ``Agi``'s side: ``compat`` on ``base_url``, greedy, ``tokens``."""
    return {
        "providers": {"compat": {"base_url": base_url}},
        "models": {MODEL: {"max_output_tokens": tokens, "temperature": 0}},
    }


def agis_request(project: str, env: dict[str, str], fake_url: str, tokens: int) -> dict[str, Any]:
    """The body ``Agi.stream`` sends for ``PROMPT`` in a new ``general`` session of this
    project, as the fake server received it: the raw side sends the same (the agent's system
    prompt, the messages, the temperature and the token limit)."""
    fake = FakeLLMClient(fake_url, timeout=60)
    fake.enqueue(Turn(text="1"))
    with Agi(project, env=env, config=config_for(fake_url + "/v1", tokens)) as agi:
        agi_stream(agi, agi.new_session(agent="general", model=MODEL).id)
    body: dict[str, Any] = fake.requests()[-1].body
    return body


class Raw:
    """The raw SDK loop and the httpx2 floor, each on one client and one event loop, sending
    ``body`` (what ``Agi.stream`` sends)."""

    def __init__(self, base_url: str, body: dict[str, Any]) -> None:
        import httpx2
        import openai

        self.loop = asyncio.new_event_loop()
        self.sdk = openai.AsyncOpenAI(api_key="sk-bench", base_url=base_url, max_retries=0)
        self.http = httpx2.AsyncClient(timeout=120)
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.body = body
        fixed = ("model", "messages", "stream")  # the SDK's own parameters; the rest as is
        self.extra = {k: v for k, v in body.items() if k not in fixed}

    async def _sdk(self) -> tuple[int, str]:
        """(the tokens as the server counts them — its usage, else the text chunks — and
        the text)."""
        text: list[str] = []
        counted = None
        stream = await self.sdk.chat.completions.create(
            model=self.body["model"],
            messages=self.body["messages"],
            stream=True,
            extra_body=self.extra,
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                text.append(chunk.choices[0].delta.content)
            if chunk.usage is not None:
                counted = chunk.usage.completion_tokens
        return (len(text) if counted is None else counted), "".join(text)

    async def _lines(self) -> int:
        texts = 0
        async with self.http.stream("POST", self.url, json=self.body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:") and _TEXT in line.replace(" ", ""):
                    texts += 1
        return texts

    def sdk_stream(self) -> Answer:
        cpu = time.process_time()
        tokens, text = self.loop.run_until_complete(self._sdk())
        return Answer(time.process_time() - cpu, tokens, text)

    def floor_stream(self) -> Answer:
        cpu = time.process_time()
        tokens = self.loop.run_until_complete(self._lines())
        return Answer(time.process_time() - cpu, tokens, None)

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


def agi_answer(agi: Agi, session_id: str) -> Answer:
    cpu = time.process_time()
    run_id = agi_stream(agi, session_id)
    took = time.process_time() - cpu
    result = agi.result(run_id)
    return Answer(took, result.run.usage.get("output_tokens"), result.text)


@contextmanager
def sources(
    names: list[str], tokens: int, pace: float, threads: int
) -> Iterator[tuple[list[Source], str]]:
    """The sources asked for, and the fake server's URL (always started: it records the
    request ``Agi.stream`` sends)."""
    made: list[Source] = []
    stops: list[Callable[[], None]] = []
    try:
        for name, kind in REAL.items():
            if name in names:
                server = kind(threads=threads)
                server.start()
                stops.append(server.stop)
                made.append(Source(name, server.base_url, lambda: None))
        process, url = start_server()

        def stop_fake() -> None:
            process.terminate()
            process.wait(10)
            if process.stdout is not None:
                process.stdout.close()

        stops.append(stop_fake)
        fake = FakeLLMClient(url, timeout=60)
        for name in [n for n in names if n in ("paced", "burst")]:
            fault = Fault(stall_between_events=pace) if name == "paced" else None
            turn = Turn(chunks=[f"{i}\n" for i in range(tokens)], usage=(20, tokens), fault=fault)
            made.append(Source(name, url + "/v1", partial(fake.enqueue, turn)))
        yield made, url
    finally:
        for stop in reversed(stops):
            stop()


def compare(source: Source, fake_url: str, args: argparse.Namespace) -> None:
    env = {"HOME": tempfile.mkdtemp(), "AGI_REVIEW_MODE": "auto"}
    if args.persist_deltas is not None:
        env["AGI_PERSIST_DELTAS"] = "1" if args.persist_deltas == "on" else "0"
    sides = ["raw", "agi", "floor"] + (["noise"] if args.noise else [])
    results: dict[str, list[Answer]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory() as project:
        raw = Raw(source.base_url, agis_request(project, env, fake_url, args.tokens))
        config = config_for(source.base_url, args.tokens)
        try:
            with Agi(project, env=env, config=config) as agi:
                for round_ in range(args.repeat + 1):  # round 0 warms every side up
                    shift = round_ % len(sides)
                    for side in sides[shift:] + sides[:shift]:
                        session_id = agi.new_session(agent="general", model=MODEL).id
                        source.before_request()
                        answer = (
                            agi_answer(agi, session_id)
                            if side == "agi"
                            else raw.floor_stream()
                            if side == "floor"
                            else raw.sdk_stream()
                        )
                        if round_:
                            results[side].append(answer)
        finally:
            raw.close()
    report(source.name, results)


def report(name: str, results: dict[str, list[Answer]]) -> None:
    """Per side: CPU per answer, per token, and the median (range) of each round's ratio to
    the raw side's per-token CPU. A side whose server gave no token count (llama-cpp-python
    streams no usage) is counted with the raw side's tokens of the same round when its text is
    the same; the two sides' token counts and whether their texts agree are printed first."""
    raw = results["raw"]
    agi = results["agi"]
    same = sum(a.text == r.text for a, r in zip(agi, raw, strict=True))
    counted = "the server's count" if all(a.tokens is not None for a in agi) else "the raw side's"
    for i, (a, r) in enumerate(zip(agi, raw, strict=True)):
        if a.tokens is None and a.text == r.text:
            agi[i] = Answer(a.cpu, r.tokens, a.text)
    print(
        f"\n{name}: {len(raw)} rounds; tokens per answer (median) raw SDK "
        f"{statistics.median(r.tokens or 0 for r in raw):.0f}, Agi.stream "
        f"{statistics.median(a.tokens or 0 for a in agi):.0f} "
        f"({counted}); "
        f"the same text in {same} of {len(raw)} rounds"
    )
    print(f"{'side':<8} {'CPU/answer':>11} {'us/token':>9} {'ratio (median of rounds)':>26}")
    for side, runs in results.items():
        per_token = [a.cpu / max(a.tokens or 0, 1) for a in runs]
        ratios = sorted(
            p / (r.cpu / max(r.tokens or 0, 1)) for p, r in zip(per_token, raw, strict=True)
        )
        print(
            f"{side:<8} {statistics.median(a.cpu for a in runs) * 1000:>8.1f} ms "
            f"{statistics.median(per_token) * 1e6:>9.1f} "
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
    config = config_for(source.base_url, args.tokens)
    with tempfile.TemporaryDirectory() as project:
        threading.setprofile(start_in_thread)
        main = cProfile.Profile(time.thread_time)
        profilers.append(main)
        texts = 0
        try:
            with Agi(project, env=env, config=config) as agi:
                sessions = [
                    agi.new_session(agent="general", model=MODEL).id
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
        "--source", action="append", choices=[*REAL, "paced", "burst"], default=None
    )
    parser.add_argument("--tokens", type=int, default=400, help="max_tokens / the fake's chunks")
    parser.add_argument("--pace", type=float, default=SMOLLM2_PACE, help="paced fake: s/chunk")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--threads", type=int, default=1, help="a real server's threads (1: no spinning at load)"
    )
    parser.add_argument("--noise", action="store_true", help="the raw loop twice (A/A)")
    parser.add_argument("--persist-deltas", choices=["on", "off"], default=None)
    parser.add_argument("--profile", type=int, default=0, help="profile N answers of Agi.stream")
    parser.add_argument("--top", type=int, default=30, help="lines of the profile")
    args = parser.parse_args(argv)
    names = args.source or ["paced"]
    with sources(names, args.tokens, args.pace, args.threads) as (made, fake_url):
        for source in made:
            if args.profile:
                profile(source, args)
            else:
                compare(source, fake_url, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
