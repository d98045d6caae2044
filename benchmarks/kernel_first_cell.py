"""The first ``%%agi`` cell of a fresh kernel against a warm one, with and without the warm-up.

Each measurement starts a fresh kernel, runs ``%load_ext agi_jupyter``, waits ``--think``
seconds (the person typing the first prompt), then runs a ``%%agi`` cell and, right after, a
second one in the same kernel (warm). For each cell the client measures, from sending the
execute request:

- ``status``: the first output of the cell (the status line);
- ``text``: the first output holding the answer's text;
- ``done``: the kernel going idle.

Arms alternate: ``warm`` (the default: the runtime is imported and the default model's
client created on a background thread right after ``%load_ext``) and ``cold``
(``c.AgiMagics.warm_up = False``, everything happens in the first cell). ``--noise`` runs the
``warm`` arm on both sides (A/A). The model is the fake LLM server of this process, answering
after ``--latency`` seconds (default 0.3 s, a fast real model's time to first token; 0 measures
our overhead alone); medians are reported, with first/warm ratios (goal: the first answer
within 1.5x of a warm one). The project's store exists (a project used before) unless
``--fresh``.

    .venv/bin/python benchmarks/kernel_first_cell.py --repeat 5
    .venv/bin/python benchmarks/kernel_first_cell.py --think 0     # the first cell at once
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel

from agi_jupyter.store import open_store
from agi_jupyter.testing import FakeLLMServer, Fault, Turn

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AGI_MODEL")


def wait_idle(kc: Any, msg_id: str, start: float) -> dict[str, float]:
    """Times of the first output, the first answer text and idle, from ``start``."""
    times: dict[str, float] = {}
    while "done" not in times:
        try:
            msg = kc.get_iopub_msg(timeout=120)
        except queue.Empty as e:
            raise RuntimeError("the kernel stopped answering") from e
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        now = time.perf_counter() - start
        kind, content = msg["msg_type"], msg["content"]
        if kind in ("display_data", "update_display_data"):
            text = str(content.get("data", {}).get("text/plain", ""))
            if content.get("data"):
                times.setdefault("status", now)
            if "echo:" in text:
                times.setdefault("text", now)
        elif kind == "error":
            raise RuntimeError("\n".join(content["traceback"]))
        elif kind == "status" and content["execution_state"] == "idle":
            times["done"] = now
    return times


def run_cell(kc: Any, code: str) -> dict[str, float]:
    start = time.perf_counter()
    return wait_idle(kc, kc.execute(code), start)


def measure(
    warm_up: bool, think: float, fresh: bool, fake: FakeLLMServer, latency: float
) -> dict[str, dict[str, float]]:
    # Each answer waits `latency` before the model's first byte, as a real model's time to
    # first token does (0: the fake answers at once and only our overhead is measured).
    answer = Turn(text="echo: hello", fault=Fault(delay_before_headers=latency))
    fake.enqueue(answer, answer)
    with tempfile.TemporaryDirectory() as cwd:
        if not fresh:  # a project used before: its store exists
            with open_store(Path(cwd)) as store:
                store.create_session(title="an earlier session")
        km, kc = start_new_kernel(kernel_name="python3", cwd=cwd)
        try:
            setup = f"get_ipython().config.AgiMagics.warm_up = {warm_up}\n%load_ext agi_jupyter"
            run_cell(kc, setup)
            time.sleep(think)
            first = run_cell(kc, "%%agi\nhello")
            warm = run_cell(kc, "%%agi\nhello again")
            return {"first": first, "warm": warm}
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--think", type=float, default=3.0, help="seconds before the first cell")
    parser.add_argument("--noise", action="store_true", help="A/A: the warm arm on both sides")
    parser.add_argument("--fresh", action="store_true", help="a project with no store yet")
    parser.add_argument(
        "--latency", type=float, default=0.3, help="the model's time to first byte, seconds"
    )
    args = parser.parse_args()
    fake = FakeLLMServer()
    fake.start()
    home = tempfile.mkdtemp()
    os.environ.update(AGI_FAKE_LLM_URL=fake.url, AGI_CONFIG_DIR=os.path.join(home, "agi"))
    for key in KEYS:
        os.environ.pop(key, None)
    arms = {"warm": True, "cold": bool(args.noise)}
    results: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in arms}
    try:
        for _ in range(args.repeat):
            for name, warm_up in arms.items():
                results[name].append(measure(warm_up, args.think, args.fresh, fake, args.latency))
    finally:
        fake.stop()
    project = "fresh project" if args.fresh else "existing store"
    print(
        f"think {args.think:.1f} s, model latency {args.latency:.2f} s, {project}, "
        f"{args.repeat} kernels per arm (medians, ms)"
    )
    for name, runs in results.items():
        row = {}
        for cell in ("first", "warm"):
            for point in ("status", "text", "done"):
                row[f"{cell}.{point}"] = statistics.median(r[cell][point] for r in runs) * 1000
        ratio = row["first.text"] / row["warm.text"]
        print(
            f"{name:5s} first: status {row['first.status']:7.0f}  text {row['first.text']:7.0f}"
            f"  done {row['first.done']:7.0f} | warm cell: status {row['warm.status']:5.0f}"
            f"  text {row['warm.text']:5.0f} | first/warm text {ratio:5.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
