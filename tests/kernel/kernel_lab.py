"""A JupyterLab for the kernel's browser test: offline, isolated, our server extension off.

JupyterLab runs as its own process (``--allow-root``, token auth, a free port, temporary root,
HOME and Jupyter config/data dirs); its kernels inherit ``AGI_FAKE_LLM_URL`` (the test's fake
server) and no provider key. Only the notebook front doors are exercised here (the widget and
the magics come from the kernel), so the agi server extension is disabled.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("AGI_TEST_ARTIFACTS", REPO / "test-artifacts")) / "kernel"
PROVIDER_KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY",
    "AGI_MODEL",
    "AGI_AGENT",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path
    process: subprocess.Popen[bytes]

    def open_url(self, path: str) -> str:
        return f"{self.url}/lab/tree/{path}?token={self.token}"

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        request = urllib.request.Request(f"{self.url}/api/shutdown", method="POST")
        request.add_header("Authorization", f"token {self.token}")
        with contextlib.suppress(OSError, urllib.error.URLError):
            urllib.request.urlopen(request, timeout=5).close()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def start_lab(base: Path, fake_url: str, timeout: float = 60.0) -> Lab:
    root = base / "root"
    root.mkdir(parents=True, exist_ok=True)
    config = base / "jupyter-config"
    config.mkdir(exist_ok=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"agi_jupyter": False}}})
    )
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_KEYS}
    env.update(
        {
            "HOME": str(base / "home"),
            "JUPYTER_CONFIG_DIR": str(config),
            "JUPYTER_DATA_DIR": str(base / "jupyter-data"),
            "JUPYTER_RUNTIME_DIR": str(base / "jupyter-runtime"),
            "IPYTHONDIR": str(base / "home" / ".ipython"),
            "AGI_CONFIG_DIR": str(base / "home" / ".config" / "agi"),
            "AGI_FAKE_LLM_URL": fake_url,
            "PYTHONUNBUFFERED": "1",
        }
    )
    (base / "home").mkdir(exist_ok=True)
    token, port = secrets.token_hex(16), free_port()
    log = base / "jupyterlab.log"
    command = [
        str(Path(sys.executable).with_name("jupyter-lab")),
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root)
    lab = Lab(f"http://127.0.0.1:{port}", token, root, log, process)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited early:\n{lab.log_tail()}")
        try:
            urllib.request.urlopen(f"{lab.url}/api/status?token={token}", timeout=2).close()
            return lab
        except (OSError, urllib.error.URLError):
            time.sleep(0.25)
    lab.stop()
    raise RuntimeError(f"JupyterLab did not start:\n{lab.log_tail()}")
