"""What the runtime (runner + store + event fan-out) adds on top of the raw SDK.

Three measurements, against the fake LLM server running in its own process (its CPU is not
counted):

1. a 20,000-chunk answer through ``Agi.stream`` vs the raw ``openai`` Chat Completions stream
   loop over the same stream (``--wire http``, the default, reads it without the SDK: goal
   <= 0.3x, issue 20; ``--wire sdk`` through the SDK: goal <= 1.05x; the verdict uses this
   process's CPU time, which a busy machine disturbs least). The raw loop keeps one client
   and one event loop across rounds, as ``Agi`` keeps its provider client; round 0 warms both
   up and the two sides alternate which goes first; every ``Agi.stream`` answer starts a new
   session, so both sides send one user message. ``--noise`` runs the raw loop on both sides
   (an A/A run: the ratio it prints is the noise floor of the machine at that moment);
2. a 10-turn tool loop (each turn one ``fs.list`` call, then a final answer) through ``Agi.ask``
   vs the same 11 requests made with the raw SDK: the runtime's overhead per turn;
3. time to the first token of a 20-chunk answer: ``Agi.stream`` called -> its first
   ``output.text.delta``, vs the raw loop's request -> its first content chunk (issue 20: at
   most 2 ms added); the sides alternate, medians of ``--repeat`` x 10 pairs and the median of
   the pairs' differences (``--noise``: the raw loop on both sides);
4. ``Agi.history(view="full")`` of a 10,000-message session (goal <= 50 ms).

    .venv/bin/python benchmarks/runtime_overhead.py [--chunks 20000] [--repeat 5] [--noise]
        [--persist-deltas on|off] [--wire http|sdk] [--api chat|anthropic]
        [--skip-history]

``--api anthropic`` runs measurements 1 and 3 on Anthropic Messages instead: ``Agi`` on the
``anthropic`` provider, the raw loop the ``anthropic`` SDK's ``messages.create`` stream (the
tool loop is then skipped).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMClient, FakeToolCall, Turn

sys.path.insert(0, str(Path(__file__).parent))
from store_history import build


def start_server() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "agi_jupyter.testing.fake_llm", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("FAKE_LLM_URL="):
        process.kill()
        raise SystemExit(f"fake server did not start: {line!r}")
    return process, line.removeprefix("FAKE_LLM_URL=")


class RawClient:
    """The raw SDK loop: one ``AsyncOpenAI`` client on one event loop, reused across calls."""

    model = "openai-chat:gpt-4o-mini"  # what Agi's side asks for

    def __init__(self, base_url: str) -> None:
        import openai

        self.loop = asyncio.new_event_loop()
        self.client = openai.AsyncOpenAI(api_key="sk-bench", base_url=base_url, max_retries=0)

    async def _first(self) -> float:
        """Seconds from the request to its first content chunk (the stream is read to the end)."""
        start = time.perf_counter()
        first = 0.0
        stream = await self.client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "go"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in stream:
            if not first and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter() - start
        return first

    def first(self) -> float:
        return self.loop.run_until_complete(self._first())

    async def _stream(self, requests: int) -> None:
        for _ in range(requests):
            stream = await self.client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "go"}],
                stream=True,
                stream_options={"include_usage": True},
            )
            async for _chunk in stream:
                pass

    def stream(self, requests: int) -> None:
        self.loop.run_until_complete(self._stream(requests))

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        self.loop.close()


class RawAnthropic(RawClient):
    """The raw loop of the anthropic SDK (``--api anthropic``): one ``AsyncAnthropic`` client."""

    model = "anthropic:claude-haiku-4-5"

    def __init__(self, base_url: str) -> None:
        import anthropic

        self.loop = asyncio.new_event_loop()
        self.client = anthropic.AsyncAnthropic(  # type: ignore[assignment]
            api_key="sk-bench", base_url=base_url, max_retries=0
        )

    async def _messages(self) -> AsyncIterator[bool]:
        """Each event of one streamed answer: whether it is a text delta."""
        stream = await self.client.messages.create(  # type: ignore[attr-defined]
            model="claude-haiku-4-5",
            max_tokens=32_000,
            messages=[{"role": "user", "content": "go"}],
            stream=True,
        )
        async for event in stream:
            yield event.type == "content_block_delta" and event.delta.type == "text_delta"

    async def _first(self) -> float:
        start = time.perf_counter()
        first = 0.0
        async for is_text in self._messages():
            if not first and is_text:
                first = time.perf_counter() - start
        return first

    async def _stream(self, requests: int) -> None:
        for _ in range(requests):
            async for _is_text in self._messages():
                pass


def timed(fn: object) -> float:
    started = time.perf_counter()
    assert callable(fn)
    fn()
    return time.perf_counter() - started


def cpu_timed(fn: object) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds): the server's work is in another process."""
    cpu = time.process_time()
    wall = timed(fn)
    return wall, time.process_time() - cpu


def answer_turn(chunks: int) -> Turn:
    return Turn(chunks=["tok "] * chunks, usage=(10, chunks))


def tool_turns() -> list[Turn]:
    turns = [Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})]) for _ in range(10)]
    return [*turns, Turn(text="done")]


def first_token(
    agi: Agi, fake: FakeLLMClient, raw_client: RawClient, pairs: int, noise: bool
) -> tuple[float, float, float]:
    """Medians of (raw, ours, ours - raw of the same pair) seconds to the first token over
    ``pairs`` interleaved pairs: the paired difference cancels the drifts of a shared
    machine's load that the two medians keep."""
    raw_s: list[float] = []
    ours_s: list[float] = []

    def ours(session_id: str) -> float:
        if noise:
            return raw_client.first()
        start = time.perf_counter()
        first = 0.0
        for event in agi.stream("go", session=session_id):
            if not first and event["type"] == "output.text.delta":
                first = time.perf_counter() - start
        return first

    for pair in range(pairs + 2):  # the first two pairs warm up
        for side in ("raw", "ours") if pair % 2 else ("ours", "raw"):
            fake.enqueue(answer_turn(20))
            session_id = agi.new_session(agent="plan", model=raw_client.model).id
            took = raw_client.first() if side == "raw" else ours(session_id)
            if pair >= 2:
                (raw_s if side == "raw" else ours_s).append(took)
    paired = [o - r for r, o in zip(raw_s, ours_s, strict=True)]
    return statistics.median(raw_s), statistics.median(ours_s), statistics.median(paired)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--noise", action="store_true", help="A/A: raw loop on both sides")
    parser.add_argument("--skip-history", action="store_true", help="only the streaming parts")
    parser.add_argument(
        "--persist-deltas",
        choices=["on", "off"],
        default=None,
        help="store streamed deltas or not (default: the configured default, on)",
    )
    parser.add_argument(
        "--wire",
        choices=["http", "sdk"],
        default=None,
        help="how Agi reads the stream (AGI_WIRE; default: the configured default, http)",
    )
    parser.add_argument(
        "--api",
        choices=["chat", "anthropic"],
        default="chat",
        help="the wire API of measurements 1 and 3 (anthropic: no tool loop)",
    )
    args = parser.parse_args(argv)
    process, url = start_server()
    fake = FakeLLMClient(url, timeout=60)
    base_url = url + "/v1"
    env = {"HOME": tempfile.mkdtemp(), "OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": base_url}
    if args.api == "anthropic":
        env |= {"ANTHROPIC_API_KEY": "sk-bench", "ANTHROPIC_BASE_URL": url}
    if args.wire is not None:
        env["AGI_WIRE"] = args.wire
    if args.persist_deltas is not None:
        env["AGI_PERSIST_DELTAS"] = "1" if args.persist_deltas == "on" else "0"
    raw_client = RawAnthropic(url) if args.api == "anthropic" else RawClient(base_url)
    try:
        with tempfile.TemporaryDirectory() as project, Agi(project, env=env) as agi:
            # A new session per answer (made before the clock starts), so the request carries
            # the one user message the raw loop sends, not every earlier 20,000-token answer.
            session_id = ""

            def ours() -> None:
                if args.noise:
                    raw_client.stream(1)
                else:
                    list(agi.stream("go", session=session_id))

            raw_runs, our_runs = [], []
            for round_ in range(args.repeat + 1):  # round 0 warms both sides up
                order = ("raw", "ours") if round_ % 2 else ("ours", "raw")
                for side in order:
                    fake.enqueue(answer_turn(args.chunks))
                    raw_side = side == "raw"
                    session_id = agi.new_session(agent="plan", model=raw_client.model).id
                    took = cpu_timed(lambda: raw_client.stream(1)) if raw_side else cpu_timed(ours)
                    if round_:
                        (raw_runs if side == "raw" else our_runs).append(took)
            label_ours = "raw SDK again (A/A)" if args.noise else "Agi.stream"
            for label, index in (("wall", 0), ("CPU", 1)):
                raw_s = statistics.median(r[index] for r in raw_runs)
                ours_s = statistics.median(r[index] for r in our_runs)
                per_event = (ours_s - raw_s) / args.chunks * 1e6
                print(
                    f"{args.chunks:,}-chunk answer ({label}): raw SDK {raw_s * 1000:.0f} ms, "
                    f"{label_ours} {ours_s * 1000:.0f} ms, ratio {ours_s / raw_s:.3f}x "
                    f"({per_event:+.1f} us/chunk)"
                )
            # Each round's two answers ran back to back: their ratio cancels the slow drifts of
            # a shared machine that the medians of each side keep.
            paired = sorted(o[1] / r[1] for r, o in zip(raw_runs, our_runs, strict=True))
            print(
                f"{args.chunks:,}-chunk answer (CPU), ratio per round: median "
                f"{statistics.median(paired):.3f}x, range {paired[0]:.3f}-{paired[-1]:.3f}x"
            )
            raw_first, our_first, added = first_token(
                agi, fake, raw_client, args.repeat * 10, args.noise
            )
            print(
                f"first token of a 20-chunk answer: raw SDK {raw_first * 1000:.2f} ms, "
                f"{label_ours} {our_first * 1000:.2f} ms, added "
                f"{(our_first - raw_first) * 1000:+.2f} ms (goal <= 2 ms); median of the "
                f"pairs' differences {added * 1000:+.2f} ms"
            )
            if args.noise or args.api == "anthropic":
                return 0
            raw, ours_t = [], []
            for _ in range(args.repeat):
                fake.enqueue(*tool_turns())
                raw.append(timed(lambda: raw_client.stream(11)))
                fake.enqueue(*tool_turns())
                sid = agi.new_session(agent="plan", model="openai-chat:gpt-4o-mini").id
                ours_t.append(timed(lambda sid=sid: agi.ask("loop", session=sid)))
            per_turn = (statistics.median(ours_t) - statistics.median(raw)) / 11
            print(
                f"10-turn tool loop: raw SDK {statistics.median(raw) * 1000:.0f} ms, Agi.ask "
                f"{statistics.median(ours_t) * 1000:.0f} ms, overhead {per_turn * 1000:.1f} ms/turn"
            )
        if args.skip_history:
            return 0
        with tempfile.TemporaryDirectory() as project, Agi(project, env=env) as agi:
            session_id = build(agi.store, 10_000)
            times = [timed(lambda: agi.history(session_id, view="full")) for _ in range(7)]
            print(
                f"history(view='full') of 10,000 messages: median "
                f"{statistics.median(times) * 1000:.1f} ms (goal <= 50 ms)"
            )
    finally:
        raw_client.close()
        process.terminate()
        process.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
