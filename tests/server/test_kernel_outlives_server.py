"""Does a notebook's kernel outlive the jupyter server that started it? (issue 30)

A run parked on a cell's execution can resume after a server restart with the cell's result
only if the kernel running the cell survives the restart. With jupyter-server's own kernel
manager it does not, whichever way the server stops: a graceful stop shuts every kernel down,
and a server killed outright leaves kernels whose parent poller (ipykernel's
``ParentPollerUnix``, armed by jupyter-client's ``JPY_PARENT_PID``) ends them once their
parent is gone. The restarted server knows no kernel. So a parked run resumed after a restart
must be told that the kernel is gone (README, "Long cells"); these tests keep that true.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.jupyterlab_server import LabServer, offline_env, start_jupyter_server

STARTS_WITHIN = 180.0  # bound of the wait for a server to answer (a loaded machine is slow)
GONE_WITHIN = 60.0  # bound of the wait for a kernel process to end (the poller looks each second)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    return root


def start(root: Path, tmp_path: Path, name: str) -> LabServer:
    env = offline_env(AGI_CONFIG_DIR=str(tmp_path / "agi-config"))
    return start_jupyter_server(root, env, tmp_path / f"{name}.log", timeout=STARTS_WITHIN)


@pytest.fixture
def server(root: Path, tmp_path: Path) -> Iterator[LabServer]:
    started = start(root, tmp_path, "first")
    yield started
    started.stop()


def children(pid: int) -> set[int]:
    """The processes ``pid`` started (Linux's ``/proc``)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(p) for p in (task / "children").read_text().split()}
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, ended but not reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def ends(pid: int) -> bool:
    """Whether ``pid`` ends within ``GONE_WITHIN`` seconds (a bounded wait, not a timing)."""
    deadline = time.monotonic() + GONE_WITHIN
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.2)
    return False


def start_kernel(server: LabServer) -> tuple[str, int]:
    """A kernel the server started: its id and its process."""
    before = children(server.process.pid)
    kernel_id = str(server.api("POST", "api/kernels", {"name": "python3"}, timeout=60)["id"])
    deadline = time.monotonic() + GONE_WITHIN
    while time.monotonic() < deadline:
        new = children(server.process.pid) - before
        if new:
            (pid,) = new
            return kernel_id, pid
        time.sleep(0.1)
    raise AssertionError("the server started no kernel process")


@pytest.mark.timeout(600)
def test_a_graceful_stop_shuts_the_kernels_down(
    server: LabServer, root: Path, tmp_path: Path
) -> None:
    kernel_id, pid = start_kernel(server)
    assert alive(pid)
    server.stop()  # POST /api/shutdown, as agi serve's and jupyter's Ctrl-C do
    assert ends(pid)
    again = start(root, tmp_path, "second")
    try:
        assert again.api("GET", "api/kernels") == []
        assert kernel_id not in {k["id"] for k in again.api("GET", "api/kernels")}
    finally:
        again.stop()


@pytest.mark.timeout(600)
def test_a_killed_servers_kernels_end_by_their_parent_poller(
    server: LabServer, root: Path, tmp_path: Path
) -> None:
    _, pid = start_kernel(server)
    os.kill(server.process.pid, signal.SIGKILL)  # no shutdown: nothing asks the kernel to stop
    server.process.wait(timeout=30)
    assert ends(pid)  # ipykernel's ParentPollerUnix saw its parent go
    again = start(root, tmp_path, "second")
    try:
        assert again.api("GET", "api/kernels") == []
    finally:
        again.stop()
