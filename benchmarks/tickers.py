"""Concurrent tickers: N processes ticking one store share its queued runs.

For each N in ``--workers`` (default 1 and 8), a fresh project gets ``--runs`` queued runs (the
offline fake model, served by the fake LLM server in its own process), spread over
``--sessions`` sessions; then N worker processes start together, each calling
``Agi.tick(max_runs=--max-runs)`` until nothing is left to run, and the wall-clock time until
every run has ended is measured from the moment all of them are ready (runtime imported,
model client made: process start-up is not what this measures, and on a 2-core machine 8
start-ups alone cost more CPU than 200 runs). Each configuration runs ``--repeat`` times,
interleaved; medians are printed, with the check that every run was executed exactly once
(succeeded on its first attempt, one ``run.final``, one model request each).

    .venv/bin/python benchmarks/tickers.py [--runs 200] [--sessions 200] [--workers 1 8]
        [--max-runs 10] [--repeat 3] [--latency 0.2]

``--latency`` makes every model answer wait before its first byte, as a real model does: the
fake server answers at once otherwise, and then one process serving 80 concurrent requests
(8 tickers x 10 runs) is the bottleneck, not the tickers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMClient, Fault, Turn

WORKER = """
import json, sys, time
from agi_jupyter.app import Agi

project, env, max_runs = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
executed = ticks = 0
with Agi(project, env=env) as agi:
    agi.deps.providers.get("fake")  # SDK imported and client made before the clock starts
    print("ready", flush=True)
    sys.stdin.readline()  # all workers start together
    while True:
        ticks += 1
        executed += agi.tick(max_runs=max_runs).executed
        if not agi.store.list_runs(statuses=["queued", "running"], limit=1).items:
            break
        if not agi.store.due_runs(limit=1):
            time.sleep(0.05)  # the runs left are running elsewhere
    print(json.dumps({"executed": executed, "ticks": ticks, "done": time.time()}), flush=True)
"""


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


def queue(project: Path, env: dict[str, str], runs: int, sessions: int) -> list[str]:
    with Agi(project, env=env) as agi:
        ids = [agi.new_session(model="fake:echo").id for _ in range(sessions)]
        return [
            agi.submit(f"job {i}", session=ids[i % sessions], start=False).id for i in range(runs)
        ]


def check(project: Path, env: dict[str, str], run_ids: list[str]) -> None:
    with Agi(project, env=env) as agi:
        for run_id in run_ids:
            run = agi.run(run_id)
            finals = [e for e in agi.store.list_run_events(run_id) if e.type == "run.final"]
            if (run.status, run.attempt, len(finals)) != ("succeeded", 1, 1):
                raise SystemExit(f"run {run_id} was not executed exactly once: {run}")


def one(url: str, workers: int, args: argparse.Namespace) -> float:
    env = {"AGI_FAKE_LLM_URL": url, "HOME": tempfile.mkdtemp()}
    project = Path(tempfile.mkdtemp()) / "proj"
    (project / ".agi").mkdir(parents=True)
    run_ids = queue(project, env, args.runs, args.sessions)
    client = FakeLLMClient(url)
    client.reset()
    if args.latency:  # every answer waits this long before its first byte, as a model does
        client.enqueue(
            *[Turn(text="done", fault=Fault(delay_before_headers=args.latency))] * args.runs
        )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(project), json.dumps(env), str(args.max_runs)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(workers)
    ]
    for process in processes:  # every worker has imported the runtime and made its client
        assert process.stdout is not None
        if process.stdout.readline().strip() != "ready":
            raise SystemExit("a worker did not start")
    started = time.time()
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    outputs = [p.communicate(timeout=900)[0] for p in processes]
    reports = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    elapsed = max(r["done"] for r in reports) - started
    executed = sum(r["executed"] for r in reports)
    if executed != args.runs or len(client.requests()) != args.runs:
        raise SystemExit(f"{executed} executed, {len(client.requests())} model requests")
    check(project, env, run_ids)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--max-runs", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds each model answer takes to start"
    )
    args = parser.parse_args(argv)
    server, url = start_server()
    try:
        times: dict[int, list[float]] = {n: [] for n in args.workers}
        for _ in range(args.repeat):
            for n in args.workers:
                times[n].append(one(url, n, args))
    finally:
        server.terminate()
        server.wait(timeout=30)
    base = statistics.median(times[args.workers[0]])
    print(
        f"{args.runs} runs in {args.sessions} sessions, max_runs {args.max_runs},"
        f" model latency {args.latency} s:"
    )
    for n in args.workers:
        median = statistics.median(times[n])
        spread = ", ".join(f"{t:.1f}" for t in times[n])
        ratio = median / base
        print(f"  {n} ticker(s): {median:.1f} s median ({spread}); {ratio:.2f}x of the first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
