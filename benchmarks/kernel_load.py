"""``%load_ext agi_jupyter`` vs ``%load_ext jupyter_ai_magic_commands``, in real kernels.

Each measurement starts a fresh kernel (so nothing is imported yet), then times one cell
that loads the extension (``time.perf_counter`` around ``run_line_magic("load_ext", ...)``
inside the kernel). Extensions alternate; medians are reported. Kernels run with this script's
interpreter, so both packages must be installed in it; jupyter-ai-magic-commands is not a
dependency of agi-jupyter, install it in a separate virtualenv for the comparison::

    uv venv /tmp/jai && uv pip install --python /tmp/jai/bin/python \\
        jupyter-ai-magic-commands ipykernel -e .
    /tmp/jai/bin/python benchmarks/kernel_load.py --repeat 7

An extension that is not installed is reported as such.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile

from jupyter_client.manager import start_new_kernel

CELL = """
import time as _t, sys as _s, json as _j
_before = set(_s.modules)
_start = _t.perf_counter()
get_ipython().run_line_magic("load_ext", {name!r})
_elapsed = _t.perf_counter() - _start
_heavy = [m for m in ("openai", "anthropic", "langchain_core", "ipywidgets", "anywidget")
          if m in _s.modules]
print(_j.dumps({{"elapsed": _elapsed, "modules": len(set(_s.modules) - _before),
                 "heavy": _heavy}}))
"""


def measure(name: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as cwd:
        km, kc = start_new_kernel(kernel_name="python3", cwd=cwd)
        try:
            kc.execute(CELL.format(name=name))
            while True:
                msg = kc.get_iopub_msg(timeout=120)
                if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                    return dict(json.loads(msg["content"]["text"].strip().splitlines()[-1]))
                if msg["msg_type"] == "error":
                    raise RuntimeError("\n".join(msg["content"]["traceback"]))
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    names = ["agi_jupyter", "jupyter_ai_magic_commands"]
    installed = [n for n in names if importlib.util.find_spec(n) is not None]
    for name in set(names) - set(installed):
        print(f"{name}: not installed in {sys.executable}; skipped")
    results: dict[str, list[dict[str, object]]] = {n: [] for n in installed}
    for _ in range(args.repeat):
        for name in installed:
            results[name].append(measure(name))
    medians = {}
    for name, runs in results.items():
        times = [float(str(r["elapsed"])) * 1000 for r in runs]
        medians[name] = statistics.median(times)
        print(
            f"{name:28s} median {medians[name]:8.1f} ms  (min {min(times):.1f}, max "
            f"{max(times):.1f}; {runs[-1]['modules']} modules imported; heavy: "
            f"{runs[-1]['heavy'] or 'none'})"
        )
    if len(medians) == 2:
        ratio = medians["agi_jupyter"] / medians["jupyter_ai_magic_commands"]
        print(f"ratio agi_jupyter / jupyter_ai_magic_commands = {ratio:.3f}x (goal <= 0.3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
