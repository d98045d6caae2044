"""The ledger of a notebook's executions from a kernel with the extension: the user's cells
(IPython's pre/post_run_cell), the agent's notebook.run of the kernel's own notebook and its
python tool, in the order they started, with the run that made the agent's (both backends);
%agi protect and %agi executions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from agi_jupyter.notebook import source_hash
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.kernel.conftest import RunCell
from tests.notebook.conftest import write_notebook


@pytest.fixture
def own_notebook(shell: Any, project: Path) -> Path:
    path = project / "own.ipynb"
    write_notebook(path)
    shell.magics_manager.registry["AgiMagics"].notebook_path = str(path)
    return path


def test_the_ledger_lists_user_and_agent_executions_in_order(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer, own_notebook: Path
) -> None:
    assert ctx.agi is not None  # the runtime is up (the warm-up's job in a real kernel)
    cell("x = 20\nprint('loaded')", cell_id="load")
    cell("1 / 0", cell_id="boom")
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.run", {"cell_ids": ["total"]}, id="run")]),
        Turn(tool_calls=[FakeToolCall("python", {"code": "y = x * 2\ny"}, id="py")]),
        Turn(text="done"),
    )
    asked = cell("%%agi -a build\nrun the total, then double x", cell_id="ask")
    assert asked.error is None, asked.stderr
    run_id = asked.value.run_id
    ctx.ledger.flush()
    found = ctx.agi.executions("own.ipynb")
    assert [(e.origin, e.cell_id, e.status) for e in found] == [
        ("user", "load", "ok"),
        ("user", "boom", "error"),
        ("user", "ask", "ok"),
        ("agent", "total", "ok"),
        ("agent", None, "ok"),
    ]
    user, agent, python = found[0], found[3], found[4]
    assert user.source_hash == source_hash("x = 20\nprint('loaded')")
    assert "ZeroDivisionError" in (found[1].summary or "")
    assert (agent.run_id, agent.tool_call_id) == (run_id, "run")
    assert agent.source_hash == source_hash("x + 1")
    assert agent.execution_count is not None
    assert agent.summary == "result: 21"
    assert (python.run_id, python.tool_call_id, python.summary) == (run_id, "py", "40")
    table = cell("%agi executions").value
    assert [row[2] for row in table.rows] == ["load", "boom", "ask", "total", ""]


def test_protect_toggles_the_cell_metadata_agents_are_refused_by(
    cell: RunCell, ctx: Any, own_notebook: Path
) -> None:
    assert "cell load is protected" in cell("%agi protect load").stdout
    assert nbformat.read(own_notebook, as_version=4).cells[1].metadata["agi"] == {"protected": True}
    assert "(it already was)" in cell("%agi protect load").stdout
    assert "is not protected" in cell("%agi unprotect load").stdout
    assert "agi" not in nbformat.read(own_notebook, as_version=4).cells[1].metadata
