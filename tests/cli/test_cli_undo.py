"""``agi undo RUN`` and ``agi diff RUN``: the run's cells put back (the file byte for byte),
the user's cells kept; exit 4 when some were changed since (left as they are)."""

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


def test_undo_restores_the_notebook_and_leaves_a_cell_changed_since(
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

    shown = run_cli("diff", run_id)
    assert shown.exit_code == 0, shown.stderr
    (change_id,) = [c.id for c in agi.changes(run_id)]
    assert shown.stdout.splitlines()[0] == f"{change_id}  edited nb.ipynb cell total turn 1"
    assert "-x + 1\n+x + 2\n" in shown.stdout
    assert json.loads(run_cli("diff", run_id, "--json").stdout)[0]["cell_id"] == "total"

    done = run_cli("undo", run_id, "--change", change_id)
    assert done.exit_code == 0, done.stderr
    assert done.stdout == "reverted nb.ipynb cell total (edited)\n"
    assert path.read_bytes() == original
    again = json.loads(run_cli("undo", run_id, "--json").stdout)
    assert [(c["status"], c["reason"]) for c in again["changes"]] == [("skipped", "already undone")]
    assert "(undone)" in run_cli("diff", run_id).stdout.splitlines()[0]

    second = edit_run(agi, fake_llm, "x + 3")
    book = nbformat.read(path, as_version=4)
    book.cells[1].source = "x = 99"  # another cell: kept
    book.cells[2].source = "x + 3  # and mine"  # the run's cell: a conflict
    nbformat.write(book, path)
    refused = run_cli("undo", second)
    assert refused.exit_code == 4
    assert refused.stdout == "conflict nb.ipynb cell total (edited): cell total was edited since\n"
    assert "1 change(s) not undone: nb.ipynb cell total changed since" in refused.stderr
    assert nbformat.read(path, as_version=4).cells[2].source == "x + 3  # and mine"
    forced = run_cli("undo", second, "--force-cell", "total")
    assert forced.exit_code == 0, forced.stderr
    assert forced.stdout == "reverted nb.ipynb cell total (edited) (forced)\n"
    book = nbformat.read(path, as_version=4)
    assert [c.source for c in book.cells][1:] == ["x = 99", "x + 1"]
    redone = run_cli("undo", second, "--redo")
    assert redone.exit_code == 0, redone.stderr
    assert redone.stdout == "reverted nb.ipynb cell total (edited)\n"
    assert [c.source for c in nbformat.read(path, as_version=4).cells][1:] == ["x = 99", "x + 3"]


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
    assert last.stdout == "reverted new.txt (written)\n"
    assert (project / "new.txt").read_text() == "v1\n"
    assert (project / "keep.txt").read_text() == "one\nTWO\n"

    (project / "keep.txt").write_text("someone else\n")
    refused = run_cli("undo", run_id, "--turn", "2")
    assert refused.exit_code == 4
    assert refused.stdout == (
        "conflict keep.txt (written): keep.txt was changed since\n"
        "skipped new.txt (written): already undone\n"
    )
    assert (project / "keep.txt").read_text() == "someone else\n"
    forced = json.loads(run_cli("undo", run_id, "--turn", "2", "--force", "--json").stdout)
    assert forced["turn"] == 2
    assert [(c["path"], c["status"], c["forced"]) for c in forced["changes"]] == [
        ("keep.txt", "reverted", True),
        ("new.txt", "skipped", False),
    ]
    assert (project / "keep.txt").read_text() == "one\ntwo\n"
    assert (project / "new.txt").read_text() == "v1\n"
    whole = run_cli("undo", run_id)  # the whole run: turn 1 created new.txt
    assert whole.stdout == (
        "reverted new.txt (created)\n"
        "skipped keep.txt (written): already undone\n"
        "skipped new.txt (written): already undone\n"
    )
    assert not (project / "new.txt").exists()
    assert run_cli("undo", run_id, "--turn", "0").exit_code == 2


def test_agi_runs_marks_a_run_undone_partly_or_whole(
    run_cli: RunCli, agi: Agi, fake_llm: FakeLLMServer, project: Path
) -> None:
    run_id = three_turns_of_files(agi, fake_llm, project)

    def status() -> str:
        rows = [line for line in run_cli("runs").stdout.splitlines() if run_id in line]
        assert len(rows) == 1, rows
        return rows[0]

    assert "undone" not in status()
    assert agi.undo(run_id, turn=3).conflicts == []
    assert "succeeded (partly undone)" in status()
    assert agi.undo(run_id).conflicts == []
    assert "succeeded (undone)" in status()
    assert "partly" not in status()


def test_agi_diff_says_which_changes_were_kept(
    run_cli: RunCli, agi: Agi, fake_llm: FakeLLMServer, project: Path
) -> None:
    run_id = three_turns_of_files(agi, fake_llm, project)
    patched = next(c for c in agi.changes(run_id) if c.path == "keep.txt")
    assert [c.kept for c in agi.keep(run_id, [patched.id])] == [False, True, False]
    headers = [line for line in run_cli("diff", run_id).stdout.splitlines() if "  " in line]
    assert [h.endswith("(kept)") for h in headers if h.startswith("chg_")] == [False, True, False]
