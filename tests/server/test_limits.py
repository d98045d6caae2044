"""Bounded resources of a real server process: request bodies, and projects kept open.

The server is a ``jupyter server`` subprocess, so what is measured (its peak RSS, its threads
and file descriptors, from ``/proc``) is the server's alone.
"""

from __future__ import annotations

import concurrent.futures
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.jupyterlab_server import LabServer, offline_env, start_jupyter_server

MB = 1024 * 1024
BIG = 200 * MB
POOL = 8  # threads of the extension's executor (AgiExtensionApp.initialize_settings)


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[LabServer]:
    root = tmp_path / "root"
    root.mkdir()
    args = getattr(request, "param", ())
    env = offline_env(AGI_CONFIG_DIR=str(tmp_path / "agi-config"))
    started = start_jupyter_server(root, env, tmp_path / "server.log", extra_args=args)
    yield started
    started.stop()


def proc_status(pid: int, field: str) -> int:
    """A ``/proc/<pid>/status`` value (kB for memory)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def big_post(server: LabServer, *, token: str | None, chunked: bool) -> bytes:
    """POST 200 MB to /agi/v1/sessions (with a Content-Length, or chunked) and return the
    start of the answer; the server may stop reading (and close) at any point."""
    host, port = server.url.removeprefix("http://").split(":")
    head = ["POST /agi/v1/sessions HTTP/1.1", f"Host: {host}:{port}"]
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {BIG}")
    if token:
        head.append(f"Authorization: token {token}")
    block = b"x" * MB
    frame = f"{MB:x}\r\n".encode() + block + b"\r\n" if chunked else block
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        try:
            for _ in range(BIG // MB):
                sock.sendall(frame)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # refused: the server closed the connection
        try:
            return sock.recv(4096)
        except OSError:
            return b""


@pytest.mark.slow
def test_large_bodies_are_refused_before_they_are_buffered(server: LabServer) -> None:
    pid = server.process.pid
    before = proc_status(pid, "VmHWM")
    attempts = [
        {"token": None, "chunked": False},
        {"token": None, "chunked": True},
        {"token": None, "chunked": False},
        {"token": None, "chunked": True},
    ]
    with concurrent.futures.ThreadPoolExecutor(len(attempts)) as pool:
        answers = list(pool.map(lambda a: big_post(server, **a), attempts))
    authenticated = [
        big_post(server, token=server.token, chunked=False),
        big_post(server, token=server.token, chunked=True),
    ]
    peak = proc_status(pid, "VmHWM")
    assert peak < 300 * 1024, f"peak RSS {peak} kB (it was {before} kB before the requests)"
    for answer in answers:  # when the answer got through before the connection closed
        assert not answer or answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert not authenticated[0] or authenticated[0].startswith(b"HTTP/1.1 413")
    assert server.api("GET", "agi/v1/sessions")["sessions"] == []  # still serving


def threads_and_fds(pid: int) -> tuple[int, int]:
    return proc_status(pid, "Threads"), len(list(Path(f"/proc/{pid}/fd").iterdir()))


@pytest.mark.slow
@pytest.mark.parametrize(
    "server",
    [
        (
            "--AgiExtensionApp.max_open_projects=8",
            "--AgiExtensionApp.project_idle_timeout=3",
            "--AgiExtensionApp.tick_interval=0.5",  # ticks start each open project's runtime
            "--AgiExtensionApp.freeze_gc=False",  # a full gc.freeze() per project is slow
        )
    ],
    indirect=True,
)
def test_open_projects_are_bounded_and_closed_when_idle(server: LabServer) -> None:
    pid = server.process.pid
    base_threads, base_fds = threads_and_fds(pid)
    for i in range(150):  # what a client (the panel) does in each project folder it opens
        (server.root / f"p{i}").mkdir()
        server.api("POST", f"agi/v1/sessions?project=p{i}", {})
        server.api("GET", f"agi/v1/providers?project=p{i}")
    for i in range(142, 150):  # a tick in each project still open (the 8 used last)
        server.api("POST", f"agi/v1/runner/tick?project=p{i}", {})
    threads, fds = threads_and_fds(pid)
    # An open project costs its runtime loop's thread, its store thread and a few descriptors;
    # at most 8 stay open (before: 120 threads and 809 descriptors after these 150 projects).
    # The extension's pool has up to POOL threads of its own. On PostgreSQL a project's
    # connection pool has two threads more (a worker and its scheduler), and the process one
    # listener thread.
    per_project = 4 if os.environ.get("AGI_DATABASE_URL") else 2
    assert threads <= base_threads + POOL + 8 * per_project + 2, (base_threads, threads)
    assert fds <= base_fds + 8 * 8 + 8, (base_fds, fds)
    # On PostgreSQL the default project stays open (a shared database may hold runs other
    # servers queued there, so it is ticked): its threads, its pool's and the listener's
    # connections.
    kept = per_project + 1 if os.environ.get("AGI_DATABASE_URL") else 0
    max_threads, max_fds = base_threads + POOL + kept, base_fds + 2 + kept
    deadline = time.monotonic() + 60
    threads, fds = threads_and_fds(pid)
    while time.monotonic() < deadline and (threads > max_threads or fds > max_fds):
        time.sleep(0.25)  # idle for 3 s, every project closes (its threads stop after)
        threads, fds = threads_and_fds(pid)
    assert threads <= max_threads, (base_threads, threads)
    assert fds <= max_fds, (base_fds, fds)
    assert len(server.api("GET", "agi/v1/sessions?project=p7")["sessions"]) == 1  # reopened
