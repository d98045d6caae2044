"""Kernel interrupts land safely wherever they come, in real kernels: while the first ``%%agi``
cell still imports the runtime, the moment its run is created, and while it streams. The
kernel stays responsive, the cell's run (and only it) is cancelled, and none is left going."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.kernel.conftest import open_store

pytestmark = pytest.mark.slow

SLOW = Turn(text=" ".join(["slow"] * 400), fault=Fault(stall_between_events=0.05))


@pytest.fixture
def folder(tmp_path: Path, kernel_env: dict[str, str]) -> Path:
    project = tmp_path / "intproj"
    (project / ".agi").mkdir(parents=True)
    return project


@pytest.fixture
def kernel(folder: Path) -> Iterator[tuple[Any, Any]]:
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(folder))
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _collect(kc: Any, msg_id: str, timeout: float = 60) -> list[dict[str, Any]]:
    """The iopub messages of one request until the kernel is idle again (bounded)."""
    messages = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return messages
    raise AssertionError(f"the kernel did not finish request {msg_id} in {timeout} s")


def _errors(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"]["ename"] for m in messages if m["msg_type"] == "error"]


def _runs(folder: Path) -> list[Any]:
    with open_store(folder) as store:
        return store.list_runs(limit=50).items


def _wait_for_runs(folder: Path, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(_runs(folder)) < count:
        assert time.monotonic() < deadline, "the run was never created"
        time.sleep(0.005)


def _still_works(kc: Any, fake_llm: FakeLLMServer) -> None:
    """The kernel answers, and a new ``%%agi`` cell runs to the end."""
    fake_llm.enqueue(Turn(text="all good"))
    messages = _collect(kc, kc.execute("%%agi --new\nare you there?"))
    assert _errors(messages) == []
    shown = [m["content"]["data"].get("text/plain", "") for m in messages if "data" in m["content"]]
    assert any("all good" in text for text in shown)


def _check_interrupted(messages: list[dict[str, Any]], folder: Path) -> None:
    errors = _errors(messages)
    assert errors in (["KeyboardInterrupt"], ["RunInterrupted"]), errors
    for run in _runs(folder):
        assert run.is_terminal, run


def test_an_interrupt_while_the_first_cell_imports_the_runtime(
    kernel: tuple[Any, Any], folder: Path, fake_llm: FakeLLMServer
) -> None:
    km, kc = kernel
    fake_llm.enqueue(SLOW)
    _collect(kc, kc.execute("%load_ext agi_jupyter"))
    msg_id = kc.execute("%%agi\ntake your time")
    time.sleep(0.2)  # the runtime is being imported
    km.interrupt_kernel()
    _check_interrupted(_collect(kc, msg_id), folder)
    fake_llm.clear()
    _still_works(kc, fake_llm)


def test_an_interrupt_as_the_run_is_created_cancels_exactly_that_run(
    kernel: tuple[Any, Any], folder: Path, fake_llm: FakeLLMServer
) -> None:
    km, kc = kernel
    fake_llm.enqueue(SLOW, SLOW)
    _collect(kc, kc.execute("%load_ext agi_jupyter"))
    # another run of the kernel goes on in the background: it must not be touched
    assert _errors(_collect(kc, kc.execute("%%agi --background\nkeep going"))) == []
    _wait_for_runs(folder, 1)
    msg_id = kc.execute("%%agi --new\ntake your time")
    _wait_for_runs(folder, 2)  # the cell's run exists: interrupt at once
    km.interrupt_kernel()
    messages = _collect(kc, msg_id)
    assert _errors(messages) == ["RunInterrupted"]
    background, cell_run = sorted(_runs(folder), key=lambda r: r.created_at)
    assert cell_run.status == "cancelled"
    assert background.status in ("running", "succeeded")
    _collect(kc, kc.execute(f"%agi cancel {background.id}"))
    _check_interrupted(messages, folder)
    fake_llm.clear()
    _still_works(kc, fake_llm)


def test_an_interrupt_while_the_answer_streams_keeps_the_partial_answer(
    kernel: tuple[Any, Any], folder: Path, fake_llm: FakeLLMServer
) -> None:
    km, kc = kernel
    fake_llm.enqueue(SLOW)
    _collect(kc, kc.execute("%load_ext agi_jupyter"))
    msg_id = kc.execute("%%agi\ntake your time")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until the answer is streaming
        msg = kc.get_iopub_msg(timeout=10)
        if msg["msg_type"] == "update_display_data" and "slow" in str(msg["content"]["data"]):
            break
    km.interrupt_kernel()
    messages = _collect(kc, msg_id)
    assert _errors(messages) == ["RunInterrupted"]
    (run,) = _runs(folder)
    assert run.status == "cancelled"
    with open_store(folder) as store:
        (partial,) = [m for m in store.list_messages(run.session_id) if m.role == "assistant"]
    assert (partial.status, partial.meta.get("partial")) == ("error", True)
    assert partial.text.startswith("slow")
    assert " ".join(["slow"] * 400).startswith(partial.text.strip())
    fake_llm.clear()
    _still_works(kc, fake_llm)


def test_a_kernel_shutdown_releases_its_runs_for_the_next_process(
    folder: Path, fake_llm: FakeLLMServer, kernel_env: dict[str, str]
) -> None:
    from jupyter_client.manager import start_new_kernel

    from agi_jupyter.app import Agi

    fake_llm.enqueue(SLOW, Turn(text="finished elsewhere"))
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(folder))
    try:
        _collect(kc, kc.execute("%load_ext agi_jupyter"))
        assert _errors(_collect(kc, kc.execute("%%agi --background\nkeep going"))) == []
        deadline = time.monotonic() + 60
        while not fake_llm.requests:  # the answer is on its way
            assert time.monotonic() < deadline, "the background run never started"
            time.sleep(0.05)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)  # a shutdown request, as JupyterLab sends it
    (run,) = _runs(folder)
    assert (run.status, run.owner, run.error) == ("queued", None, None)
    with Agi(folder) as agi:
        assert agi.tick().executed == 1
        done = agi.run(run.id)
    assert (done.status, done.attempt) == ("succeeded", 2)
