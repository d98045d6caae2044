"""Does a notebook's kernel outlive the jupyter server that started it? (issue 30)

A run parked on a cell's execution can resume after a server restart with the cell's result
only if the kernel running the cell survives the restart. With jupyter-server's own kernel
manager it does not, whichever way the server stops: a graceful stop shuts every kernel down,
and a server killed outright leaves kernels whose parent poller (ipykernel's
``ParentPollerUnix``, armed by jupyter-client's ``JPY_PARENT_PID``) ends them once their
parent is gone. The restarted server knows no kernel. So a parked run resumed after a restart
must be told that the kernel is gone (README, "Long cells"); these tests keep that true, and
check what a run waiting on its cell meets today when its server stops and starts again.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agi_jupyter.records import ToolResultPart
from agi_jupyter.runtime.endings import INTERRUPTED
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.jupyterlab_server import LabServer, offline_env, start_jupyter_server
from tests.notebook.test_long_cells import then

STARTS_WITHIN = 180.0  # bound of the wait for a server to answer (a loaded machine is slow)
GONE_WITHIN = 60.0  # bound of the wait for a kernel process to end (the poller looks each second)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    return root


def start(root: Path, tmp_path: Path, name: str, **env_extra: str) -> LabServer:
    env = offline_env(AGI_CONFIG_DIR=str(tmp_path / "agi-config"), **env_extra)
    return start_jupyter_server(root, env, tmp_path / f"{name}.log", timeout=STARTS_WITHIN)


@pytest.fixture
def server(root: Path, tmp_path: Path) -> Iterator[LabServer]:
    started = start(root, tmp_path, "first")
    yield started
    started.stop()


def until(check: Callable[[], bool], what: str, within: float = STARTS_WITHIN) -> None:
    """Wait (bounded by ``within`` seconds, not a timing) until ``check()`` is true."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"never: {what}")


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


def ends(pid: int) -> None:
    """Wait (bounded by ``GONE_WITHIN``) until ``pid`` ended."""
    until(lambda: not alive(pid), f"process {pid} ends", GONE_WITHIN)


def start_kernel(server: LabServer) -> int:
    """The process of a kernel the server started."""
    before = children(server.process.pid)
    server.api("POST", "api/kernels", {"name": "python3"}, timeout=60)
    until(lambda: bool(children(server.process.pid) - before), "a kernel process", GONE_WITHIN)
    (pid,) = children(server.process.pid) - before
    return pid


def submit(server: LabServer, prompt: str) -> tuple[str, str]:
    """A new session and a run of ``prompt`` in it: (session id, run id)."""
    session = server.api("POST", "agi/v1/sessions", {})["session"]["id"]
    run = server.api("POST", f"agi/v1/sessions/{session}/runs", {"input": prompt})["run"]
    return str(session), str(run["id"])


def stop_gracefully(server: LabServer) -> None:
    server.stop()  # POST /api/shutdown, as agi serve's and jupyter's Ctrl-C do


def kill(server: LabServer) -> None:
    os.kill(server.process.pid, signal.SIGKILL)  # no shutdown: nothing asks the kernel to stop
    server.process.wait(timeout=30)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("stop", [stop_gracefully, kill], ids=["graceful", "killed"])
def test_a_kernel_ends_with_its_server_and_the_next_server_knows_none(
    server: LabServer, root: Path, tmp_path: Path, stop: Callable[[LabServer], None]
) -> None:
    """Stopped gracefully, the server shuts its kernels down; killed, its kernels end by
    themselves (ipykernel's ParentPollerUnix sees its parent go)."""
    pid = start_kernel(server)
    assert alive(pid)
    stop(server)
    ends(pid)
    again = start(root, tmp_path, "second")
    try:
        assert again.api("GET", "api/kernels") == []
    finally:
        again.stop()


@pytest.mark.timeout(900)
def test_a_run_waiting_on_its_cell_when_the_server_stops_resumes_told_it_was_interrupted(
    root: Path, tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    """Today's restart: the cell is lost with its kernel; the run waiting in ``notebook.run``
    is released by the stopping server and resumed by the next one, whose model request
    carries the call answered as interrupted (a run parked on the handle: the next test)."""
    (root / ".agi").mkdir()
    config = {"default_model": "fake:echo", "default_agent": "build", "tool_timeout": 900}
    (root / ".agi" / "config.json").write_text(json.dumps(config))
    cell = {
        "id": "train",
        "cell_type": "code",
        "metadata": {},
        "execution_count": None,
        "outputs": [],
        "source": "import time\nprint('training', flush=True)\ntime.sleep(600)",
    }
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "long.ipynb").write_text(json.dumps(notebook))
    run_cell = {"path": "long.ipynb", "cell_ids": ["train"], "timeout": 900}
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.run", run_cell)]),
        Turn(text="The kernel went away with the server; run the cell again."),
    )
    first = start(root, tmp_path, "first", AGI_FAKE_LLM_URL=fake_llm.url)
    try:
        _, run_id = submit(first, "train")

        def cell_runs() -> bool:
            rows = first.api("GET", "agi/v1/executions?path=long.ipynb")["executions"]
            return any(r["status"] == "running" for r in rows)

        until(cell_runs, "the agent's cell runs")
    finally:
        first.stop()
    with first.open_store() as store:
        assert store.get_run(run_id).status == "queued"  # released, due now, no owner
    again = start(root, tmp_path, "second", AGI_FAKE_LLM_URL=fake_llm.url)
    try:
        until(
            lambda: again.api("GET", f"agi/v1/runs/{run_id}")["run"]["status"] == "succeeded",
            "the next server resumes the run to its end",
        )
    finally:
        again.stop()
    resumed = fake_llm.requests[-1]
    assert INTERRUPTED in json.dumps(resumed.body)


@pytest.mark.timeout(900)
def test_a_run_parked_on_its_cell_when_the_server_stops_is_resumed_once_told_the_kernel_is_gone(
    root: Path, tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    """Parked (``notebook.wait {park: true}``: ``waiting_execution``, no owner), then the server
    is stopped with SIGTERM and started again on the same store: its tick resumes the run,
    which is told the kernel is gone with the server and ends; more ticks change nothing."""
    (root / ".agi").mkdir()
    config = {"default_model": "fake:echo", "default_agent": "build", "stale_after": 5}
    (root / ".agi" / "config.json").write_text(json.dumps(config))
    cells = [
        {"id": "warm", "source": "print('warm')"},
        {"id": "train", "source": "import time\nprint('training', flush=True)\ntime.sleep(600)"},
    ]
    notebook = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], **c}
            for c in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / "long.ipynb").write_text(json.dumps(notebook))
    train = {"path": "long.ipynb", "cell_ids": ["train"], "timeout": 1}
    fake_llm.enqueue(  # the kernel starts with the first cell; the second outlives its wait
        Turn(
            tool_calls=[FakeToolCall("notebook.run", {"path": "long.ipynb", "cell_ids": ["warm"]})]
        ),
        Turn(tool_calls=[FakeToolCall("notebook.run", train, id="run")]),
    )
    fake_llm.default_rule = then("notebook.wait", park=True)
    first = start(root, tmp_path, "first", AGI_FAKE_LLM_URL=fake_llm.url)
    try:
        session, run_id = submit(first, "train")

        def status() -> str:
            return str(first.api("GET", f"agi/v1/runs/{run_id}")["run"]["status"])

        until(lambda: status() == "waiting_execution", "the run parks on its cell")
        before_stop = len(fake_llm.requests)
    finally:
        os.kill(first.process.pid, signal.SIGTERM)
        first.process.wait(timeout=60)
    with first.open_store() as store:
        parked = store.get_run(run_id)
        assert (parked.status, parked.owner) == ("waiting_execution", None)
    assert len(fake_llm.requests) == before_stop == 3  # no model call while parked
    again = start(root, tmp_path, "second", AGI_FAKE_LLM_URL=fake_llm.url)
    try:
        until(
            lambda: again.api("GET", f"agi/v1/runs/{run_id}")["run"]["status"] == "succeeded",
            "the next server resumes the run to its end",
        )
        for _ in range(2):  # ticks once the run ended: nothing left to resume
            tick = again.api("POST", "agi/v1/runner/tick", {"max_runs": 5})
            assert (tick["recovered"], tick["executed"]) == (0, 0)
    finally:
        again.stop()
    assert len(fake_llm.requests) == 4  # resumed once: one model call
    resumed = json.dumps(fake_llm.requests[-1].body)
    assert "the notebook's kernel is gone" in resumed
    with first.open_store() as store:
        answers = [
            part
            for message in store.list_messages(session)
            for part in message.parts
            if isinstance(part, ToolResultPart) and part.tool_call_id == "follow"
        ]
        (call,) = [c for c in store.list_tool_calls(run_id=run_id) if c.tool_call_id == "follow"]
    assert len(answers) == 1
    assert answers[0].is_error
    assert (call.status, (call.result or {}).get("data", {}).get("kernel")) == ("failed", "gone")
