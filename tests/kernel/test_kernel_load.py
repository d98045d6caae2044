"""``%load_ext agi_jupyter`` is cheap: no provider SDK, widget library or runtime is imported
by it; the runtime is warmed on a background thread afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.kernel.context import context_for

SCRIPT = """
import json, os, sys, time
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
config = Config()
config.HistoryManager.enabled = False
config.AgiMagics.warm_up = {warm_up}
ip = InteractiveShell.instance(config=config)
heavy = ["openai", "anthropic", "anywidget", "ipywidgets", "tornado", "sqlite_utils",
         "pydantic", "agi_jupyter.app", "agi_jupyter.store", "agi_jupyter.providers",
         "mcp", "acp"]
start = time.perf_counter()
ip.run_line_magic("load_ext", "agi_jupyter")
elapsed = time.perf_counter() - start
loaded = [m for m in heavy if m in sys.modules]
from agi_jupyter.kernel.context import context_for
ctx = context_for(ip)
if ctx.warm_up is not None:
    ctx.warm_up.join(90)
print(json.dumps({{
    "elapsed": elapsed,
    "loaded": loaded,
    "after_warm_up": [m for m in heavy if m in sys.modules],
    "warm_agi": ctx.has_agi,
    "files": sorted(os.listdir(".")),
    "magics": sorted(ip.magics_manager.magics["cell"]) + sorted(ip.magics_manager.magics["line"]),
}}))
"""


def _load(tmp_path: Path, *, warm_up: bool) -> dict[str, Any]:
    env = {
        "HOME": str(tmp_path),
        "IPYTHONDIR": str(tmp_path / ".ipython"),
        "AGI_CONFIG_DIR": str(tmp_path / "agi-config"),
        "PATH": "/usr/bin",
    }
    cwd = tmp_path / "work"
    cwd.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(warm_up=warm_up)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.slow
def test_load_ext_imports_nothing_heavy(tmp_path: Path) -> None:
    report = _load(tmp_path, warm_up=False)
    assert report["loaded"] == []
    assert report["after_warm_up"] == []
    assert "agi" in report["magics"]
    # the time is measured in benchmarks/kernel_load.py; here only a sanity bound
    assert report["elapsed"] < 5


@pytest.mark.slow
def test_the_warm_up_loads_the_runtime_and_the_model_client_in_the_background(
    tmp_path: Path,
) -> None:
    report = _load(tmp_path, warm_up=True)
    warm = set(report["after_warm_up"])
    assert {"agi_jupyter.app", "agi_jupyter.store", "agi_jupyter.providers"} <= warm
    assert "openai" not in warm  # the default wire reads the stream without the SDK
    assert report["warm_agi"]
    assert report["files"] == []  # nothing written: the store opens on first use


def test_settings_changed_after_load_ext_replace_the_warm_runtime(
    shell: Any, project: Path, tmp_path: Path
) -> None:
    ctx = context_for(shell)
    assert ctx.agi.project == project
    other = tmp_path / "other"
    (other / ".agi").mkdir(parents=True)
    shell.magics_manager.registry["AgiMagics"].project = str(other)
    assert ctx.agi.project == other
