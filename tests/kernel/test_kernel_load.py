"""``%load_ext agi_jupyter`` is cheap: no provider SDK, widget library or runtime is imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import json, sys, time
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
config = Config()
config.HistoryManager.enabled = False
ip = InteractiveShell.instance(config=config)
start = time.perf_counter()
ip.run_line_magic("load_ext", "agi_jupyter")
elapsed = time.perf_counter() - start
heavy = ["openai", "anthropic", "anywidget", "ipywidgets", "tornado", "sqlite_utils",
         "pydantic", "agi_jupyter.app", "agi_jupyter.store", "agi_jupyter.providers",
         "mcp", "acp"]
print(json.dumps({
    "elapsed": elapsed,
    "loaded": [m for m in heavy if m in sys.modules],
    "magics": sorted(ip.magics_manager.magics["cell"]) + sorted(ip.magics_manager.magics["line"]),
}))
"""


@pytest.mark.slow
def test_load_ext_imports_nothing_heavy(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "IPYTHONDIR": str(tmp_path / ".ipython"), "PATH": "/usr/bin"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []
    assert "agi" in report["magics"]
    # the time is measured in benchmarks/kernel_load.py; here only a sanity bound
    assert report["elapsed"] < 5
