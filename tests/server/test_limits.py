"""Bounded resources of a real server process: request bodies, and projects kept open.

The server is a ``jupyter server`` subprocess, so what is measured (its peak RSS, its threads
and file descriptors, from ``/proc``) is the server's alone.
"""

from __future__ import annotations

import concurrent.futures
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.jupyterlab_server import LabServer, offline_env, start_jupyter_server

MB = 1024 * 1024
BIG = 200 * MB


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
    head = [f"POST /agi/v1/sessions HTTP/1.1", f"Host: {host}:{port}"]
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
    for answer in answers:  # when the answer got through before the connection closed
        assert not answer or answer.startswith(b"HTTP/1.1 401"), answer[:200]
    authenticated = [
        big_post(server, token=server.token, chunked=False),
        big_post(server, token=server.token, chunked=True),
    ]
    assert not authenticated[0] or authenticated[0].startswith(b"HTTP/1.1 413")
    peak = proc_status(pid, "VmHWM")
    assert peak < 300 * 1024, f"peak RSS {peak} kB (it was {before} kB before the requests)"
    assert server.api("GET", "agi/v1/sessions")["sessions"] == []  # still serving


@pytest.mark.slow
@pytest.mark.parametrize(
    "server",
    [("--AgiExtensionApp.max_open_projects=8", "--AgiExtensionApp.project_idle_timeout=2")],
    indirect=True,
)
def test_open_projects_are_bounded_and_closed_when_idle(server: LabServer) -> None:
    pid = server.process.pid
    for i in range(150):
        (server.root / f"p{i}").mkdir()
    server.api("GET", "agi/v1/sessions?project=p0")
    threads, fds = proc_status(pid, "Threads"), len(list(Path(f"/proc/{pid}/fd").iterdir()))
    for i in range(1, 150):
        server.api("GET", f"agi/v1/sessions?project=p{i}")
    after_threads = proc_status(pid, "Threads")
    after_fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    # One open project costs a runtime thread and a few descriptors; at most 8 are open.
    assert after_threads <= threads + 8 + 4, (threads, after_threads)
    assert after_fds <= fds + 8 * 8 + 8, (fds, after_fds)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc_status(pid, "Threads") > threads - 1:
        time.sleep(0.25)  # the idle ones (all of them) close after 2 s
    assert proc_status(pid, "Threads") <= threads - 1
    assert server.api("GET", "agi/v1/sessions?project=p7")["sessions"] == []  # reopens


def test_unknown_agi_paths_answer_json(server: LabServer) -> None:
    request = urllib.request.Request(f"{server.url}/agi/v1/nothing-here")
    request.add_header("Authorization", f"token {server.token}")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 404
    assert info.value.headers["Content-Type"] == "application/json"
    assert b'"code":"NOT_FOUND"' in info.value.read()
