"""The notebook tools obey the same rules as the file tools: confined to the project, opened
race-free, and what they send to the model (the outline, cells, outputs) or write into the
notebook on the agent's behalf is redacted by value."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import nbformat
import pytest

from agi_jupyter.errors import PathOutsideProject
from agi_jupyter.notebook.access import HeadlessAccess
from agi_jupyter.notebook.ops import NotebookError
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.notebook.conftest import MakeAgi, write_notebook

SECRET = "sk-test-openai-secret-0001"  # OPENAI_API_KEY of the fixtures' environment
SHAPED = "ghp_" + "Zq8v3Lr6Nw1Tb5Hc9Kd2Mf7Pj4Xs0Ya"  # known through a configured pattern
PATTERNS = {"redact_patterns": [r"ghp_[A-Za-z0-9]{30}"]}


def with_secret_output(path: Path) -> None:
    """The notebook's ``load`` cell printed both secrets, and its source names one."""
    book = nbformat.read(path, as_version=4)
    book.cells[1].source = f"token = {SHAPED!r}\nprint('loaded')"
    book.cells[1].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=f"key {SECRET}\ntoken {SHAPED}\n")
    ]
    nbformat.write(book, path)


def leaks(text: str) -> list[str]:
    forms = {SECRET, SECRET[::-1], SHAPED, SHAPED[::-1]}
    return sorted(form for form in forms if form in text)


def test_cells_and_the_outline_reach_the_model_redacted(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path
) -> None:
    with_secret_output(notebook)
    agi = make_agi(config=PATTERNS)
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("notebook.read", {}, id="r")]), Turn(text="ok"))
    agi.ask("look", agent="plan", notebook_path="analysis.ipynb", cell_id="load")
    sent = json.dumps([r.body for r in fake_llm.requests])
    assert "## The notebook analysis.ipynb" in sent, "the outline was sent"
    assert "id load" in sent, "the cells were read"
    assert leaks(sent) == []
    assert "[REDACTED:" in sent


def test_a_path_the_model_names_outside_the_project_is_refused(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, tmp_path: Path
) -> None:
    write_notebook(tmp_path / "elsewhere.ipynb")
    agi = make_agi()
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.read", {"path": "../elsewhere.ipynb"}, id="r")]),
        Turn(text="ok"),
    )
    run = agi.ask("read it", agent="plan").run
    (call,) = agi.store.list_tool_calls(run_id=run.id)
    assert call.is_error
    assert "outside the project" in json.dumps(call.result)
    assert "# Analysis" not in json.dumps(call.result)


def test_a_folder_swapped_for_a_symlink_out_is_not_followed(project: Path, tmp_path: Path) -> None:
    """The path is checked when the notebook is located; by the time it is read or written,
    its folder is a symlink to a folder outside: neither the read nor the write goes there."""
    (project / "sub").mkdir()
    write_notebook(project / "sub" / "n.ipynb")
    outside = tmp_path / "outside"
    outside.mkdir()
    planted = write_notebook(outside / "n.ipynb", [("x", "code", "print('outside')")])
    access = HeadlessAccess()
    target = access.locate(project, "sub/n.ipynb")
    (project / "sub").rename(project / "sub-old")
    (project / "sub").symlink_to(outside, target_is_directory=True)
    doc = asyncio.run(access.open(target))
    with pytest.raises((NotebookError, PathOutsideProject)):
        asyncio.run(doc.read())
    with pytest.raises((NotebookError, PathOutsideProject)):
        asyncio.run(doc.insert("code", "print('in')"))
    assert (outside / "n.ipynb").read_bytes() == planted


@pytest.mark.slow
def test_what_notebook_run_prints_goes_into_the_notebook_redacted(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path, project: Path
) -> None:
    book = nbformat.read(notebook, as_version=4)
    # The secret is built in the kernel, so only the output holds it whole.
    book.cells[1].source = f"print({SECRET[:9]!r} + {SECRET[9:]!r})"
    nbformat.write(book, notebook)
    agi = make_agi()
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.run", {"cell_ids": ["load"]}, id="run")]),
        Turn(text="done"),
    )
    run = agi.ask("run it", agent="build", notebook_path="analysis.ipynb").run
    assert run.status == "succeeded", run.error
    outputs = nbformat.read(notebook, as_version=4).cells[1].outputs
    assert outputs, "the cell ran and its output is in the notebook"
    assert "[REDACTED:OPENAI_API_KEY]" in outputs[0]["text"]
    assert leaks(notebook.read_text()) == []
    agi.close()
    with sqlite3.connect(project / ".agi" / "agi.sqlite") as db:
        blobs = [bytes(row[0]).decode() for row in db.execute("SELECT data FROM blobs")]
    assert blobs, "the run's snapshots are stored"
    assert leaks("\n".join(blobs)) == []
    assert leaks(json.dumps([r.body for r in fake_llm.requests])) == []
