"""Issue 24's bar over REST, on the headless file backend (both store backends): a run's
changes per cell with unified diffs, undone change by change and then whole, each undo
putting back only the run's cells and keeping the user's edit and new cell (no force); redo;
and the diff of a pending edit in review mode ``ask`` through the approvals API."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import nbformat

from agi_jupyter.notebook import source_hash
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.notebook.conftest import write_notebook
from tests.server.conftest import Fetch

CELLS = [
    ("intro", "markdown", "# Analysis"),
    ("load", "code", "x = 20"),
    ("total", "code", "x + 1"),
]


def sources(path: Path) -> list[tuple[str, str]]:
    return [(c.id, c.source) for c in nbformat.read(path, as_version=4).cells]


async def session_on(fetch: Fetch, path: str, **extra: Any) -> str:
    made = await fetch(
        "sessions",
        method="POST",
        json={"agent": "build", "notebook_path": path, **extra},
    )
    return str(made.data["session"]["id"])


def edit(cell_id: str, old: str, new: str) -> FakeToolCall:
    arguments = {"cell_id": cell_id, "expected_hash": source_hash(old), "source": new}
    return FakeToolCall("notebook.edit", arguments, id=f"edit-{cell_id}")


async def test_a_run_is_undone_change_by_change_then_whole_keeping_the_users_work(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    path = server_root / "analysis.ipynb"
    write_notebook(path, CELLS)
    fake_llm.enqueue(
        Turn(tool_calls=[edit("load", "x = 20", "x = 30"), edit("total", "x + 1", "x * 2")]),
        Turn(text="edited two cells"),
    )
    session = await session_on(fetch, "analysis.ipynb")
    reply = await fetch("sessions", session, "messages", method="POST", json={"content": "go"})
    assert reply.data["run"]["status"] == "succeeded", reply
    run_id = reply.data["run"]["id"]

    # The user, after the run: an edit of a third cell, and a new cell.
    book = nbformat.read(path, as_version=4)
    book.cells[0].source = "# My analysis"
    book.cells.append(nbformat.v4.new_code_cell("mine = 1", id="mine"))
    nbformat.write(book, path)
    users = [("intro", "# My analysis"), ("mine", "mine = 1")]

    listed = await fetch("runs", run_id, "changes")
    assert listed.status == 200, listed
    changes = listed.data["changes"]
    assert [(c["cell_id"], c["action"], c["turn"], c["undone"]) for c in changes] == [
        ("load", "edited", 1, False),
        ("total", "edited", 1, False),
    ]
    load, total = changes
    assert (load["before"], load["after"], load["tool_call_id"]) == (
        "x = 20",
        "x = 30",
        "edit-load",
    )
    assert load["id"] == f"{load['change_id']}/load"
    assert load["diff"] == (
        "--- a/analysis.ipynb [cell load code]\n"
        "+++ b/analysis.ipynb [cell load code]\n"
        "@@ -1 +1 @@\n"
        "-x = 20\n"
        "+x = 30\n"
    )
    assert "-x + 1\n+x * 2\n" in total["diff"]

    first = await fetch("runs", run_id, "undo", method="POST", json={"changes": [total["id"]]})
    assert first.status == 200, first
    assert [(c["id"], c["status"]) for c in first.data["changes"]] == [(total["id"], "reverted")]
    assert first.data["conflicts"] == []
    assert sources(path) == [users[0], ("load", "x = 30"), ("total", "x + 1"), users[1]]

    second = await fetch("runs", run_id, "undo", method="POST", json={"changes": [load["id"]]})
    assert [(c["id"], c["status"]) for c in second.data["changes"]] == [(load["id"], "reverted")]
    assert sources(path) == [users[0], ("load", "x = 20"), ("total", "x + 1"), users[1]]
    marked = (await fetch("runs", run_id, "changes")).data["changes"]
    assert [c["undone"] for c in marked] == [True, True]

    again = await fetch("runs", run_id, "undo", method="POST", json={})
    assert [c["status"] for c in again.data["changes"]] == ["skipped", "skipped"]
    assert [c["reason"] for c in again.data["changes"]] == ["already undone"] * 2
    assert again.data["notebooks"][0]["status"] == "unchanged"

    redone = await fetch("runs", run_id, "redo", method="POST", json={})
    assert redone.status == 200, redone
    assert [c["status"] for c in redone.data["changes"]] == ["reverted", "reverted"]
    assert sources(path) == [users[0], ("load", "x = 30"), ("total", "x * 2"), users[1]]
    assert [c["undone"] for c in (await fetch("runs", run_id, "changes")).data["changes"]] == [
        False,
        False,
    ]

    whole = await fetch("runs", run_id, "undo", method="POST", json={})
    assert [c["status"] for c in whole.data["changes"]] == ["reverted", "reverted"]
    assert whole.data["notebooks"] == [
        {"path": "analysis.ipynb", "status": "restored", "backend": "file", "forced": False}
    ]
    assert sources(path) == [users[0], ("load", "x = 20"), ("total", "x + 1"), users[1]]


async def test_files_a_run_wrote_are_changes_undone_byte_for_byte(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    (server_root / "keep.txt").write_text("one\ntwo\n")
    patch = "*** Begin Patch\n*** Update File: keep.txt\n@@\n-two\n+TWO\n*** End Patch"
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_write", {"path": "new.txt", "content": "v1\n"})]),
        Turn(tool_calls=[FakeToolCall("apply_patch", {"patch": patch})]),
        Turn(text="done"),
    )
    made = await fetch("sessions", method="POST", json={"agent": "build"})
    session = made.data["session"]["id"]
    reply = await fetch("sessions", session, "messages", method="POST", json={"content": "go"})
    run_id = reply.data["run"]["id"]
    changes = (await fetch("runs", run_id, "changes")).data["changes"]
    assert [(c["path"], c["action"], c["cell_id"], c["turn"]) for c in changes] == [
        ("new.txt", "created", None, 1),
        ("keep.txt", "written", None, 2),
    ]
    assert changes[0]["diff"].startswith("--- /dev/null\n+++ b/new.txt\n")
    assert "-two\n+TWO\n" in changes[1]["diff"]

    (server_root / "new.txt").write_text("the user's\n")
    undone = await fetch("runs", run_id, "undo", method="POST", json={})
    assert [(c["path"], c["status"]) for c in undone.data["changes"]] == [
        ("new.txt", "conflict"),
        ("keep.txt", "reverted"),
    ]
    assert (server_root / "new.txt").read_text() == "the user's\n"
    assert (server_root / "keep.txt").read_text() == "one\ntwo\n"
    forced = await fetch("runs", run_id, "undo", method="POST", json={"force": ["new.txt"]})
    assert [c["status"] for c in forced.data["changes"]] == ["reverted", "skipped"]
    assert not (server_root / "new.txt").exists()
    assert forced.data["files"] == [
        {"path": "new.txt", "status": "removed", "forced": True},
        {"path": "keep.txt", "status": "unchanged", "forced": False},
    ]


async def test_a_pending_edit_in_review_mode_ask_shows_its_diff(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    path = server_root / "analysis.ipynb"
    write_notebook(path, CELLS)
    (server_root / "notes.txt").write_text("old line\n")
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                edit("total", "x + 1", "x * 3"),
                FakeToolCall("fs_write", {"path": "notes.txt", "content": "new line\n"}, id="w"),
            ]
        ),
        Turn(text="done"),
    )
    session = await session_on(fetch, "analysis.ipynb", review_mode="ask")
    run = (await fetch("sessions", session, "runs", method="POST", json={"input": "go"})).data[
        "run"
    ]
    run_id = run["id"]
    waiting = await _wait_for_approvals(fetch, run_id)
    by_call = {a["tool_call_id"]: a for a in waiting}
    assert by_call["edit-total"]["diff"] == (
        "--- a/analysis.ipynb [cell total code]\n"
        "+++ b/analysis.ipynb [cell total code]\n"
        "@@ -1 +1 @@\n"
        "-x + 1\n"
        "+x * 3\n"
    )
    assert "-old line\n+new line\n" in by_call["w"]["diff"]
    assert sources(path)[2] == ("total", "x + 1"), "nothing applied while it waits"
    assert (server_root / "notes.txt").read_text() == "old line\n"
    stored = await fetch("runs", run_id, "events", headers={"Accept": "application/json"})
    events = stored.data["events"]
    asked = [e for e in events if e["type"] == "approval.requested"]
    assert {e["tool_call_id"]: e["diff"] for e in asked}["edit-total"] == (
        by_call["edit-total"]["diff"]
    )


async def _wait_for_approvals(fetch: Fetch, run_id: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        reply = await fetch("runs", run_id, "approvals")
        if reply.data["approvals"]:
            return list(reply.data["approvals"])
        await asyncio.sleep(0.2)
    raise AssertionError(f"run {run_id} never waited for an approval")


async def test_kept_and_undone_changes_are_no_longer_to_review(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    """What the notebook highlights: the changes of ended runs to a notebook, neither undone
    nor kept; Keep is recorded in the run's log, so it holds for every door and a reload."""
    path = server_root / "review.ipynb"
    write_notebook(path, CELLS)
    fake_llm.enqueue(
        Turn(tool_calls=[edit("load", "x = 20", "x = 30"), edit("total", "x + 1", "x * 2")]),
        Turn(text="edited two cells"),
    )
    session = await session_on(fetch, "review.ipynb")
    reply = await fetch("sessions", session, "messages", method="POST", json={"content": "go"})
    run_id = reply.data["run"]["id"]

    async def to_review() -> list[str | None]:
        listed = await fetch("changes", params={"path": "review.ipynb", "to_review": "true"})
        assert listed.status == 200, listed
        return [c["cell_id"] for c in listed.data["changes"]]

    assert await to_review() == ["load", "total"]
    load, total = (await fetch("runs", run_id, "changes")).data["changes"]
    assert (load["kept"], total["kept"]) == (False, False)

    undone = await fetch("runs", run_id, "undo", method="POST", json={"changes": [load["id"]]})
    assert [c["status"] for c in undone.data["changes"]] == ["reverted"]
    assert await to_review() == ["total"]
    kept = await fetch("runs", run_id, "keep", method="POST", json={"changes": [total["id"]]})
    assert kept.status == 200, kept
    states = [(True, False), (False, True)]  # (undone, kept) of load, total
    assert [(c["undone"], c["kept"]) for c in kept.data["changes"]] == states
    assert await to_review() == []
    everything = await fetch("changes", params={"path": "review.ipynb"})
    assert [c["cell_id"] for c in everything.data["changes"]] == ["load", "total"]
    assert sources(path)[1:] == [("load", "x = 20"), ("total", "x * 2")]

    again = await fetch("runs", run_id, "keep", method="POST", json={})
    assert [(c["undone"], c["kept"]) for c in again.data["changes"]] == states
    unknown = await fetch("runs", run_id, "keep", method="POST", json={"changes": ["nope"]})
    assert (unknown.status, unknown.data["error"]["code"]) == (404, "CHANGE_NOT_FOUND")
    shown = (await fetch("runs", run_id, "changes")).data["changes"]
    assert [(c["undone"], c["kept"]) for c in shown] == states
