"""The installed-wheel check: a wheel built from this tree, installed into a fresh environment
with no node on the PATH, shows the side panel and the server extension to Jupyter.

The wheel must carry the prebuilt panel (``share/jupyter/labextensions/agi-jupyter``) and the
server-extension config (``etc/jupyter/jupyter_server_config.d``): a plain ``pip install``
needs neither node nor a JupyterLab build step.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAB_PREFIX = "agi_jupyter-0.1.0.data/data/share/jupyter/labextensions/agi-jupyter/"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def run(command: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> str:
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)  # no colours
    assert done.returncode == 0, f"{' '.join(command)} failed ({done.returncode}):\n{output}"
    return output


@pytest.fixture(scope="module")
def uv() -> str:
    """The uv executable itself (not a pyenv shim, which needs bash on the PATH)."""
    found = shutil.which("uv")
    if found is None:
        pytest.fail("uv is not on the PATH (scripts/install.sh installs it)")
    if Path(found).read_bytes()[:2] == b"#!" and shutil.which("pyenv"):
        found = run(["pyenv", "which", "uv"]).strip().splitlines()[-1]
    return found


@pytest.fixture(scope="module")
def wheel(uv: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run([uv, "build", "--wheel", "--out-dir", str(out), str(REPO)])
    (built,) = out.glob("agi_jupyter-*.whl")
    return built


def test_the_wheel_carries_the_prebuilt_panel_and_the_server_config(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert LAB_PREFIX + "package.json" in names
    assert LAB_PREFIX + "install.json" in names
    assert LAB_PREFIX + "static/style.js" in names
    assert any(re.match(re.escape(LAB_PREFIX) + r"static/remoteEntry\.\w+\.js$", n) for n in names)
    assert LAB_PREFIX + "schemas/agi-jupyter/panel.json" in names
    assert (
        "agi_jupyter-0.1.0.data/data/etc/jupyter/jupyter_server_config.d/agi_jupyter.json" in names
    )
    assert not [n for n in names if "node_modules" in n or n.endswith((".ts", ".tsx"))]


def test_a_fresh_environment_without_node_reports_both_extensions_ok(
    uv: str, wheel: Path, tmp_path: Path
) -> None:
    cache = run([uv, "cache", "dir"]).strip().splitlines()[-1]
    venv = tmp_path / "venv"
    run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)])
    bin_dir = venv / "bin"
    # The machine's settings (certificates, package indexes) stay; the PATH is only the new
    # environment's bin (no node, no other Python), Jupyter's user dirs are empty.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "VIRTUAL_ENV"))}
    env.update({"PATH": str(bin_dir), "HOME": str(tmp_path / "home"), "UV_CACHE_DIR": cache})
    assert shutil.which("node", path=env["PATH"]) is None
    run([uv, "pip", "install", "--quiet", "--python", str(bin_dir / "python"), str(wheel),
         "jupyterlab"], env=env)  # fmt: skip

    labextensions = run([str(bin_dir / "jupyter"), "labextension", "list"], env=env)
    assert re.search(
        r"agi-jupyter v0\.1\.0 enabled\s+OK\s+\(python, agi-jupyter\)", labextensions
    ), labextensions
    assert str(venv / "share" / "jupyter" / "labextensions") in labextensions

    server = run([str(bin_dir / "jupyter"), "server", "extension", "list"], env=env)
    assert re.search(r"agi_jupyter\s+enabled", server), server
    assert re.search(r"agi_jupyter 0\.1\.0\s+OK", server), server
