"""``agi undo RUN``: the notebook file back byte for byte; exit 4 when the cells changed."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from agi_jupyter.app import Agi
from agi_jupyter.notebook import source_hash
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.cli.conftest import RunCli
from tests.notebook.conftest import write_notebook


def edit_run(agi: Agi, fake_llm: FakeLLMServer, source: str) -> str:
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.edit",
                    {
                        "path": "nb.ipynb",
                        "cell_id": "total",
                        "expected_hash": source_hash("x + 1"),
                        "source": source,
                    },
                )
            ]
        ),
        Turn(text="edited"),
    )
    return agi.ask("edit the notebook", agent="build", model="fake:echo").run_id


def test_undo_restores_the_notebook_and_refuses_after_a_user_edit(
    run_cli: RunCli, agi: Agi, fake_llm: FakeLLMServer, project: Path
) -> None:
    path = project / "nb.ipynb"
    original = write_notebook(path)
    run_id = edit_run(agi, fake_llm, "x + 2")
    assert path.read_bytes() != original

    session_id = agi.run(run_id).session_id
    exported = run_cli("export", session_id, "--to", "-")  # agi export keeps working
    assert exported.exit_code == 0, exported.stderr
    book = nbformat.reads(exported.stdout, as_version=4)
    nbformat.validate(book)
    assert any(c.source.startswith("# tool call: notebook.edit") for c in book.cells)

    done = run_cli("undo", run_id)
    assert done.exit_code == 0, done.stderr
    assert done.stdout == "restored nb.ipynb (file)\n"
    assert path.read_bytes() == original
    assert json.loads(run_cli("undo", run_id, "--json").stdout)["notebooks"][0]["status"] == (
        "unchanged"
    )

    second = edit_run(agi, fake_llm, "x + 3")
    book = nbformat.read(path, as_version=4)
    book.cells[1].source = "x = 99"
    nbformat.write(book, path)
    refused = run_cli("undo", second)
    assert refused.exit_code == 4
    assert "cell load edited" in refused.stderr
    assert nbformat.read(path, as_version=4).cells[2].source == "x + 3"
    forced = run_cli("undo", second, "--force")
    assert forced.exit_code == 0
    assert forced.stdout == "restored nb.ipynb (file) (forced)\n"
    assert nbformat.read(path, as_version=4).cells[1].source == "x = 20\nprint('loaded')"


def test_undo_of_a_run_without_changes_and_of_an_unknown_run(
    run_cli: RunCli, agi: Agi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="hi"))
    run_id = agi.ask("hello", model="fake:echo").run_id
    done = run_cli("undo", run_id)
    assert done.exit_code == 0
    assert "changed no notebook" in done.stdout
    unknown = run_cli("undo", "run_nope")
    assert unknown.exit_code == 2  # an id that names nothing is bad usage (README)
    assert "not found" in unknown.stderr


def three_turns_of_files(agi: Agi, fake_llm: FakeLLMServer, project: Path) -> str:
    """Turn 1 creates new.txt, turn 2 patches keep.txt, turn 3 rewrites new.txt."""
    (project / "keep.txt").write_text("one\ntwo\n")
    patch = "*** Begin Patch\n*** Update File: keep.txt\n@@\n-two\n+TWO\n*** End Patch"
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_write", {"path": "new.txt", "content": "v1\n"})]),
        Turn(tool_calls=[FakeToolCall("apply_patch", {"patch": patch})]),
        Turn(tool_calls=[FakeToolCall("fs_write", {"path": "new.txt", "content": "v3\n"})]),
        Turn(text="done"),
    )
    run = agi.ask("change files", agent="build", model="fake:echo").run
    assert run.status == "succeeded"
    assert (project / "new.txt").read_text() == "v3\n"
    assert (project / "keep.txt").read_text() == "one\nTWO\n"
    return run.id


def test_file_changes_are_recorded_per_turn(
    agi: Agi, fake_llm: FakeLLMServer, project: Path
) -> None:
    run_id = three_turns_of_files(agi, fake_llm, project)
    changes = agi.store.list_changes(run_id=run_id)
    assert [(c.kind, c.path, c.turn) for c in changes] == [
        ("file", "new.txt", 1),
        ("file", "keep.txt", 2),
        ("file", "new.txt", 3),
    ]
    assert changes[0].before_sha is None  # created: nothing before
    assert changes[0].after_sha is not None
    assert agi.store.get_blob(changes[0].after_sha) == b"v1\n"
    assert agi.store.get_blob(changes[1].before_sha or "") == b"one\ntwo\n"
    assert all(c.tool_call_id for c in changes)


def test_undo_a_turn_rewinds_the_files_to_before_it(
    run_cli: RunCli, agi: Agi, fake_llm: FakeLLMServer, project: Path
) -> None:
    run_id = three_turns_of_files(agi, fake_llm, project)

    last = run_cli("undo", run_id, "--turn", "3")
    assert last.exit_code == 0, last.stderr
    assert last.stdout == "restored new.txt (file)\n"
    assert (project / "new.txt").read_text() == "v1\n"
    assert (project / "keep.txt").read_text() == "one\nTWO\n"

    (project / "keep.txt").write_text("someone else\n")
    refused = run_cli("undo", run_id, "--turn", "2")
    assert refused.exit_code == 4
    assert "keep.txt: changed since" in refused.stderr
    assert (project / "new.txt").read_text() == "v1\n"  # nothing was restored
    forced = json.loads(run_cli("undo", run_id, "--turn", "2", "--force", "--json").stdout)
    assert forced["turn"] == 2
    assert {(f["path"], f["status"], f["forced"]) for f in forced["files"]} == {
        ("keep.txt", "restored", True),
        ("new.txt", "unchanged", False),  # before turn 2 it held turn 1's v1, as now
    }
    assert (project / "keep.txt").read_text() == "one\ntwo\n"
    assert (project / "new.txt").read_text() == "v1\n"
    whole = run_cli("undo", run_id)  # the whole run: turn 1 created new.txt
    assert whole.stdout == "removed new.txt (file)\nunchanged keep.txt (file)\n"
    assert not (project / "new.txt").exists()
    assert run_cli("undo", run_id, "--turn", "0").exit_code == 2
