"""Start a real Jupyter server with the agi extension, and the fake LLM server, for benchmarks.

Both run as their own processes (their CPU is not the client's); everything lives in a
temporary folder and is stopped on exit.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

VENV_BIN = Path(sys.executable).parent


@dataclass
class Servers:
    base: str  # http://127.0.0.1:PORT/agi/v1
    token: str
    fake_url: str
    root: Path
    pid: int

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# The fake LLM server is a socketserver with the standard listen backlog of 5. When a burst of
# 100 runs opens 100 connections to it at once, the kernel drops most SYNs (netstat: "times
# the listen queue of a socket overflowed") and each dropped connection waits for the 1 s SYN
# retransmission: a stall of the stand-in model that a real provider does not have. So the
# benchmarks start it with a backlog of 1024.
FAKE_LAUNCHER = (
    "import sys; from agi_jupyter.testing.handler import FakeHTTPServer; "
    "FakeHTTPServer.request_queue_size = 1024; "
    "from agi_jupyter.testing.fake_llm import main; sys.exit(main(sys.argv[1:]))"
)


def start_fake(backlog_fix: bool = True) -> tuple[subprocess.Popen[str], str]:
    module = ["-c", FAKE_LAUNCHER] if backlog_fix else ["-m", "agi_jupyter.testing.fake_llm"]
    process = subprocess.Popen(
        [sys.executable, *module, "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    return process, line.split("=", 1)[1]


@contextmanager
def servers(root: Path, *extra_args: str, backlog_fix: bool = True) -> Iterator[Servers]:
    fake, fake_url = start_fake(backlog_fix)
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "AGI_FAKE_LLM_URL": fake_url + "/v1",
        "AGI_MODEL": "fake:echo",
        "HOME": str(root / "home"),
        "AGI_CONFIG_DIR": str(root / "agi-config"),
    }
    env.pop("OPENAI_API_KEY", None)
    (root / "project").mkdir(parents=True, exist_ok=True)
    command = [
        str(VENV_BIN / "jupyter"), "server", "--no-browser", "--allow-root",
        f"--port={port}", "--ip=127.0.0.1", f"--ServerApp.token={token}",
        f"--ServerApp.root_dir={root / 'project'}", "--log-level=WARN",
        "--AgiExtensionApp.tick_interval=0", "--AgiExtensionApp.heartbeat_interval=0",
        *extra_args,
    ]  # fmt: skip
    server = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    running = Servers(
        f"http://127.0.0.1:{port}/agi/v1", token, fake_url, root / "project", server.pid
    )
    try:
        _wait_ready(running)
        yield running
    finally:
        with httpx.Client() as client:
            try:
                client.post(
                    f"http://127.0.0.1:{port}/api/shutdown", headers=running.headers, timeout=10
                )
                server.wait(timeout=20)
            except (httpx.HTTPError, subprocess.TimeoutExpired):
                server.terminate()
                server.wait(timeout=10)
        fake.terminate()
        fake.wait(timeout=10)


def _wait_ready(running: Servers, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client() as client:
        while time.monotonic() < deadline:
            try:
                if client.get(f"{running.base}/stats", headers=running.headers).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
    raise RuntimeError("the Jupyter server did not come up")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def syn_retransmits() -> int | None:
    """The machine's count of retransmitted SYNs so far (Linux ``/proc/net/netstat``; counts
    every process's connections): each one is a connection that waited ~1 s to open."""
    try:
        with open("/proc/net/netstat") as netstat:
            lines = netstat.read().splitlines()
    except OSError:
        return None
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:], strict=False))
            return int(table["TCPSynRetrans"]) if "TCPSynRetrans" in table else None
    return None
