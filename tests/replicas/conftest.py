"""Several ``jupyter server`` processes with the extension, sharing one PostgreSQL database.

``start_replicas`` starts them over one root folder (so the default project's key, its
absolute path, is the same for all) with ``AGI_DATABASE_URL`` pointing at the test process's
PostgreSQL database and every model request going to one fake LLM server of the test process,
which records them all: the count of requests is the count of runs executed, across replicas.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from agi_jupyter.testing import FakeLLMServer
from tests.jupyterlab_server import free_port, offline_env

STALE_AFTER = 15.0  # seconds: a replica silent this long has its runs recovered


@dataclass
class Replica:
    name: str
    base: str  # http://127.0.0.1:PORT
    token: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=f"{self.base}/agi/v1", headers=self.headers, **kwargs)

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        with self.client(timeout=60) as client:
            response = client.request(method, path, **kwargs)
        assert response.status_code < 300, (response.status_code, response.text)
        return response.json()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(f"{self.base}/api/shutdown", headers=self.headers, timeout=10)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def start_replica(name: str, root: Path, env: dict[str, str], logs: Path) -> Replica:
    token, port = secrets.token_hex(16), free_port()
    command = [
        str(Path(sys.executable).with_name("jupyter")), "server", "--no-browser",
        "--allow-root", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
        f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}",
        "--AgiExtensionApp.tick_interval=2", "--AgiExtensionApp.heartbeat_interval=0",
        f"--AgiExtensionApp.stale_after={STALE_AFTER}", "--AgiExtensionApp.freeze_gc=False",
    ]  # fmt: skip
    log = logs / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    return Replica(name, f"http://127.0.0.1:{port}", token, process, log)


def wait_ready(replica: Replica, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if replica.process.poll() is not None:
            raise RuntimeError(f"{replica.name} exited:\n{replica.log_tail()}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{replica.base}/agi/v1/stats", headers=replica.headers).is_success:
                return
        time.sleep(0.25)
    raise RuntimeError(f"{replica.name} did not answer:\n{replica.log_tail()}")


def replica_env(root: Path, postgres_url: str, fake_url: str) -> dict[str, str]:
    return offline_env(
        AGI_DATABASE_URL=postgres_url,
        AGI_FAKE_LLM_URL=fake_url,
        AGI_MODEL="fake:echo",
        HOME=str(root / "home"),
        AGI_CONFIG_DIR=str(root / "agi-config"),
    )


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def replica_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("replicas")
    (root / "project").mkdir()
    (root / "logs").mkdir()
    return root


@pytest.fixture(scope="module")
def env(replica_root: Path, postgres_url: str, fake: FakeLLMServer) -> dict[str, str]:
    return replica_env(replica_root, postgres_url, fake.openai_base_url)


@pytest.fixture(scope="module")
def replicas(replica_root: Path, env: dict[str, str]) -> Iterator[list[Replica]]:
    """Three replicas of one service over the root ``project`` folder."""
    started = [
        start_replica(name, replica_root / "project", env, replica_root / "logs")
        for name in ("a", "b", "c")
    ]
    try:
        for replica in started:
            wait_ready(replica)
        yield started
    finally:
        for replica in started:
            replica.stop()


def sse_events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """Parse a text/event-stream: {"event", "id", "data"} per event, plus ``{}`` for the
    keep-alive comment that says the stream is subscribed."""
    event: dict[str, Any] = {}
    data: list[str] = []
    for line in response.iter_lines():
        if line.startswith(":"):
            yield {}
        elif not line:
            if data:
                yield {**event, "data": json.loads("\n".join(data))}
            event, data = {}, []
        else:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                data.append(value)
            else:
                event[field] = value
