"""Throughput of queued background runs: one server against three replicas on one PostgreSQL
database (see README.md, "Replicas").

Each round starts a PostgreSQL server's fresh project (a new root folder, so a new schema), N
``jupyter server`` replicas over it, and a producer (``Agi(...).submit(start=False)``) that
queues RUNS background runs over SESSIONS sessions; the clock runs from the first run queued
until every run has ended. Rounds alternate between the two sides (A/B interleaved), and
``--noise`` compares one replica with one replica (A/A). The fake LLM server (in this process)
counts the model requests, which must equal the number of runs; ``--latency`` makes each answer
wait before its first byte, as a real model does (runs then wait on the model, not the CPU).

    .venv/bin/python benchmarks/replicas_throughput.py                  # 1 vs 3, 3 rounds each
    .venv/bin/python benchmarks/replicas_throughput.py --latency 1      # a model that takes 1 s
    .venv/bin/python benchmarks/replicas_throughput.py --runs 300 --rounds 2
    .venv/bin/python benchmarks/replicas_throughput.py --noise          # 1 vs 1
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.*

from server_common import cpu_seconds

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from agi_jupyter.testing.rules import default_rule
from tests.postgres_server import PostgresServer, binaries
from tests.replicas.conftest import replica_env, start_replica, wait_ready


def slow_model(latency: float):  # type: ignore[no-untyped-def]
    """The fake model's default answers, each after ``latency`` seconds."""

    def rule(protocol: str, body: object) -> Turn:
        turn = default_rule(protocol, body)  # type: ignore[arg-type]
        turn.fault = Fault(delay_before_headers=latency)
        return turn

    return rule


def one_round(
    url: str, fake: FakeLLMServer, replicas: int, runs: int, sessions: int
) -> dict[str, float]:
    with TemporaryDirectory(prefix="agi-bench-") as tmp:
        root = Path(tmp)
        (root / "project").mkdir()
        env = replica_env(root, url, fake.openai_base_url)
        started = [start_replica(f"r{i}", root / "project", env, root) for i in range(replicas)]
        try:
            for replica in started:
                wait_ready(replica)
            before = len(fake.requests)
            cpu = sum(cpu_seconds(r.process.pid) for r in started)
            with Agi(root / "project", env=env) as producer:
                ids = [producer.new_session(title=f"s{i}").id for i in range(sessions)]
                start = time.perf_counter()
                for i in range(runs):
                    producer.submit(
                        f"job {i}", session=ids[i % sessions], start=False,
                        execution_mode="background",
                    )  # fmt: skip
                queued = time.perf_counter() - start
                active = "SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running')"
                while producer.store.query(active).rows[0][0]:
                    time.sleep(0.05)
                elapsed = time.perf_counter() - start
                cpu = sum(cpu_seconds(r.process.pid) for r in started) - cpu
                stats = producer.stats()["runs_by_status"]
            requests = len(fake.requests) - before
        finally:
            for replica in started:
                replica.stop()
    if stats != {"succeeded": runs} or requests != runs:
        raise RuntimeError(f"not exactly once: {stats}, {requests} model requests")
    return {
        "seconds": elapsed,
        "queued_in": queued,
        "runs_per_s": runs / elapsed,
        "cpu_ms_per_run": 1000 * cpu / runs,  # the replicas' CPU (user + system), all of them
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side")
    parser.add_argument("--noise", action="store_true", help="A/A: one replica on both sides")
    parser.add_argument("--latency", type=float, default=0.0, help="the model's answer delay, s")
    args = parser.parse_args(argv)
    sides = (1, 1) if args.noise else (1, 3)
    bin_dir = binaries()
    if bin_dir is None:
        print("PostgreSQL is not installed (apt-get install postgresql)", file=sys.stderr)
        return 1
    server = PostgresServer(bin_dir)
    server.start()
    fake = FakeLLMServer().start()
    if args.latency:
        fake.default_rule = slow_model(args.latency)
    results: dict[int, list[dict[str, float]]] = {0: [], 1: []}
    try:
        server.admin("CREATE DATABASE bench")
        url = server.socket_url("bench")
        for round_no in range(args.rounds):
            for side, replicas in enumerate(sides):
                figures = one_round(url, fake, replicas, args.runs, args.sessions)
                results[side].append(figures)
                print(
                    f"round {round_no} side {'AB'[side]} ({replicas} replica(s)): "
                    f"{figures['seconds']:.1f} s, {figures['runs_per_s']:.1f} runs/s "
                    f"(queueing took {figures['queued_in']:.1f} s), "
                    f"replicas' CPU {figures['cpu_ms_per_run']:.1f} ms/run",
                    flush=True,
                )
    finally:
        fake.stop()
        server.stop()
    for key, unit in (("runs_per_s", "runs/s"), ("cpu_ms_per_run", "CPU ms/run")):
        a, b = (statistics.median(r[key] for r in results[side]) for side in (0, 1))
        print(
            f"median {unit}: A ({sides[0]} replica) {a:.1f}, B ({sides[1]} replicas) {b:.1f};"
            f" B/A {b / a:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
