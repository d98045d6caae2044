"""Turn 200 of a long session: what the request weighs and costs the client, window off and on
(issue 25).

Builds two copies of one session of ``--turns`` - 1 stored turns of a data scientist's kind
(a question, a tool call with a ``--output``-character result, an answer of a few hundred
characters), then asks turn ``--turns`` of each through ``Agi.ask`` on ``openai-chat:gpt-4o-mini``
against the fake LLM server in its own process (its CPU is not counted), ``--repeat`` times,
the two sides alternating:

- ``off``: the window off (``max_history_messages: null``, a 10M-token ``context_window``,
  ``compaction: false``): every message is sent, as before issue 25;
- ``on``: the default config (50 messages, the catalog's 128k window, compaction on). Its
  warm-up round makes the compaction (a model call of its own, timed apart: ``compaction``);
  the measured rounds are the steady state after it.

Printed per side: the request body (bytes, and the context estimate in tokens), the messages
sent, and the medians of the client's wall time and CPU time (this process) for the whole
``ask``.

    .venv/bin/python benchmarks/long_session.py [--turns 200] [--output 4000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from runtime_overhead import start_server

from agi_jupyter.app import Agi
from agi_jupyter.records import TextPart, ToolCallPart, ToolResultPart
from agi_jupyter.store import Store
from agi_jupyter.testing import FakeLLMClient, Turn

MODEL = "openai-chat:gpt-4o-mini"
WINDOW_OFF = {
    "max_history_messages": None,
    "compaction": False,
    "models": {MODEL: {"context_window": 10_000_000}},
}


def build(store: Store, session_id: str, turns: int, output: int) -> None:
    frame = "   col_a  col_b  col_c\n" + "".join(
        f"{i:5d}  {i * 0.5:5.1f}  {i % 7:5d}\n" for i in range(output // 22)
    )
    for i in range(turns):
        store.add_message(session_id, "user", [TextPart(text=f"Step {i}: look at df_{i}")])
        call = ToolCallPart(tool_call_id=f"call_{i:04d}", name="python", arguments={"code": "df"})
        store.add_message(session_id, "assistant", [call])
        result = ToolResultPart(tool_call_id=call.tool_call_id, name="python", output=frame)
        store.add_message(session_id, "tool", [result])
        answer = f"df_{i} has {output // 22} rows; col_b is half of col_a. " * 8
        store.add_message(session_id, "assistant", [TextPart(text=answer)])


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--output", type=int, default=4000, help="characters of each tool result")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    process, url = start_server()
    fake = FakeLLMClient(url, timeout=60)
    env = {"HOME": tempfile.mkdtemp(), "OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": url + "/v1"}
    results: dict[str, dict[str, Any]] = {}
    try:
        with tempfile.TemporaryDirectory() as off_dir, tempfile.TemporaryDirectory() as on_dir:
            sides = {
                "off": Agi(off_dir, env=env, config=WINDOW_OFF),
                "on": Agi(on_dir, env=env),
            }
            sessions = {}
            for name, agi in sides.items():
                sessions[name] = agi.new_session(agent="plan", model=MODEL).id
                build(agi.store, sessions[name], args.turns - 1, args.output)
            runs: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
            for round_ in range(args.repeat + 1):  # round 0 warms up (and compacts: "on")
                order = ("off", "on") if round_ % 2 else ("on", "off")
                for name in order:
                    agi, session = sides[name], sessions[name]
                    if name == "on" and round_ == 0:  # the compaction's request comes first
                        fake.enqueue(Turn(text="Summary: 199 steps over data frames."))
                    fake.enqueue(Turn(text="Done: the step is looked at."))
                    took = timed(partial(agi.ask, f"Step {args.turns}: go", session=session))
                    body = fake.requests()[-1].body
                    if round_ == 0 and name == "on":
                        results.setdefault(name, {})["compaction"] = took
                    if round_:
                        runs[name].append(took)
                        gauge = agi.history(session, view="full")[-1].meta.get("context", {})
                        results.setdefault(name, {}).update(
                            bytes=len(json.dumps(body)),
                            messages=len(body["messages"]) - 1,
                            estimate=gauge.get("tokens"),
                        )
            for agi in sides.values():
                agi.close()
    finally:
        process.kill()
    print(f"turn {args.turns} of a session ({args.output}-character tool results), {MODEL}")
    heads = ("body bytes", 11), ("est. tokens", 12), ("messages", 9), ("wall ms", 9), ("cpu ms", 8)
    print(f"{'':6} " + " ".join(f"{h:>{w}}" for h, w in heads))
    for name in ("off", "on"):
        wall = statistics.median(w for w, _ in runs[name]) * 1000
        cpu = statistics.median(c for _, c in runs[name]) * 1000
        r = results[name]
        print(
            f"{name:6} {r['bytes']:>11,} {r['estimate'] or 0:>12,} {r['messages']:>9} "
            f"{wall:>9.1f} {cpu:>8.1f}"
        )
    wall, cpu = results["on"]["compaction"]
    print(f"on, first request (and compaction): wall {wall * 1e3:.0f} ms, cpu {cpu * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
