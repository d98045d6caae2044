"""A real llama.cpp ``llama-server`` serving SmolLM2-135M-Instruct, for tests and benchmarks.

``scripts/llama_server.sh`` builds the binary and fetches the model into a cache folder keyed by
the version (``scripts/install.sh`` runs it; nothing is built here). ``LlamaServer`` starts the
binary on a free port of 127.0.0.1 with greedy sampling (``--temp 0 --seed 1``: the same prompt
gives the same answer), waits for ``/health`` in a bounded loop, and can be killed (SIGKILL) and
started again on the same port. Its log (one line per request) is kept in a file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import httpx2

from tests.postgres_server import free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "llama_server.sh"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL = "smollm2"  # the name our requests carry (llama-server serves its one model whatever it is)
CONTEXT = 2048  # -c: the context window the tests overflow
START_TIMEOUT = 120.0  # seconds for the model to load on a busy 2-core machine


class NotBuilt(Exception):
    """The binary or the model is not in the cache: ``scripts/install.sh`` was not run."""


def cache_dir() -> Path:
    """The folder ``scripts/llama_server.sh`` builds into (it owns the version)."""
    out = subprocess.run(
        ["bash", str(SCRIPT), "--where"], capture_output=True, text=True, check=True, timeout=30
    )
    return Path(out.stdout.strip())


def installed() -> tuple[Path, Path]:
    """(binary, model), or ``NotBuilt`` saying how to get them."""
    folder = cache_dir()
    binary, model = folder / "llama-server", folder / MODEL_FILE
    missing = [str(p) for p in (binary, model) if not p.exists()]
    if missing:
        raise NotBuilt(
            f"llama-server or its model is missing ({', '.join(missing)}): run "
            "scripts/install.sh (or scripts/llama_server.sh alone; ~12 min the first time)"
        )
    return binary, model


class LlamaServer:
    """One ``llama-server`` process (``start``, ``kill``, ``start`` again on the same port)."""

    def __init__(self, *, threads: int = 2, port: int | None = None) -> None:
        self.binary, self.model = installed()
        self.threads = threads
        self.port = port or free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="agi-llama-"))
        self.log_path = self.folder / "server.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def command(self) -> list[str]:
        return [
            str(self.binary),
            "-m",
            str(self.model),
            "--jinja",
            "-c",
            str(CONTEXT),
            "-t",
            str(self.threads),
            "--temp",
            "0",
            "--seed",
            "1",
            "--parallel",
            "1",  # one slot: the whole -c is the one request's window
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.wait_healthy()

    def wait_healthy(self) -> None:
        """Until ``/health`` answers 200 (503 while the model loads), within START_TIMEOUT."""
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT
        with httpx2.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"llama-server exited at start:\n{self.log_tail()}")
                try:
                    if client.get(f"{self.root}/health").status_code == 200:
                        return
                except httpx2.HTTPError:
                    pass
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"llama-server not healthy in {START_TIMEOUT:.0f} s:\n{self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL: the process ends mid-whatever, as in a crash."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def requests_logged(self, path: str) -> int:
        """How many requests to ``path`` the server logged (``request: POST /path ...``)."""
        return sum(1 for line in self.log_text().splitlines() if f"request: POST {path} " in line)
