"""``%%agi`` working on its own notebook in the kernel (no tab: the file), cells run in the
kernel itself; ``%agi undo``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agi_jupyter.notebook import source_hash
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.kernel.conftest import RunCell, open_store
from tests.notebook.conftest import write_notebook


@pytest.fixture
def own_notebook(shell: Any, project: Path) -> Path:
    path = project / "own.ipynb"
    write_notebook(path)
    shell.magics_manager.registry["AgiMagics"].notebook_path = str(path)
    return path


def tool_results(ctx: Any, run_id: str) -> dict[str, Any]:
    return {r.tool_call_id: r for r in ctx.agi.store.list_tool_calls(run_id=run_id)}


def test_agi_cell_edits_and_runs_its_own_notebook_and_undo_restores_it(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer, own_notebook: Path, shell: Any
) -> None:
    original = own_notebook.read_bytes()
    cell("x = 1")
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.read", {}, id="read")]),
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.insert",
                    {"source": "z = x * 3\nprint('z is', z)", "index": 3},
                    id="insert",
                ),
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "total", "expected_hash": source_hash("x + 1"), "source": "x + 2"},
                    id="edit",
                ),
                FakeToolCall(
                    "notebook.delete", {"cell_id": "intro", "expected_hash": "bad"}, id="delete"
                ),
            ]
        ),
        Turn(tool_calls=[FakeToolCall("notebook.run", {"cell_ids": ["load", "total"]}, id="run")]),
        Turn(text="done"),
    )
    run = cell("%%agi -a build\nwork in this notebook", cell_id="agi-cell")
    assert run.error is None, run.stderr
    result = run.value
    assert result.run.status == "succeeded"
    calls = tool_results(ctx, result.run_id)
    assert "stale" not in calls["read"].result["output"].split("id load")[1].split("\n")[0]
    assert calls["insert"].is_error is False
    assert calls["edit"].result["data"]["receipt"]["landed"] is True
    assert calls["delete"].result["error"]["code"] == "HASH_MISMATCH"
    assert "stdout: loaded" in calls["run"].result["output"]
    assert "result: 22" in calls["run"].result["output"]

    assert shell.user_ns["x"] == 20, "the cells ran in the kernel's own namespace"
    assert shell.user_ns["In"][3:5] == ["x = 20\nprint('loaded')", "x + 2"]
    assert ctx.cell_id == "agi-cell", "the %%agi cell stays the context's cell"
    book = nbformat.read(own_notebook, as_version=4)
    assert [c.source for c in book.cells][3] == "z = x * 3\nprint('z is', z)"
    load, total = book.cells[1], book.cells[2]
    assert (load.execution_count, total.execution_count) == (3, 4)
    assert cell("after = 1").result.execution_count == 5, "In[n] stays cell n's source"
    assert shell.user_ns["In"][5] == "after = 1"
    assert load.outputs == [{"output_type": "stream", "name": "stdout", "text": "loaded\n"}]
    assert total.outputs[0]["data"]["text/plain"] == "22"
    assert total.outputs[0]["execution_count"] == 4
    final = run.outputs[-1]["data"]["text/markdown"]
    assert "notebook.edit" in final
    assert "-x + 1\n+x + 2" in final, "the cell diff is in the tool block"

    undone = cell(f"%agi undo {result.run_id}")
    lines = undone.stdout.splitlines()
    assert [line.split(" (")[-1] for line in lines] == [
        "inserted)",
        "edited)",
        "outputs)",
        "outputs)",
    ]
    assert all(line.startswith("agi: reverted own.ipynb cell ") for line in lines), lines
    assert own_notebook.read_bytes() == original
    again = cell(f"%agi undo {result.run_id}").stdout.splitlines()
    assert again[1] == "agi: skipped own.ipynb cell total (edited): already undone"


def test_undo_magic_typed_into_a_new_cell_keeps_that_cell_and_the_users_edits(
    cell: RunCell, fake_llm: FakeLLMServer, own_notebook: Path
) -> None:
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "total", "expected_hash": source_hash("x + 1"), "source": "x + 5"},
                )
            ]
        ),
        Turn(text="edited"),
    )
    run = cell("%%agi -a build\nchange the total")
    assert run.error is None, run.stderr
    run_id = run.value.run_id
    diff = cell(f"%agi diff {run_id}").stdout
    assert "/total  edited own.ipynb cell total turn 1" in diff
    assert "\x1b[31m-x + 1\x1b[0m\n\x1b[32m+x + 5\x1b[0m" in diff, "in colour"
    # The person edits the first cell and types the undo into a new cell of the notebook.
    book = nbformat.read(own_notebook, as_version=4)
    book.cells[0].source = "# Mine now"
    book.cells.append(nbformat.v4.new_code_cell(f"%agi undo {run_id}", id="undo-cell"))
    nbformat.write(book, own_notebook)
    undone = cell(f"%agi undo {run_id}", cell_id="undo-cell")
    assert undone.stdout == "agi: reverted own.ipynb cell total (edited)\n", undone.stderr
    assert [(c.id, c.source) for c in nbformat.read(own_notebook, as_version=4).cells] == [
        ("intro", "# Mine now"),
        ("load", "x = 20\nprint('loaded')"),
        ("total", "x + 1"),
        ("undo-cell", f"%agi undo {run_id}"),
    ]
    redone = cell(f"%agi undo {run_id} --redo")
    assert redone.stdout == "agi: reverted own.ipynb cell total (edited)\n"
    assert nbformat.read(own_notebook, as_version=4).cells[2].source == "x + 5"


def test_a_cell_past_its_timeout_is_interrupted_in_the_kernel(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer, own_notebook: Path, shell: Any
) -> None:
    book = nbformat.read(own_notebook, as_version=4)
    book.cells[2].source = "import time\nprint('napping')\ntime.sleep(30)\nawake = True"
    nbformat.write(book, own_notebook)
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.run", {"cell_ids": ["total"], "interrupt_after": 1}, id="run"
                )
            ]
        ),
        Turn(text="it was interrupted"),
    )
    run = cell("%%agi -a build\nrun the slow cell")
    assert run.error is None, run.stderr
    assert run.value.run.status == "succeeded", "the interrupt stopped the cell, not the run"
    call = tool_results(ctx, run.value.run_id)["run"]
    assert call.is_error
    assert "interrupted after 1 s (kernel interrupt)" in call.result["output"]
    assert "awake" not in shell.user_ns
    outputs = nbformat.read(own_notebook, as_version=4).cells[2].outputs
    assert outputs[0]["text"] == "napping\n"
    assert outputs[-1]["ename"] == "KeyboardInterrupt"


def test_undo_magic_says_when_a_run_changed_nothing(cell: RunCell, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text="hi"))
    run = cell("%%agi\nhello")
    assert "changed no notebook" in cell(f"%agi undo {run.value.run_id}").stdout
    assert json.dumps("x")


@pytest.mark.slow
def test_in_a_real_kernel_agi_edits_and_runs_its_own_notebook_and_undo_restores_it(
    tmp_path: Path,
    kernel_env: dict[str, str],
    fake_llm: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernel_nb import execute

    folder = tmp_path / "proj"
    folder.mkdir()
    own = folder / "own.ipynb"
    monkeypatch.setenv("JPY_SESSION_NAME", str(own))
    cells = [
        ("setup", "code", "%load_ext agi_jupyter"),
        ("target", "code", "answer = 6 * 7\nanswer"),
        ("broken", "code", "1 / 0"),
        ("slow", "code", "import time\ntime.sleep(120)"),
        ("ask", "code", "%%agi -a build\nwork on this notebook"),
        ("undo", "code", "%agi undo {_.run_id}"),
    ]
    original = write_notebook(own, cells)
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.read", {}, id="read")]),
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.edit",
                    {
                        "cell_id": "target",
                        "source": "answer = 6 * 9\nanswer",
                        "expected_hash": source_hash("answer = 6 * 7\nanswer"),
                    },
                    id="edit",
                ),
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "broken", "source": "0", "expected_hash": source_hash("wrong")},
                    id="wrong",
                ),
                FakeToolCall(
                    "notebook.insert", {"source": "# added", "after_cell_id": "ask"}, id="insert"
                ),
            ]
        ),
        Turn(
            tool_calls=[FakeToolCall("notebook.run", {"cell_ids": ["target", "broken"]}, id="run")]
        ),
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.run", {"cell_ids": ["slow"], "interrupt_after": 1}, id="slow"
                )
            ]
        ),
        Turn(text="54, a ZeroDivisionError, and a nap cut short."),
    )
    book = nbformat.read(own, as_version=4)
    book.cells = [c for c in book.cells if c.id in ("setup", "ask", "undo")]  # what runs now
    done = execute(book, folder)
    ask = done.cells[1].outputs
    final = ask[-1]["data"]["text/markdown"]
    assert "54, a ZeroDivisionError" in final
    assert all(o["output_type"] == "display_data" for o in ask), "no cell output leaked here"
    assert "ZeroDivisionError" not in "".join(str(o) for o in ask[:-1])
    with open_store(folder) as store:
        (run,) = store.list_runs().items
        calls = {c.tool_call_id: c for c in store.list_tool_calls(run_id=run.id)}
    assert "read from the file" in calls["read"].result["output"]
    assert calls["wrong"].result["error"]["code"] == "HASH_MISMATCH"
    ran = calls["run"].result["output"]
    assert "cell target: ran as" in ran
    assert "- result: 54" in ran
    assert "ZeroDivisionError" in ran
    assert "interrupted after 1 s (kernel interrupt)" in calls["slow"].result["output"]
    undone = done.cells[2].outputs[0]["text"].splitlines()
    assert len(undone) >= 3, undone
    assert all(line.startswith("agi: reverted own.ipynb cell") for line in undone)
    assert own.read_bytes() == original, "undo put the file back byte for byte"


def test_the_tab_link_waits_for_a_hello_once(tmp_path: Path) -> None:
    import asyncio
    import time
    from types import SimpleNamespace

    from agi_jupyter.kernel.tab import HELLO_WAIT, TabLink

    link = TabLink()
    with open_store(tmp_path) as store:
        link.comm, link.opened_at = SimpleNamespace(comm_id="c1"), time.monotonic()
        started = time.monotonic()
        assert asyncio.run(link.attached(store)) is False
        assert time.monotonic() - started >= HELLO_WAIT, "no tab answered in time"
        assert link.silent is True, "later runs do not wait for a hello"
        link.comm, link.opened_at = SimpleNamespace(comm_id="c2"), time.monotonic()
        assert asyncio.run(link.attached(store)) is False
        store.put_notebook_reply("hello:c2", {"ok": True, "path": "own.ipynb"})
        assert asyncio.run(link.attached(store)) is True
        assert link.silent is False


def test_undo_magic_rewinds_a_turn_of_file_changes(
    cell: RunCell, fake_llm: FakeLLMServer, own_notebook: Path
) -> None:
    project = own_notebook.parent
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_write", {"path": "out.txt", "content": "first\n"})]),
        Turn(tool_calls=[FakeToolCall("fs_write", {"path": "out.txt", "content": "second\n"})]),
        Turn(text="wrote it twice"),
    )
    run = cell("%%agi -a build\nwrite out.txt twice")
    assert (project / "out.txt").read_text() == "second\n"
    undone = cell(f"%agi undo {run.value.run_id} --turn 2")
    assert undone.stdout == "agi: reverted out.txt (written)\n"
    assert (project / "out.txt").read_text() == "first\n"
    (project / "out.txt").write_text("mine\n")
    refused = cell(f"%agi undo {run.value.run_id}")
    assert "conflict out.txt (created): out.txt was changed since" in refused.stdout
    assert "1 change(s) not undone: out.txt changed since" in refused.stderr
    assert (project / "out.txt").read_text() == "mine\n"
