"""Cells that outlive the tool's wait: ``notebook.run`` answers with a handle and leaves them
running (real private kernels); ``notebook.wait`` and ``notebook.interrupt`` find them again;
protected cells are refused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agi_jupyter.app import Agi
from agi_jupyter.notebook import source_hash
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from agi_jupyter.testing.state import Rule
from tests.notebook.conftest import MakeAgi

SLOW = "import time\nprint('started', flush=True)\ntime.sleep(6)\nprint('finished')\nslept = 6"
NB = "analysis.ipynb"
HANDLE = re.compile(r"ex-[0-9a-f]{12}")


def results(agi: Agi, run_id: str) -> dict[str, dict[str, Any]]:
    return {
        row.tool_call_id: {"name": row.name, "is_error": row.is_error, **(row.result or {})}
        for row in agi.store.list_tool_calls(run_id=run_id)
    }


def set_source(notebook: Path, index: int, source: str, **metadata: Any) -> None:
    book = nbformat.read(notebook, as_version=4)
    book.cells[index].source = source
    book.cells[index].metadata.update(metadata)
    nbformat.write(book, notebook)


def then(tool: str, **arguments: Any) -> Rule:
    """A model that calls ``tool`` with the last execution handle it was told, once, then
    answers."""

    called: list[str] = []

    def rule(protocol: str, body: dict[str, Any]) -> Turn:
        handles = HANDLE.findall(str(body))
        if called or not handles:
            return Turn(text="done")
        called.append(handles[-1])
        call = FakeToolCall(tool, {"handle": handles[-1], **arguments}, id="follow")
        return Turn(tool_calls=[call])

    return rule


@pytest.mark.slow
def test_a_cell_outliving_the_wait_is_not_interrupted_and_wait_gets_its_result(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path, backend_env: dict[str, str]
) -> None:
    set_source(notebook, 2, SLOW)
    agi = make_agi(config={"tool_timeout": 4}, env=backend_env)
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.run", {"path": NB, "cell_ids": ["total"], "timeout": 2}, id="run"
                )
            ]
        )
    )
    fake_llm.default_rule = then("notebook.wait", timeout=30)
    result = agi.ask("run the slow cell", agent="build")
    assert result.run.status == "succeeded"
    calls = results(agi, result.run_id)
    run = calls["run"]
    assert run["is_error"] is False, run
    assert "still running after 2 s (not interrupted)" in run["output"]
    assert "cell total: running for" in run["output"]
    waited = calls["follow"]
    assert waited["name"] == "notebook.wait"
    assert "stdout: started\nfinished" in waited["output"]
    assert "KeyboardInterrupt" not in waited["output"]
    outputs = nbformat.read(notebook, as_version=4).cells[2].outputs
    assert [o.get("text") for o in outputs] == ["started\nfinished\n"]
    assert all(o["output_type"] != "error" for o in outputs)
    (ledger,) = agi.executions("analysis.ipynb")
    assert (ledger.origin, ledger.cell_id, ledger.status) == ("agent", "total", "ok")
    assert (ledger.run_id, ledger.tool_call_id) == (result.run_id, "run")


@pytest.mark.slow
def test_interrupt_by_handle_stops_the_cell_and_the_cells_after_it(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path
) -> None:
    set_source(notebook, 2, "import time\nprint('napping', flush=True)\ntime.sleep(60)")
    agi = make_agi()
    fake_llm.enqueue(  # the kernel started first: a second later the cell sleeps
        Turn(tool_calls=[FakeToolCall("notebook.run", {"path": NB, "cell_ids": ["load"]})]),
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.run",
                    {"path": NB, "cell_ids": ["total", "load"], "timeout": 1},
                    id="run",
                )
            ]
        ),
    )
    fake_llm.default_rule = then("notebook.interrupt")
    result = agi.ask("run, then stop it", agent="build")
    follow = results(agi, result.run_id)["follow"]
    assert follow["is_error"] is True, follow
    assert "interrupted (kernel interrupt)" in follow["output"]
    assert "not run (an earlier cell failed): load" in follow["output"]
    outputs = nbformat.read(notebook, as_version=4).cells[2].outputs
    assert outputs[-1]["ename"] == "KeyboardInterrupt"


def test_an_unknown_handle_is_an_error_the_model_sees(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path
) -> None:
    agi = make_agi()
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.wait", {"handle": "ex-nope"}, id="w")]),
        Turn(text="ok"),
    )
    result = agi.ask("wait", agent="build")
    error = results(agi, result.run_id)["w"]["error"]
    assert error["code"] == "EXECUTION_NOT_FOUND"


def test_protected_cells_are_refused_before_their_hash_and_skipped_by_run_all(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path
) -> None:
    set_source(notebook, 1, "x = 20\nprint('loaded')", agi={"protected": True})
    before = notebook.read_bytes()
    agi = make_agi()
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.edit",
                    {"path": NB, "cell_id": "load", "expected_hash": "stale", "source": "x = 0"},
                    id="edit",
                ),
                FakeToolCall(
                    "notebook.delete",
                    {
                        "path": NB,
                        "cell_id": "load",
                        "expected_hash": source_hash("x = 20\nprint('loaded')"),
                    },
                    id="delete",
                ),
                FakeToolCall("notebook.run", {"path": NB, "cell_ids": ["load"]}, id="run"),
            ]
        ),
        Turn(tool_calls=[FakeToolCall("notebook.run", {"path": NB}, id="all")]),
        Turn(text="ok"),
    )
    result = agi.ask("change the protected cell", agent="build")
    calls = results(agi, result.run_id)
    for call_id in ("edit", "delete", "run"):
        assert calls[call_id]["error"]["code"] == "CELL_PROTECTED", call_id
        assert "cell load is protected" in calls[call_id]["error"]["message"]
    ran = calls["all"]
    assert "skipped (protected cells: the agent may not run them): load" in ran["output"]
    assert "cell total: ran as" in ran["output"]
    book = nbformat.read(notebook, as_version=4)
    assert book.cells[1].source == "x = 20\nprint('loaded')"
    assert book.cells[1].outputs == []
    assert nbformat.reads(before.decode(), as_version=4).cells[1] == book.cells[1]
