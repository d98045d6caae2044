"""agi-jupyter installs beside jupyter-ai 3: the resolver finds one environment holding both,
for Python 3.11, with the jupyter-ai the user asked for (not an old 2.x picked to make room).

jupyter-ai >= 3.2 pins ``agent-client-protocol<0.12`` (jupyter-ai-acp-client) and ``mcp<2``
(jupyter-server-mcp -> fastmcp 3): agi-jupyter accepts that ACP version, and its MCP SDK (2.x)
is the ``mcp`` extra. Needs the package index (as CI has)."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
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


def test_agi_jupyter_resolves_with_the_whole_ecosystem(uv: str, tmp_path: Path) -> None:
    """One environment for agi-jupyter, jupyter-ai 3.2+, notebook-intelligence and
    jupyter-collaboration (issue 26.3)."""
    requirements = tmp_path / "requirements.in"
    wanted = ("jupyter-ai>=3.2", "notebook-intelligence", "jupyter-collaboration")
    requirements.write_text("\n".join((f"agi-jupyter @ {REPO.as_uri()}", *wanted)) + "\n")
    locked = tmp_path / "requirements.txt"
    out = run(
        [uv, "pip", "compile", str(requirements), "--python-version", "3.11", "--no-header",
         "--quiet", "-o", str(locked)]
    )  # fmt: skip
    pins = _pins(locked.read_text())
    assert "agi-jupyter @ file://" in locked.read_text(), out
    assert {"jupyter-ai", "notebook-intelligence", "jupyter-collaboration"} <= set(pins)
    assert tuple(int(p) for p in pins["jupyter-ai"].split(".")[:2]) >= (3, 2)


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, token: str) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _wait_for_server(url: str, token: str, lab: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 300  # a cold start imports every extension (bounded)
    while time.monotonic() < deadline:
        assert lab.poll() is None, f"JupyterLab exited:\n{log.read_text()[-3000:]}"
        try:
            if _get(f"{url}/api/status", token)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail(f"JupyterLab did not answer:\n{log.read_text()[-3000:]}")


def test_one_jupyterlab_loads_both_extensions_labextensions_and_magics(
    uv: str, tmp_path: Path
) -> None:
    """A fresh environment with jupyter-ai >= 3.2 (and its magics, jupyter-ai-magics) beside
    agi-jupyter: one JupyterLab loads both server extensions and shows both panels' bundles,
    and one IPython loads both magics. ~1-2 min here (the install ~25 s with uv's cache; the
    rest is JupyterLab importing every extension once)."""
    venv = tmp_path / "venv"
    run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)])
    python, bin_dir = str(venv / "bin" / "python"), venv / "bin"
    run(
        [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python,
         f"agi-jupyter @ {REPO.as_uri()}", "jupyter-ai>=3.2", "jupyter-ai-magics",
         "jupyterlab>=4.2"]
    )  # fmt: skip
    project = tmp_path / "proj"
    (project / ".agi").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "VIRTUAL_ENV"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update({"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home")})

    magics = run([python, "-c", MAGICS, str(project)], env=env, timeout=300)
    assert "cell ['agi', 'ai'] line ['agi', 'ai']" in magics

    port, token = _free_port(), "beside-token"
    log = tmp_path / "lab.log"
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        lab = subprocess.Popen(
            [str(bin_dir / "jupyter-lab"), "--no-browser", "--allow-root", "--ip", "127.0.0.1",
             "--port", str(port), f"--ServerApp.token={token}",
             f"--ServerApp.root_dir={project}"],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=project,
        )  # fmt: skip
    try:
        _wait_for_server(url, token, lab, log)
        sessions = _get(f"{url}/agi/v1/sessions", token)
        page = _get(f"{url}/lab", token)
    finally:
        request = urllib.request.Request(
            f"{url}/api/shutdown", method="POST", headers={"Authorization": f"token {token}"}
        )
        with contextlib.suppress(OSError):
            urllib.request.urlopen(request, timeout=30).close()
        try:
            lab.wait(timeout=60)
        except subprocess.TimeoutExpired:
            lab.kill()
            lab.wait()
    text = log.read_text()
    assert sessions[0] == 200, sessions
    assert page[0] == 200
    for bundle in ("agi-jupyter", "@jupyter-ai/router", "@jupyter-ai/persona-manager"):
        assert f'"name": "{bundle}"' in page[1] or f'"name":"{bundle}"' in page[1], bundle
    for extension in ("agi_jupyter", "jupyter_ai_router", "jupyter_ai_persona_manager"):
        assert f"{extension} | extension was successfully loaded" in text, text[-3000:]
    assert "Traceback" not in text, text
    assert "failed to load" not in text.lower(), text


MAGICS = """
import os, sys
os.chdir(sys.argv[1])  # the project: %load_ext agi_jupyter opens it
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "jupyter_ai_magics")
ip.run_line_magic("load_ext", "agi_jupyter")
m = ip.magics_manager.magics
both = ("ai", "agi")
cell, line = (sorted(k for k in m[kind] if k in both) for kind in ("cell", "line"))
print("cell", cell, "line", line)
"""
