"""The lowest versions pyproject.toml accepts really work (issue 26.3): every direct dependency
at its lower bound (``uv pip compile --resolution lowest-direct``), installed in a fresh venv,
answers a tool-using run on each wire API through both read paths (``lowest_smoke.py``: the
HTTP reader and the openai / anthropic SDKs at their oldest), and the server extension loads.
Needs the package index (as CI has)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.packaging.test_packaging_wheel import REPO, run, uv

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

__all__ = ["uv"]

# The direct dependencies whose lower bounds the smoke run exercises, as pyproject.toml says.
BOUNDS = {
    "openai": "2.0.0",
    "anthropic": "0.60.0",
    "httpx2": "2.16.0",
    "pydantic": "2.11.0",
    "jupyter-server": "2.13.0",
}


def test_the_lowest_supported_versions_install_and_answer(uv: str, tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.in"
    requirements.write_text(f"agi-jupyter @ {REPO.as_uri()}\n")
    locked = tmp_path / "requirements.txt"
    run(
        [uv, "pip", "compile", str(requirements), "--python-version", "3.11", "--no-header",
         "--quiet", "--resolution", "lowest-direct", "-o", str(locked)]
    )  # fmt: skip
    text = locked.read_text()
    for name, version in BOUNDS.items():
        assert f"\n{name}=={version}\n" in f"\n{text}", f"{name} is not at its lower bound"
    venv = tmp_path / "venv"
    run([uv, "venv", "--quiet", "--python", "python3", str(venv)])
    python = str(venv / "bin" / "python")
    run([uv, "pip", "install", "--quiet", "--python", python, "-r", str(locked)])
    out = run([python, str(Path(__file__).with_name("lowest_smoke.py"))], timeout=300)
    assert out.count(" ok") == 6, out  # 3 wire APIs x 2 read paths
    points = "import agi_jupyter as a; print(a._jupyter_server_extension_points())"
    # -I: the venv's own agi_jupyter, not the checkout's in the working directory
    assert "agi_jupyter" in run([python, "-I", "-c", points])
    run([python, "-I", "-c", "import agi_jupyter.server.extension"])
