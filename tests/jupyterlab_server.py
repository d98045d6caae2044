"""A real JupyterLab process for the browser tests, isolated from the user's Jupyter setup.

Shared by ``tests/browser`` (the side panel, with the agi server extension on) and
``tests/kernel`` (the widget and magics, with it off): each builds its own environment and
arguments, this module starts the process on a free port with token auth, waits until it
answers, and stops it through ``/api/shutdown``.
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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agi_jupyter.store import Store, create_store

# Never inherited by the lab: every model call must go to the test's fake server.
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


def offline_env(**extra: str) -> dict[str, str]:
    """This process's environment without provider keys, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_KEYS}
    env.update({"PYTHONUNBUFFERED": "1", **extra})
    return env


@dataclass
class LabServer:
    url: str
    token: str
    root: Path
    log: Path
    process: subprocess.Popen[bytes]
    database_url: str | None = None  # the server's PostgreSQL store (None: SQLite in the root)

    def open_store(self) -> Store:
        """The store the server writes: the root's SQLite file, or its PostgreSQL database."""
        return create_store(self.root, database_url=self.database_url)

    def lab_url(self, path: str = "lab") -> str:
        return f"{self.url}/{path}?token={self.token}"

    def tree_url(self, path: str) -> str:
        """The URL that opens ``path`` (relative to the root) in JupyterLab."""
        return self.lab_url(f"lab/tree/{path}")

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


def start_jupyterlab(
    root: Path,
    env: dict[str, str],
    log: Path,
    *,
    extra_args: Sequence[str] = (),
    ready_paths: Sequence[str] = ("api/status",),
    timeout: float = 60.0,
    rtc: bool = False,
) -> LabServer:
    """Start JupyterLab over ``root`` and wait until every ``ready_paths`` route answers.

    Real-time collaboration (jupyter-collaboration, installed by the ``test`` extra) is off
    unless ``rtc``: the notebooks of the other tests are plain JupyterLab documents."""
    token, port = secrets.token_hex(16), free_port()
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
        f"--YDocExtension.disable_rtc={not rtc}",
        *extra_args,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root)
    server = LabServer(
        f"http://127.0.0.1:{port}", token, root, log, process, env.get("AGI_DATABASE_URL")
    )
    try:
        _wait_ready(server, ready_paths, timeout)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: LabServer, paths: Sequence[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited early:\n{server.log_tail()}")
        try:
            for path in paths:
                server.api("GET", path, timeout=5)
            return
        except (OSError, urllib.error.URLError, ValueError) as e:
            last = e
            time.sleep(0.25)
    raise RuntimeError(f"JupyterLab did not answer ({last}):\n{server.log_tail()}")


def start_jupyter_server(
    root: Path,
    env: dict[str, str],
    log: Path,
    *,
    extra_args: Sequence[str] = (),
    timeout: float = 60.0,
) -> LabServer:
    """A plain ``jupyter server`` (no JupyterLab) over ``root`` with the agi extension on,
    once ``/agi/openapi.json`` answers: for tests that measure the server process itself."""
    token, port = secrets.token_hex(16), free_port()
    command = [
        str(Path(sys.executable).with_name("jupyter-server")),
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.jpserver_extensions=agi_jupyter=True",
        *extra_args,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root)
    server = LabServer(
        f"http://127.0.0.1:{port}", token, root, log, process, env.get("AGI_DATABASE_URL")
    )
    try:
        _wait_ready(server, ("agi/openapi.json",), timeout)
    except BaseException:
        server.stop()
        raise
    return server
