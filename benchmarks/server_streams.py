"""Streaming through the jupyter-server extension.

1. 100 concurrent NDJSON streams (``POST /sessions/{id}/messages``, one session each) on one
   server against the fake model: errors (goal 0) and latency percentiles to ``run.final``,
   compared with one stream at a time (goal: p50 under load <= 2x the single-stream p50).
   Two models: "paced" streams 20 chunks 25 ms apart (~0.5 s, like a real model), "instant"
   answers at once (then the figure is the CPU throughput of the whole stack);
2. time to the first event (``run.meta``) through the server (HTTP request -> first NDJSON
   line) vs ``Agi.stream`` called in-process (goal: the server adds <= 5 ms at p50).

The fake model server is started with a listen backlog of 1024 (see ``server_common``):
with its default of 5, a burst of 100 runs lost most connections to the 1 s SYN
retransmission, which dominated the concurrent figures; ``--small-backlog`` reproduces that,
and every round prints the SYN retransmissions the machine counted during the burst.

    .venv/bin/python benchmarks/server_streams.py [--streams 100] [--singles 30] [--repeat 3]
        [--small-backlog]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from server_common import Servers, cpu_seconds, percentile, servers, syn_retransmits

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMClient, Fault, Turn

NDJSON = {"Accept": "application/x-ndjson"}


async def one_stream(client: httpx.AsyncClient, session: str) -> tuple[float, float, int]:
    """(seconds to the first event, seconds to run.final, events) of one streamed reply."""
    start = time.perf_counter()
    first = 0.0
    count = 0
    async with client.stream(
        "POST", f"/sessions/{session}/messages", json={"content": "hello"}, headers=NDJSON
    ) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line:
                continue
            count += 1
            if count == 1:
                first = time.perf_counter() - start
            event = json.loads(line)
            if event["type"] == "run.final":
                if event["run"]["status"] != "succeeded":
                    raise RuntimeError(f"run ended {event['run']['status']}")
                return first, time.perf_counter() - start, count
    raise RuntimeError("the stream ended without run.final")


async def new_sessions(client: httpx.AsyncClient, n: int) -> list[str]:
    replies = [await client.post("/sessions", json={}) for _ in range(n)]
    return [r.json()["session"]["id"] for r in replies]


async def singles(running: Servers, n: int) -> list[tuple[float, float, int]]:
    async with httpx.AsyncClient(base_url=running.base, headers=running.headers, timeout=60) as c:
        sessions = await new_sessions(c, n)
        return [await one_stream(c, s) for s in sessions]


async def concurrent(
    running: Servers, n: int
) -> tuple[list[tuple[float, float, int]], int, float, int | None]:
    """n streams at once: their results, the number of failures, the server's CPU seconds and
    the SYN retransmissions the machine counted meanwhile."""
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(
        base_url=running.base, headers=running.headers, timeout=120, limits=limits
    ) as c:
        sessions = await new_sessions(c, n)
        cpu = cpu_seconds(running.pid)
        syns = syn_retransmits()
        results = await asyncio.gather(
            *(one_stream(c, s) for s in sessions), return_exceptions=True
        )
        cpu = cpu_seconds(running.pid) - cpu
        after = syn_retransmits()
        syns = None if syns is None or after is None else after - syns
    ok = [r for r in results if isinstance(r, tuple)]
    errors = [r for r in results if not isinstance(r, tuple)]
    for error in errors[:3]:
        print("  error:", repr(error))
    return ok, len(errors), cpu, syns


def pace(running: Servers, n: int, paced: bool) -> None:
    """Queue ``n`` paced answers (or none: the fake's instant default answer)."""
    fake = FakeLLMClient(running.fake_url)
    fake.reset()
    if paced:
        words = [f"word{i} " for i in range(20)]
        fake.enqueue(*[Turn(chunks=words, fault=Fault(stall_between_events=0.025))] * n)


def measure(
    running: Servers, args: argparse.Namespace, paced: bool
) -> tuple[float, float, int, list[float]]:
    """Median single-stream and under-load latencies, errors, single-stream first-event times."""
    single_totals, load_totals, firsts, errors = [], [], [], 0
    label = "paced" if paced else "instant"
    for round_ in range(args.repeat):
        pace(running, args.singles, paced)
        one = asyncio.run(singles(running, args.singles))
        pace(running, args.streams, paced)
        many, failed, cpu, syns = asyncio.run(concurrent(running, args.streams))
        errors += failed
        firsts += [r[0] for r in one]
        single_totals.append(statistics.median(r[1] for r in one))
        load_totals.append(statistics.median(r[1] for r in many))
        print(
            f"{label} round {round_}: single p50 {ms(single_totals[-1])}, "
            f"{args.streams} concurrent p50 {ms(load_totals[-1])} "
            f"p95 {ms(percentile([r[1] for r in many], 0.95))}, errors {failed}, "
            f"server CPU {ms(cpu / args.streams)} per stream, SYN retransmits {syns}"
        )
    return statistics.median(single_totals), statistics.median(load_totals), errors, firsts


def in_process_first_event(root: Path, fake_url: str, n: int) -> list[float]:
    env = {"AGI_FAKE_LLM_URL": fake_url + "/v1", "AGI_MODEL": "fake:echo", "HOME": str(root)}
    project = root / "inproc"
    (project / ".agi").mkdir(parents=True, exist_ok=True)
    firsts = []
    with Agi(project, env=env) as agi:
        for _ in range(n + 3):
            session = agi.new_session()
            start = time.perf_counter()
            events = agi.stream("hello", session=session)
            next(iter(events))
            firsts.append(time.perf_counter() - start)
            for _event in events:
                pass
    return firsts[3:]  # the first runs warm up the provider client


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--singles", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--small-backlog",
        action="store_true",
        help="start the fake model server with its default listen backlog (5), as the figures "
        "recorded before 2026-11-22 were: bursts then lose connections to SYN retransmits",
    )
    args = parser.parse_args()
    backlog_fix = not args.small_backlog
    with (
        tempfile.TemporaryDirectory() as tmp,
        servers(Path(tmp), backlog_fix=backlog_fix) as running,
    ):
        pace(running, 0, False)
        asyncio.run(singles(running, 3))  # warm up the server's Agi and provider client
        results = {paced: measure(running, args, paced) for paced in (True, False)}
        inproc = in_process_first_event(Path(tmp), running.fake_url, args.singles * args.repeat)
    print()
    for paced, (single, loaded, errors, _firsts) in results.items():
        label = "paced model (~0.5 s answers)" if paced else "instant model"
        print(
            f"{label}: {args.streams} concurrent NDJSON streams x {args.repeat} rounds, "
            f"errors {errors}; latency to run.final p50: single {ms(single)}, "
            f"under load {ms(loaded)} -> {loaded / single:.2f}x (goal <= 2x)"
        )
    server_first = statistics.median(results[False][3])
    local_first = statistics.median(inproc)
    print(
        f"time to first event, p50: server {ms(server_first)}, in-process Agi.stream "
        f"{ms(local_first)} -> server adds {ms(server_first - local_first)} (goal <= 5 ms)"
    )


if __name__ == "__main__":
    main()
