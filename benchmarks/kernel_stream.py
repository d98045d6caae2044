"""``%%agi`` vs the raw OpenAI SDK for a 2,000-token streamed answer, in a real kernel.

The fake LLM server (in this process) streams one Chat Completions answer of ``--tokens``
word chunks, paced at ``--pace`` seconds between chunks (0 = as fast as the socket goes; a real
model streams 50-200 tokens/s, i.e. 0.005-0.02 s). In one kernel, alternately:

- raw: ``client.chat.completions.create(stream=True)`` (one ``openai.OpenAI`` client made
  beforehand) consumed in a cell that
  shows the growing answer through a display handle, updated at most 20 times a second — the
  least a notebook front end must do to stream an answer;
- agi: a ``%%agi --new --fresh`` cell (new session, no replay): run on the runtime thread,
  events persisted and followed, the display handle updated at most 20 times a second, final
  Markdown, the run, messages and usage stored in SQLite.

Wall time is measured by the client from ``execute`` to the kernel going idle. Round 0 warms
both paths up; medians of the following rounds and their ratio agi/raw are reported (goal
<= 1.10x at a realistic pace).

    .venv/bin/python benchmarks/kernel_stream.py                 # 2,000 tokens, pace 0.005 s
    .venv/bin/python benchmarks/kernel_stream.py --pace 0        # pure overhead
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import sys
import tempfile
import time
from typing import Any

from jupyter_client.manager import start_new_kernel

from agi_jupyter.testing import FakeLLMServer, Fault, Turn

SETUP = """
from openai import OpenAI
_client = OpenAI(base_url={base!r}, api_key="x", max_retries=0)
"""
RAW = """
import time as _time
from IPython.display import display
_handle = display({"text/plain": ""}, raw=True, display_id=True)
_text, _last = "", 0.0
for _chunk in _client.chat.completions.create(
    model="echo", messages=[{"role": "user", "content": "Write 2000 words."}], stream=True
):
    if _chunk.choices and _chunk.choices[0].delta.content:
        _text += _chunk.choices[0].delta.content
        if _time.monotonic() - _last >= 0.05:
            _last = _time.monotonic()
            _handle.update({"text/markdown": _text, "text/plain": _text}, raw=True)
_handle.update({"text/markdown": _text, "text/plain": _text}, raw=True)
len(_text.split())
"""
AGI = "%%agi --new --fresh\nWrite 2000 words."


def run_cell(kc: Any, code: str, timeout: float = 300) -> float:
    start = time.perf_counter()
    msg_id = kc.execute(code)
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=timeout)
        except queue.Empty as e:
            raise RuntimeError("the kernel did not finish the cell") from e
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "error":
            raise RuntimeError("\n".join(msg["content"]["traceback"]))
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--pace", type=float, default=0.005)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    words = [f"w{i} " for i in range(args.tokens)]
    fault = Fault(stall_between_events=args.pace) if args.pace else None
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as folder:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update({"AGI_FAKE_LLM_URL": server.url, "HOME": folder, "AGI_MODEL": "fake:echo"})
        km, kc = start_new_kernel(kernel_name="python3", cwd=folder, env=env)
        try:
            run_cell(kc, "%load_ext agi_jupyter")
            run_cell(kc, SETUP.format(base=server.openai_base_url))
            times: dict[str, list[float]] = {"raw": [], "agi": []}
            for round_ in range(args.repeat + 1):
                for name, code in (("raw", RAW), ("agi", AGI)):
                    server.enqueue(Turn(chunks=words, usage=(10, args.tokens), fault=fault))
                    elapsed = run_cell(kc, code)
                    if round_ > 0:
                        times[name].append(elapsed)
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    raw, agi = statistics.median(times["raw"]), statistics.median(times["agi"])
    print(f"{args.tokens} tokens, pace {args.pace} s, {args.repeat} rounds (medians)")
    print(f"  raw SDK + display handle : {raw * 1000:8.1f} ms")
    print(f"  %%agi                    : {agi * 1000:8.1f} ms")
    print(f"  overhead                 : {(agi - raw) * 1000:8.1f} ms, ratio {agi / raw:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
