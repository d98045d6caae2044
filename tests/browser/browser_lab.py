"""A real JupyterLab server for the browser tests, isolated from the user's Jupyter setup.

JupyterLab runs as its own process (``--allow-root``, token auth, a free port, a temporary
root folder and Jupyter config/data dirs) with the fake LLM server behind it through
``AGI_FAKE_LLM_URL``, so every model call of the panel and of a notebook's ``%%agi`` goes to
the test's scripted fake. The side panel is loaded from the repository's build
(``agi_jupyter/labextension``) through ``JUPYTER_PATH``, so the tests always exercise the
current build; ``tests/packaging`` checks the installed-wheel path.
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
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BUILT_EXTENSION = REPO / "agi_jupyter" / "labextension"
PROVIDER_KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY",
    "AGI_MODEL",
    "AGI_AGENT",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def extension_dir() -> Path:
    """The built side panel: the repository's build, else an installed copy."""
    if (BUILT_EXTENSION / "static" / "style.js").is_file():
        return BUILT_EXTENSION
    installed = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "agi-jupyter"
    if (installed / "static" / "style.js").is_file():
        return installed
    raise RuntimeError(
        "the side panel is not built: run `npm install && npm run build:prod` in labextension/ "
        "(scripts/install.sh does it through the editable install)"
    )


@dataclass
class LabServer:
    url: str
    token: str
    root: Path
    log: Path
    process: subprocess.Popen[bytes]

    def lab_url(self, path: str = "lab") -> str:
        return f"{self.url}/{path}?token={self.token}"

    def api(self, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
        """A JSON request to the server (``path`` without the leading slash)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}/{path}", data=data, method=method)
        request.add_header("Authorization", f"token {self.token}")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError, urllib.error.URLError):
                self.api("POST", "api/shutdown", timeout=5)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def lab_env(base: Path, fake_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_KEYS}
    data = base / "jupyter-data"
    (data / "labextensions").mkdir(parents=True, exist_ok=True)
    link = data / "labextensions" / "agi-jupyter"
    if not link.exists():
        link.symlink_to(extension_dir(), target_is_directory=True)
    config = base / "jupyter-config"
    config.mkdir(exist_ok=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"agi_jupyter": True}}})
    )
    # No "get notified about Jupyter news?" toast over the screenshots.
    (config / "labconfig").mkdir(exist_ok=True)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    env.update(
        {
            "HOME": str(base / "home"),
            "JUPYTER_PATH": str(data),
            "JUPYTER_CONFIG_DIR": str(config),
            "JUPYTER_DATA_DIR": str(base / "jupyter-user-data"),
            "JUPYTER_RUNTIME_DIR": str(base / "jupyter-runtime"),
            "AGI_FAKE_LLM_URL": fake_url,
            "PYTHONUNBUFFERED": "1",
        }
    )
    (base / "home").mkdir(exist_ok=True)
    return env


def start_lab(base: Path, fake_url: str, timeout: float = 60.0) -> LabServer:
    """Start JupyterLab over ``base/root`` and wait until it and the ``/agi`` API answer."""
    root = base / "root"
    (root / ".agi").mkdir(parents=True, exist_ok=True)
    (root / ".agi" / "config.json").write_text(
        json.dumps({"default_model": "fake:echo", "default_agent": "build"})
    )
    env = lab_env(base, fake_url)
    token = secrets.token_hex(16)
    port = free_port()
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
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root)
    server = LabServer(f"http://127.0.0.1:{port}", token, root, log, process)
    try:
        _wait_ready(server, timeout)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: LabServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited early:\n{server.log_tail()}")
        try:
            server.api("GET", "api/status", timeout=2)
            server.api("GET", "agi/v1/agents", timeout=5)
            return
        except (OSError, urllib.error.URLError, ValueError) as e:
            last = e
            time.sleep(0.25)
    raise RuntimeError(f"JupyterLab or its /agi API did not answer ({last}):\n{server.log_tail()}")
