"""Notebooks in real kernels (nbclient): outputs, store rows, replay after restart, interrupt."""

from __future__ import annotations

import queue
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from kernel_nb import execute, execute_file, notebook, texts
from nbclient.exceptions import CellExecutionError

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn
from tests.kernel.conftest import open_store

pytestmark = pytest.mark.slow

CELLS = [
    "%load_ext agi_jupyter",
    "x = 21",
    "%%agi\nWhat is {x}?",
    '%%agi -a build\n/tool python {"code": "y = x * 2\\nprint(y)"}',
    "y",
    "%%agi --new\nA question in its own session",
]


@pytest.fixture
def folder(tmp_path: Path, kernel_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "nbproj"
    project.mkdir()
    monkeypatch.setenv("JPY_SESSION_NAME", str(project / "analysis.ipynb"))
    return project


def test_notebook_outputs_store_rows_and_restart_run_all_replay(
    folder: Path, fake_llm: FakeLLMServer
) -> None:
    nb = execute(notebook(*CELLS), folder)
    shown = texts(nb)
    assert len(shown[2]) == 1  # the live area was cleared when the final answer came
    assert shown[2][0].startswith("(offline fake model) echo: What is 21?")
    assert "fake:echo · general" in shown[2][0]
    assert "<details><summary>✓ <code>python</code> completed</summary>" in shown[3][0]
    assert shown[4] == ["42"]
    first_calls = len(fake_llm.requests)
    assert first_calls == 4

    with open_store(folder) as store:
        sessions = store.list_sessions().items
        assert {s.notebook_path for s in sessions} == {"analysis.ipynb"}
        runs = sorted(
            (r for s in sessions for r in store.list_runs(session_id=s.id).items),
            key=lambda r: r.created_at,
        )
        assert [(r.execution_count, r.cell_id) for r in runs] == [
            (3, nb.cells[2].id),
            (4, nb.cells[3].id),
            (6, nb.cells[5].id),
        ]
        assert {r.notebook_path for r in runs} == {"analysis.ipynb"}
        (call,) = store.list_tool_calls(run_id=runs[1].id)
        assert (call.name, call.status) == ("python", "completed")
        assert "names: created y" in call.result["output"]

    # Restart & Run All: a new kernel, a fresh session, every agent cell replayed
    again = execute(notebook(*CELLS), folder)
    assert len(fake_llm.requests) == first_calls
    assert texts(again) == shown  # identical outputs

    # editing one prompt calls the model for that cell only (the next cell has its own session)
    edited = list(CELLS)
    edited[3] = '%%agi -a build\n/tool python {"code": "y = x * 3\\nprint(y)"}'
    third = execute(notebook(*edited), folder)
    assert len(fake_llm.requests) == first_calls + 2  # the tool call and the answer
    assert texts(third)[4] == ["63"]
    with open_store(folder) as store:
        latest = store.list_runs(limit=3).items
        replayed = {r.execution_count: r.replayed_from is not None for r in latest}
    assert replayed == {3: True, 4: False, 6: True}


def _collect(kc: Any, msg_id: str, timeout: float = 30) -> list[dict[str, Any]]:
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
            break
    return messages


def test_interrupting_the_kernel_cancels_the_run(folder: Path, fake_llm: FakeLLMServer) -> None:
    from jupyter_client.manager import start_new_kernel

    fake_llm.enqueue(Turn(text=" ".join(["slow"] * 400), fault=Fault(stall_between_events=0.05)))
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(folder))
    try:
        _collect(kc, kc.execute("%load_ext agi_jupyter"))
        msg_id = kc.execute("%%agi\ntake your time")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait until the answer is streaming
            try:
                msg = kc.get_iopub_msg(timeout=1)
            except queue.Empty:
                continue
            data = (
                msg["content"].get("data", {}) if msg["msg_type"] == "update_display_data" else {}
            )
            if "slow" in data.get("text/plain", ""):
                break
        km.interrupt_kernel()
        messages = _collect(kc, msg_id)
        errors = [m["content"] for m in messages if m["msg_type"] == "error"]
        assert [e["ename"] for e in errors] == ["RunInterrupted"]
        assert len(errors[0]["traceback"]) == 1
        assert "was cancelled" in errors[0]["traceback"][0]
        finals = [m for m in messages if m["msg_type"] == "display_data"]
        assert "cancelled" in finals[-1]["content"]["data"]["text/plain"]
        # the kernel goes on working
        reply = _collect(kc, kc.execute("print('still alive')"))
        assert any(m["content"].get("text") == "still alive\n" for m in reply)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    with open_store(folder) as store:
        (run,) = store.list_runs().items
        assert run.status == "cancelled"
        assert run.error is not None
        assert run.error["code"] == "RUN_CANCELLED"


def test_restart_and_run_all_twice_leaves_the_notebook_byte_identical(
    folder: Path, fake_llm: FakeLLMServer
) -> None:
    """Plain nbclient (no cell ids sent), fresh kernels: the second run replays every agent
    cell and saves the same bytes, and the runs know their cells from the notebook file."""
    path = folder / "analysis.ipynb"  # what JPY_SESSION_NAME names (the folder fixture)
    nbformat.write(notebook(*CELLS, "%agi history"), path)
    execute_file(path)
    first = path.read_bytes()
    calls = len(fake_llm.requests)
    execute_file(path)
    assert len(fake_llm.requests) == calls  # every agent cell replayed
    assert path.read_bytes() == first

    saved = nbformat.read(path, as_version=4)
    for cell in saved.cells:
        for output in cell.get("outputs", []):  # no empty output area left behind
            assert output.get("text") or any(output.get("data", {}).values()), output
    agi_cells = [c for c in saved.cells if c.source.startswith("%%agi")]
    assert [len(c.outputs) for c in agi_cells] == [1, 1, 1]
    with open_store(folder) as store:
        runs = sorted(store.list_runs(limit=20).items, key=lambda r: r.created_at)
    assert [r.cell_id for r in runs] == [c.id for c in agi_cells] * 2
    assert [r.replayed_from is not None for r in runs] == [False] * 3 + [True] * 3


def test_a_headless_run_waiting_for_an_approval_fails_its_cell_at_once(
    folder: Path, fake_llm: FakeLLMServer
) -> None:
    """nbclient (as papermill and nbconvert) sends ``allow_stdin: false``: nobody can press
    the buttons, so the cell fails and says how to allow the call; the run keeps waiting."""
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("python", {"code": "z = 1"})]))
    nb = notebook(
        "%load_ext agi_jupyter",
        "%agi new --agent build --review-mode ask",
        "%%agi\nset z",
        "z",
    )
    with pytest.raises(CellExecutionError) as raised:
        execute(nb, folder)
    shown = str(raised.value)
    assert "waits for your approval of python" in shown
    assert "%agi new --review-mode auto" in shown
    assert "Traceback" not in shown
    assert nb.cells[3].outputs == [], "the notebook stopped at the waiting cell"
    with open_store(folder) as store:
        (run,) = store.list_runs(limit=5).items
    assert run.status == "waiting_approval"
    assert f"agi approve {run.id}" in shown
