"""agi-jupyter installs beside jupyter-ai 3: the resolver finds one environment holding both,
for Python 3.11, with the jupyter-ai the user asked for (not an old 2.x picked to make room).

jupyter-ai >= 3.2 pins ``agent-client-protocol<0.12`` (jupyter-ai-acp-client) and ``mcp<2``
(jupyter-server-mcp -> fastmcp 3): agi-jupyter accepts that ACP version, and its MCP SDK (2.x)
is the ``mcp`` extra. Needs the package index (as CI has)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.test_packaging_wheel import REPO, run, uv

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

__all__ = ["uv"]


def _pins(text: str) -> dict[str, str]:
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", text, flags=re.MULTILINE))


def test_agi_jupyter_resolves_together_with_jupyter_ai_3_2(uv: str, tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.in"
    requirements.write_text(f"agi-jupyter @ {REPO.as_uri()}\njupyter-ai>=3.2\n")

    out = run(
        [
            uv,
            "pip",
            "compile",
            str(requirements),
            "--python-version",
            "3.11",
            "--no-header",
            "--quiet",
            "-o",
            str(tmp_path / "requirements.txt"),
        ]
    )

    pins = _pins((tmp_path / "requirements.txt").read_text())
    assert "agi-jupyter @ file://" in (tmp_path / "requirements.txt").read_text(), out
    major, minor = (int(p) for p in pins["jupyter-ai"].split(".")[:2])
    assert (major, minor) >= (3, 2)
    assert pins["agent-client-protocol"].startswith("0.11.")
    assert int(pins["mcp"].split(".")[0]) < 2  # jupyter-ai's: agi's MCP features say so


def test_with_jupyter_ais_mcp_1_the_mcp_features_say_what_they_need(
    uv: str, tmp_path: Path
) -> None:
    site = tmp_path / "mcp1"
    run([uv, "pip", "install", "--quiet", "--no-deps", "--target", str(site), "mcp==1.30.0"])
    project = tmp_path / "proj"
    (project / ".agi").mkdir(parents=True)
    (project / ".agi" / "mcp.json").write_text('{"mcpServers": {"t": {"command": "true"}}}')
    agi = str(Path(sys.executable).parent / "agi")
    env = {**os.environ, "PYTHONPATH": str(site), "HOME": str(tmp_path)}

    listed = subprocess.run(
        [agi, "tools", "--json", "--project", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    served = subprocess.run(
        [agi, "mcp", "--project", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )

    need = "the MCP features need mcp>=2.3, and mcp 1.30.0 is installed"
    assert listed.returncode == 0, listed.stderr
    assert f"agi: MCP server t failed: {need}" in listed.stderr
    assert "fs.read" in listed.stdout  # everything else works
    assert served.returncode != 0
    assert need in served.stderr
