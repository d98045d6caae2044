"""Real model servers serving SmolLM2-135M-Instruct, for tests and benchmarks: llama.cpp's
``llama-server`` and llama-cpp-python's ``python -m llama_cpp.server``.

``scripts/llama_server.sh`` builds llama.cpp once (``llama-server`` and its shared libraries),
installs llama-cpp-python's server in a venv of its own that loads those same libraries, and
fetches the model, all into a cache folder keyed by the version (``scripts/install.sh`` runs it;
nothing is built here). ``LlamaServer`` / ``LlamaCppPythonServer`` start one on a free port of
127.0.0.1, greedy (the same prompt gives the same answer), wait until it answers in a bounded
loop, and can be killed (SIGKILL) and started again on the same port. The log (one line per
request) is kept in a file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import orjson

from tests.postgres_server import free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "llama_server.sh"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL = "smollm2"  # the name our requests carry (both servers serve their one model whatever it is)
CONTEXT = 2048  # the context window (-c / --n_ctx) the tests overflow
START_TIMEOUT = 120.0  # seconds for the model to load on a busy 2-core machine


class NotBuilt(Exception):
    """Something is not in the cache: ``scripts/install.sh`` was not run."""


@dataclass(frozen=True)
class Installed:
    """What ``scripts/llama_server.sh`` put in its cache folder."""

    folder: Path

    @property
    def bin(self) -> Path:
        """``llama-server`` and the shared libraries (``libllama.so``...) it and llama-cpp-python
        load."""
        return self.folder / "bin"

    @property
    def llama_server(self) -> Path:
        return self.bin / "llama-server"

    @property
    def python(self) -> Path:
        """The venv's interpreter, with llama-cpp-python[server] installed."""
        return self.folder / "venv" / "bin" / "python"

    @property
    def model(self) -> Path:
        return self.folder / MODEL_FILE

    def require(self, *paths: Path) -> None:
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise NotBuilt(
                f"missing {', '.join(missing)}: run scripts/install.sh "
                "(or bash scripts/llama_server.sh alone; ~12 min the first time)"
            )


def installed() -> Installed:
    """The cache folder ``scripts/llama_server.sh`` builds into (it owns the version)."""
    out = subprocess.run(
        ["bash", str(SCRIPT), "--where"], capture_output=True, text=True, check=True, timeout=30
    )
    return Installed(Path(out.stdout.strip()))


class ModelServer(ABC):
    """One model server process (``start``, ``kill``, ``start`` again on the same port). What
    differs between servers: ``command()``, ``env()`` and the path that answers 200 once the
    model is loaded (``ready_path``)."""

    name = "model server"
    ready_path = "/health"

    def __init__(self, *, threads: int = 2, port: int | None = None) -> None:
        self.installed = installed()
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

    @abstractmethod
    def command(self) -> list[str]:
        """The server's command line."""

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env(),
                start_new_session=True,
            )
        self.wait_ready()

    def wait_ready(self) -> None:
        """Until ``ready_path`` answers 200 (llama-server's ``/health`` says 503 while the
        model loads; llama-cpp-python listens once it is loaded), within START_TIMEOUT."""
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT
        with httpx2.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"{self.name} exited at start:\n{self.log_tail()}")
                try:
                    if client.get(f"{self.root}{self.ready_path}").status_code == 200:
                        return
                except httpx2.HTTPError:
                    pass
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} not ready in {START_TIMEOUT:.0f} s:\n{self.log_tail()}")

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


class LlamaServer(ModelServer):
    """llama.cpp's ``llama-server`` (``--temp 0 --seed 1``, one slot)."""

    name = "llama-server"

    def __init__(self, *, threads: int = 2, port: int | None = None) -> None:
        super().__init__(threads=threads, port=port)
        self.installed.require(self.installed.llama_server, self.installed.model)

    def command(self) -> list[str]:
        return [
            str(self.installed.llama_server),
            "-m",
            str(self.installed.model),
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

    def requests_logged(self, path: str) -> int:
        """How many requests to ``path`` the server logged (``request: POST /path ...``)."""
        return sum(1 for line in self.log_text().splitlines() if f"request: POST {path} " in line)


class LlamaCppPythonServer(ModelServer):
    """llama-cpp-python's own server (FastAPI + uvicorn) on the cache's ``libllama.so``
    (``LLAMA_CPP_LIB_PATH``). It samples as each request says: greedy with ``temperature: 0``."""

    name = "llama-cpp-python"
    ready_path = "/v1/models"

    def __init__(self, *, threads: int = 2, port: int | None = None) -> None:
        super().__init__(threads=threads, port=port)
        self.installed.require(self.installed.python, self.installed.bin, self.installed.model)

    def command(self) -> list[str]:
        return [
            str(self.installed.python),
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.installed.model),
            "--model_alias",
            MODEL,
            "--n_ctx",
            str(CONTEXT),
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            "--seed",
            "1",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]

    def env(self) -> dict[str, str]:
        return {**os.environ, "LLAMA_CPP_LIB_PATH": str(self.installed.bin)}

    def statuses_logged(self, path: str) -> list[int]:
        """The status of each request to ``path`` in uvicorn's access log
        (``"POST /path HTTP/1.1" 200 OK``), in order."""
        statuses = []
        for line in self.log_text().splitlines():
            _, found, rest = line.partition(f'"POST {path} HTTP/1.1" ')
            if found:
                statuses.append(int(rest.split()[0]))
        return statuses


@dataclass(frozen=True)
class RawAnswer:
    text: str
    usage: dict[str, Any]  # as the stream's last chunk says it ({} when it says nothing)


def chat(system: str, prompt: str) -> list[dict[str, Any]]:
    """The messages of a first turn, as a run sends them."""
    return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]


def raw_chat(server: ModelServer, messages: list[dict[str, Any]], max_tokens: int) -> RawAnswer:
    """The request a run sends, sent raw (httpx2, no SDK, no runtime), streamed, greedy."""
    body = {
        "model": MODEL,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": max_tokens,
        "temperature": 0,
    }
    text: list[str] = []
    usage: dict[str, Any] = {}
    with httpx2.stream("POST", f"{server.base_url}/chat/completions", json=body, timeout=120) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = orjson.loads(line[6:])
            for choice in chunk.get("choices") or []:
                text.append(choice["delta"].get("content") or "")
            usage = chunk.get("usage") or usage
    return RawAnswer("".join(text), usage)
