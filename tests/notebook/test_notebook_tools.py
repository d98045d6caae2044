"""Agents working in a notebook headlessly (the file through nbformat, a private kernel):
read, insert, edit with the right and a wrong hash, run, undo byte for byte, cancel."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agi_jupyter.app import Agi
from agi_jupyter.notebook import source_hash
from agi_jupyter.notebook.execution import CellRun
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.notebook.conftest import MakeAgi

HASH_LOAD = source_hash("x = 20\nprint('loaded')")
HASH_TOTAL = source_hash("x + 1")


def offered(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or []}


def results(agi: Agi, run_id: str) -> dict[str, dict[str, Any]]:
    """The tool_calls rows of a run by tool call id: status, error flag, result."""
    return {
        row.tool_call_id: {"name": row.name, "is_error": row.is_error, **(row.result or {})}
        for row in agi.store.list_tool_calls(run_id=run_id)
    }


def test_agents_are_offered_the_notebook_tools_they_may_use(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_agi()
    assert {t.name for t in agi.tools("plan")} >= {"notebook.read"}
    assert not {t.name for t in agi.tools("plan")} & {"notebook.edit", "notebook.run"}
    build = {t.name for t in agi.tools("build")}
    assert {
        "notebook.read",
        "notebook.insert",
        "notebook.edit",
        "notebook.delete",
        "notebook.run",
    } <= build
    assert not any(t.name.startswith("notebook.") for t in agi.tools("general"))
    fake_llm.enqueue(Turn(text="ok"))
    agi.ask("hi", agent="plan")
    assert "notebook_read" in offered(fake_llm.requests[-1].body)
    assert "notebook_edit" not in offered(fake_llm.requests[-1].body)


@pytest.mark.slow
def test_a_run_reads_inserts_edits_runs_and_undo_restores_the_file(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path
) -> None:
    original = notebook.read_bytes()
    agi = make_agi()
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.read", {}, id="read")]),
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.insert",
                    {"source": "## Results", "cell_type": "markdown", "after_cell_id": "load"},
                    id="insert",
                ),
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "total", "expected_hash": HASH_TOTAL, "source": "x * 2"},
                    id="edit",
                ),
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "load", "expected_hash": "0" * 16, "source": "x = 0"},
                    id="stale_edit",
                ),
            ]
        ),
        Turn(tool_calls=[FakeToolCall("notebook.run", {"cell_ids": ["load", "total"]}, id="run")]),
        Turn(text="Done: 40."),
    )
    session = agi.new_session(agent="build", notebook_path="analysis.ipynb")
    result = agi.ask("work on the notebook", session=session.id)
    assert result.run.status == "succeeded"
    calls = results(agi, result.run_id)

    assert "id intro" in calls["read"]["output"]
    assert f"source_hash {HASH_LOAD}" in calls["read"]["output"]
    assert calls["insert"]["ok"]
    assert "receipt: re-read cell" in calls["insert"]["output"]
    new_id = calls["insert"]["data"]["receipt"]["cell_id"]
    assert calls["edit"]["data"]["before_hash"] == HASH_TOTAL
    assert calls["edit"]["data"]["after_hash"] == source_hash("x * 2")
    assert calls["edit"]["data"]["receipt"]["landed"] is True
    assert calls["stale_edit"]["is_error"] is True
    assert calls["stale_edit"]["error"]["code"] == "HASH_MISMATCH"
    assert "nothing was written" in calls["stale_edit"]["output"]
    assert "stdout: loaded" in calls["run"]["output"]
    assert "result: 40" in calls["run"]["output"]

    book = nbformat.read(notebook, as_version=4)
    assert [c.id for c in book.cells] == ["intro", "load", new_id, "total"]
    assert book.cells[1].source == "x = 20\nprint('loaded')", "the refused edit wrote nothing"
    assert book.cells[1].outputs[0]["text"] == "loaded\n"
    assert book.cells[3].outputs[0]["data"]["text/plain"] == "40"
    assert (book.cells[1].execution_count, book.cells[3].execution_count) == (1, 2)

    kinds = [a.kind for a in agi.store.list_artifacts(run_id=result.run_id)]
    assert kinds.count("notebook_diff") == 3  # insert, edit, run
    changes = agi.store.list_changes(run_id=result.run_id)
    assert [c.tool_call_id for c in changes] == ["insert", "edit", "run", "run"]
    assert agi.store.get_blob(changes[0].before_sha or "") == original
    assert {c.turn for c in changes} == {2, 3}

    undone = agi.undo(result.run_id)
    assert [(n.path, n.status, n.backend) for n in undone.notebooks] == [
        ("analysis.ipynb", "restored", "file")
    ]
    assert notebook.read_bytes() == original, "byte for byte"
    again = agi.undo(result.run_id)
    assert [n.status for n in again.notebooks] == ["unchanged"]


def test_undo_keeps_the_users_edits_and_leaves_a_cell_changed_since_unless_forced(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path
) -> None:
    agi = make_agi()
    edit = {"path": "analysis.ipynb", "cell_id": "total", "expected_hash": HASH_TOTAL}
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.edit", {**edit, "source": "x - 1"})]),
        Turn(text="edited"),
    )
    run = agi.ask("edit", agent="build").run
    book = nbformat.read(notebook, as_version=4)
    book.cells[0].source = "# The user's title"  # another cell: not the run's
    nbformat.write(book, notebook)
    undone = agi.undo(run.id)
    assert [(c.cell_id, c.status) for c in undone.changes] == [("total", "reverted")]
    book = nbformat.read(notebook, as_version=4)
    assert [c.source for c in book.cells] == [
        "# The user's title",
        "x = 20\nprint('loaded')",
        "x + 1",
    ]

    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.edit", {**edit, "source": "x - 2"})]),
        Turn(text="edited"),
    )
    second = agi.ask("edit again", agent="build").run
    book = nbformat.read(notebook, as_version=4)
    book.cells[2].source = "x - 2  # the user's too"  # the run's cell, changed since
    nbformat.write(book, notebook)
    after_user = notebook.read_bytes()
    left = agi.undo(second.id)
    assert [(c.cell_id, c.status) for c in left.conflicts] == [("total", "conflict")]
    assert "cell total was edited since" in left.conflicts[0].reason
    assert left.notebooks[0].status == "conflict"
    assert notebook.read_bytes() == after_user, "the conflicted cell is left as it is"
    forced = agi.undo(second.id, force=["total"])
    assert [(c.status, c.forced) for c in forced.changes] == [("reverted", True)]
    assert nbformat.read(notebook, as_version=4).cells[2].source == "x + 1"
    assert agi.undo(second.id).changes[0].status == "skipped", "undone twice: nothing"


def test_changes_made_together_in_one_turn_apply_in_order_and_are_undone_together(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path
) -> None:
    # Edits of one turn run one after another in the order the model made them (``in_order``
    # tools; concurrently they overtook each other), and each is applied and recorded before
    # the next, or undo would restore a snapshot that holds some of them.
    original = notebook.read_bytes()
    agi = make_agi()
    inserts = [
        FakeToolCall(
            "notebook.insert",
            {"path": "analysis.ipynb", "after_cell_id": "total", "source": f"# {n}"},
            id=f"insert-{n}",
        )
        for n in range(12)
    ]
    fake_llm.enqueue(Turn(tool_calls=inserts), Turn(text="inserted"))
    run = agi.ask("insert twelve cells", agent="build").run
    book = nbformat.read(notebook, as_version=4)
    # each went in right after "total", so the last made is first
    assert [c.source for c in book.cells[3:]] == [f"# {n}" for n in reversed(range(12))]
    changes = agi.store.list_changes(run_id=run.id)
    assert [c.tool_call_id for c in changes] == [f"insert-{n}" for n in range(12)]
    # the store's order is the order they were made in: each starts where the last ended
    assert all(a.after_sha == b.before_sha for a, b in itertools.pairwise(changes))
    assert [n.status for n in agi.undo(run.id).notebooks] == ["restored"]
    assert notebook.read_bytes() == original


def test_a_run_that_changed_nothing_has_nothing_to_undo(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path
) -> None:
    agi = make_agi()
    fake_llm.enqueue(Turn(text="hello"))
    run = agi.ask("hi").run
    assert agi.undo(run.id).notebooks == []


def test_the_outline_of_the_runs_notebook_is_in_the_system_prompt(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path
) -> None:
    agi = make_agi()
    fake_llm.enqueue(Turn(text="a"), Turn(text="b"))
    agi.ask("look", agent="plan", notebook_path="analysis.ipynb", cell_id="total")
    system = fake_llm.requests[-1].body["messages"][0]["content"]
    assert "## The notebook analysis.ipynb" in system
    assert "2 total code: x + 1 [ ] <- active cell" in system
    agi.ask("look", agent="general", notebook_path="analysis.ipynb")
    assert "## The notebook" not in fake_llm.requests[-1].body["messages"][0]["content"]


@pytest.mark.slow
def test_a_cell_past_its_timeout_is_interrupted_and_the_run_goes_on(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path
) -> None:
    book = nbformat.read(notebook, as_version=4)
    book.cells[2].source = "import time\nprint('sleeping', flush=True)\ntime.sleep(60)"
    nbformat.write(book, notebook)
    agi = make_agi()
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.run",
                    {"path": "analysis.ipynb", "cell_ids": ["total", "load"], "interrupt_after": 2},
                    id="run",
                )
            ]
        ),
        Turn(text="it was interrupted"),
    )
    result = agi.ask("run it", agent="build")
    assert result.run.status == "succeeded"
    run_call = results(agi, result.run_id)["run"]
    assert run_call["is_error"] is True
    assert "interrupted after 2 s (kernel interrupt)" in run_call["output"]
    assert "not run (an earlier cell failed): load" in run_call["output"]
    outputs = nbformat.read(notebook, as_version=4).cells[2].outputs
    assert outputs[0]["text"] == "sleeping\n"
    assert outputs[-1]["ename"] == "KeyboardInterrupt"


@pytest.mark.slow
def test_cancelling_a_run_during_notebook_run_leaves_the_cell_running_until_interrupted(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path
) -> None:
    book = nbformat.read(notebook, as_version=4)
    book.cells[2].source = "import time\nprint('sleeping', flush=True)\ntime.sleep(120)"
    nbformat.write(book, notebook)
    agi = make_agi()
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall("notebook.run", {"path": "analysis.ipynb", "cell_ids": ["total"]})
            ]
        ),
    )
    run = agi.submit("run it", agent="build")
    deltas: list[str] = []
    seen = threading.Event()

    def follow() -> None:
        for event in agi.follow(run.id):
            if event["type"] == "tool.call.delta":
                deltas.append(event["chunk"])
                seen.set()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    assert seen.wait(60), "the cell started and streamed its first line"
    assert agi.cancel(run.id).status == "cancelled"
    thread.join(30)
    assert deltas == ["sleeping\n"]
    (left,) = agi.running_cells(run.id)  # not interrupted by the cancel: still running
    assert (left.cell_id, left.path, left.interrupted) == ("total", "analysis.ipynb", False)
    assert agi.executions("analysis.ipynb")[-1].status == "running"
    (stopped,) = agi.interrupt_cells(run.id)  # what cancel(interrupt=True) does after it
    assert (stopped.handle, stopped.interrupted) == (left.handle, True)
    access = agi.notebooks
    target = access.locate(agi.project, "analysis.ipynb")
    started = time.monotonic()
    for _attempt in range(20):  # a request that arrives while the kernel handles the
        execution = agi.loop.run(  # interrupt's error is aborted: ask again
            access.execute(target, CellRun("1 + 1", "probe", interrupt_after=30))
        )
        if execution.execution_count is not None:
            break
        time.sleep(0.2)
    assert execution.outputs[-1]["data"]["text/plain"] == "2"
    assert time.monotonic() - started < 25, "the sleeping cell was interrupted, not waited for"


def test_notebook_tools_without_a_notebook_say_what_to_pass(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_agi()
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("notebook.read", {}, id="r")]), Turn(text="-"))
    result = agi.ask("read", agent="plan")
    call = results(agi, result.run_id)["r"]
    assert call["is_error"] is True
    assert "pass the notebook's path" in call["output"]
