"""Inline completion (``POST /agi/v1/completions``) through a real jupyter-server extension.

1. Server overhead over the model's own first token: the time from the request to the first
   NDJSON line through the server, minus the time from a request straight to the fake model's
   Chat Completions endpoint to its first text delta (the same scripted answer), p50 of each
   (goal: the server adds <= 15 ms at p50);
2. a superseded request: the client reads the first suggestion and closes the connection; the
   time until the fake model's server sees its own connection closed (both clocks are
   ``time.monotonic()``, system-wide on Linux; goal <= 50 ms at p50);
3. requests per 100 typed characters at the default debounce (300 ms): a typist is simulated
   (seeded): key intervals log-normal around 180 ms (~65 words a minute), a pause of 0.4-1.5 s
   after 1 word in 6; a request leaves when a pause reaches the debounce, as the panel's
   ``CompletionSource`` does (each keystroke supersedes the wait of the one before).

    .venv/bin/python benchmarks/completion.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from server_common import Servers, percentile, servers

from agi_jupyter.testing import FakeLLMClient, Fault, Turn

NDJSON = {"Accept": "application/x-ndjson"}
BODY = {
    "prefix": "def add(a, b):\n    ",
    "suffix": "\n",
    "language": "python",
    "model": "fake:echo",
}
ANSWER = ["return", " a", " +", " b"]


async def direct_first_token(client: httpx.AsyncClient, fake_url: str) -> float:
    body = {"model": "echo", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    start = time.perf_counter()
    async with client.stream("POST", f"{fake_url}/v1/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if '"content":"' in line and '"content":""' not in line:
                return time.perf_counter() - start
    raise RuntimeError("no text delta")


async def server_first_line(client: httpx.AsyncClient, run: Servers) -> float:
    start = time.perf_counter()
    async with client.stream(
        "POST", f"{run.base}/completions", json=BODY, headers={**run.headers, **NDJSON}
    ) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.strip():
                return time.perf_counter() - start
    raise RuntimeError("no line")


async def superseded(client: httpx.AsyncClient, run: Servers, fake: FakeLLMClient) -> float:
    before = len(fake.closed_streams())
    fake.enqueue(Turn(chunks=ANSWER, fault=Fault(hold_after=2)))
    async with client.stream(
        "POST", f"{run.base}/completions", json=BODY, headers={**run.headers, **NDJSON}
    ) as response:
        async for line in response.aiter_lines():
            if line.strip():
                break
        closed_at = time.monotonic()
    for _ in range(500):
        seen = fake.closed_streams()
        if len(seen) > before:
            return seen[-1][1] - closed_at
        await asyncio.sleep(0.01)
    raise RuntimeError("the upstream stream was never closed")


def requests_per_100_chars(debounce: float, seed: int) -> int:
    rng = random.Random(seed)
    gaps = []
    for n in range(100):
        gap = rng.lognormvariate(0, 0.45) * 0.18
        if n % 6 == 5 and rng.random() < 1 / 6:  # a word ends; 1 in 6, the typist pauses
            gap += rng.uniform(0.4, 1.5)
        gaps.append(gap)
    # a request leaves after each keystroke followed by a pause of at least the debounce,
    # and after the last one
    return sum(1 for gap in gaps[1:] if gap >= debounce) + 1


async def measure(run: Servers, rounds: int) -> None:
    fake = FakeLLMClient(run.fake_url)
    direct, through, closing = [], [], []
    async with httpx.AsyncClient(timeout=30) as client:
        for n in range(rounds + 1):
            fake.enqueue(Turn(chunks=ANSWER))
            d = await direct_first_token(client, run.fake_url)
            fake.enqueue(Turn(chunks=ANSWER))
            s = await server_first_line(client, run)
            c = await superseded(client, run, fake)
            if n:  # round 0 warms up
                direct.append(d)
                through.append(s)
                closing.append(c)
    overhead = statistics.median(through) - statistics.median(direct)
    print(f"first token, model alone:   p50 {statistics.median(direct) * 1e3:6.1f} ms")
    print(
        f"first line, through server: p50 {statistics.median(through) * 1e3:6.1f} ms,"
        f" p90 {percentile(through, 0.9) * 1e3:6.1f} ms"
    )
    print(f"server overhead at p50:          {overhead * 1e3:6.1f} ms (goal <= 15)")
    print(f"superseded -> upstream closed:  p50 {statistics.median(closing) * 1e3:6.1f} ms,"
          f" p90 {percentile(closing, 0.9) * 1e3:6.1f} ms (goal <= 50)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    counts = [requests_per_100_chars(0.3, seed) for seed in range(20)]
    print(
        f"requests per 100 typed characters at 300 ms: median {statistics.median(counts)},"
        f" min {min(counts)}, max {max(counts)} (20 simulated typists)"
    )
    with tempfile.TemporaryDirectory() as tmp, servers(Path(tmp)) as run:
        (run.root / ".agi").mkdir(exist_ok=True)
        (run.root / ".agi" / "config.json").write_text(json.dumps({"default_model": "fake:echo"}))
        asyncio.run(measure(run, args.rounds))


if __name__ == "__main__":
    main()
