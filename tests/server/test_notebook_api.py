"""Server runs in a notebook (no tab, no RTC: the file; cells in the notebook's kernel in
this server): the REST bar of issue 13, undo over REST, cancel interrupts the kernel."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import nbformat

from agi_jupyter.notebook import source_hash
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.notebook.conftest import write_notebook
from tests.server.conftest import TERMINAL, Fetch, wait_for


def tool_results(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        p["tool_call_id"]: p for m in messages for p in m["parts"] if p["type"] == "tool_result"
    }


async def bound_session(fetch: Fetch, path: str = "analysis.ipynb") -> str:
    made = await fetch("sessions", method="POST", json={"agent": "build", "notebook_path": path})
    return str(made.data["session"]["id"])


async def test_a_rest_run_reads_inserts_edits_runs_and_undo_restores_the_file(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    path = server_root / "analysis.ipynb"
    original = write_notebook(path)
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.read", {}, id="read")]),
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.insert",
                    {"source": "note", "cell_type": "markdown", "index": 0},
                    id="insert",
                ),
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "total", "source": "x * 3", "expected_hash": source_hash("x + 1")},
                    id="edit",
                ),
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "load", "source": "x = 1", "expected_hash": source_hash("stale")},
                    id="wrong",
                ),
            ]
        ),
        Turn(tool_calls=[FakeToolCall("notebook.run", {"cell_ids": ["load", "total"]}, id="run")]),
        Turn(text="x * 3 is 60"),
    )
    session = await bound_session(fetch)
    reply = await fetch(
        "sessions", session, "messages", method="POST", json={"content": "work on the notebook"}
    )
    assert reply.data["run"]["status"] == "succeeded", reply
    run_id = reply.data["run"]["id"]
    results = tool_results(reply.data["messages"])
    assert (
        "id load · code · source_hash " + source_hash("x = 20\nprint('loaded')")
        in (results["read"]["output"])
    )
    assert "receipt: re-read cell" in results["insert"]["output"]
    assert "source_hash " + source_hash("x * 3") in results["edit"]["output"]
    assert results["wrong"]["is_error"] is True
    assert "changed since you read it" in results["wrong"]["output"]
    assert "stdout: loaded" in results["run"]["output"]
    assert "result: 60" in results["run"]["output"]

    book = nbformat.read(path, as_version=4)
    assert [c.source for c in book.cells][1:] == ["# Analysis", "x = 20\nprint('loaded')", "x * 3"]
    assert book.cells[3].outputs[0]["data"]["text/plain"] == "60"
    changes = (await fetch("runs", run_id, "changes")).data["changes"]
    assert [c["tool_call_id"] for c in changes] == ["insert", "edit", "run", "run"]
    assert all(c["kind"] == "notebook" and c["path"] == "analysis.ipynb" for c in changes)

    undone = await fetch("runs", run_id, "undo", method="POST", json={})
    assert undone.status == 200, undone
    assert undone.data == {
        "run_id": run_id,
        "turn": None,
        "redo": False,
        "notebooks": [
            {"path": "analysis.ipynb", "status": "restored", "backend": "file", "forced": False}
        ],
        "files": [],
        "changes": undone.data["changes"],
        "conflicts": [],
    }
    assert [(c["cell_id"], c["status"]) for c in undone.data["changes"]] == [
        (changes[0]["cell_id"], "reverted"),
        ("total", "reverted"),
        ("load", "reverted"),
        ("total", "reverted"),
    ]
    assert path.read_bytes() == original, "byte for byte"


async def test_undo_over_rest_keeps_a_cell_the_user_added_and_forces_only_named_cells(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    path = server_root / "analysis.ipynb"
    write_notebook(path)
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.delete",
                    {"cell_id": "intro", "expected_hash": source_hash("# Analysis")},
                ),
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "total", "expected_hash": source_hash("x + 1"), "source": "x"},
                ),
            ]
        ),
        Turn(text="deleted and edited"),
    )
    session = await bound_session(fetch)
    reply = await fetch("sessions", session, "messages", method="POST", json={"content": "go"})
    run_id = reply.data["run"]["id"]
    book = nbformat.read(path, as_version=4)
    book.cells.append(nbformat.v4.new_code_cell("mine = 1", id="mine"))
    book.cells[1].source = "x + 100"  # the run's cell "total", changed since
    nbformat.write(book, path)
    undone = await fetch("runs", run_id, "undo", method="POST", json={})
    assert undone.status == 200, undone
    assert [(c["cell_id"], c["status"]) for c in undone.data["changes"]] == [
        ("intro", "reverted"),
        ("total", "conflict"),
    ]
    assert [c["cell_id"] for c in undone.data["conflicts"]] == ["total"]
    book = nbformat.read(path, as_version=4)
    assert [(c.id, c.source) for c in book.cells] == [
        ("intro", "# Analysis"),
        ("load", "x = 20\nprint('loaded')"),
        ("total", "x + 100"),
        ("mine", "mine = 1"),
    ]
    forced = await fetch("runs", run_id, "undo", method="POST", json={"force": ["total"]})
    assert [(c["cell_id"], c["status"], c["forced"]) for c in forced.data["changes"]] == [
        ("intro", "skipped", False),
        ("total", "reverted", True),
    ]
    assert [c.source for c in nbformat.read(path, as_version=4).cells][2:] == ["x + 1", "mine = 1"]
    missing = await fetch("runs", "run_nope", "undo", method="POST", json={})
    assert missing.status == 404
    unknown = await fetch("runs", run_id, "undo", method="POST", json={"changes": ["chg_nope"]})
    assert unknown.status == 404
    assert unknown.error["code"] == "CHANGE_NOT_FOUND"


async def test_undo_over_rest_rewinds_to_before_a_turn(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    path = server_root / "analysis.ipynb"
    original = write_notebook(path)
    first = {"cell_id": "total", "expected_hash": source_hash("x + 1"), "source": "x + 2"}
    second = {"cell_id": "total", "expected_hash": source_hash("x + 2"), "source": "x + 3"}
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.edit", first)]),
        Turn(tool_calls=[FakeToolCall("notebook.edit", second)]),
        Turn(text="edited twice"),
    )
    session = await bound_session(fetch)
    reply = await fetch("sessions", session, "messages", method="POST", json={"content": "go"})
    run_id = reply.data["run"]["id"]
    changes = (await fetch("runs", run_id, "changes")).data["changes"]
    assert [c["turn"] for c in changes] == [1, 2]

    bad = await fetch("runs", run_id, "undo", method="POST", json={"turn": 0})
    assert bad.status == 400
    rewound = await fetch("runs", run_id, "undo", method="POST", json={"turn": 2})
    assert rewound.status == 200, rewound
    assert rewound.data["turn"] == 2
    assert rewound.data["notebooks"][0]["status"] == "restored"
    assert nbformat.read(path, as_version=4).cells[2].source == "x + 2"
    whole = await fetch("runs", run_id, "undo", method="POST", json={})
    assert whole.status == 200, whole  # what the turn's undo left is the run's, no conflict
    assert path.read_bytes() == original


async def test_a_cancel_asked_to_interrupt_interrupts_the_running_cell(
    fetch: Fetch, jp_fetch: Any, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    write_notebook(
        server_root / "slow.ipynb",
        [("nap", "code", "import time\nprint('napping', flush=True)\ntime.sleep(120)")],
    )
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("notebook.run", {"cell_ids": ["nap"]})]))
    session = await bound_session(fetch, "slow.ipynb")
    run = (await fetch("sessions", session, "runs", method="POST", json={"input": "run it"})).data[
        "run"
    ]
    deadline = time.monotonic() + 60
    kernel_id = None
    while time.monotonic() < deadline and kernel_id is None:
        sessions = json.loads((await jp_fetch("api", "sessions")).body)
        kernel_id = next((s["kernel"]["id"] for s in sessions if s["path"] == "slow.ipynb"), None)
        await asyncio.sleep(0.2)
    assert kernel_id is not None, "the notebook got a kernel session for the run"
    state = "starting"
    while time.monotonic() < deadline and state != "busy":
        await asyncio.sleep(0.2)
        state = json.loads((await jp_fetch("api", "kernels", kernel_id)).body)["execution_state"]
    assert state == "busy", "the cell runs"
    json_reply = {"Accept": "application/json"}

    async def printed() -> bool:  # past the print: inside time.sleep
        events = (await fetch("runs", run["id"], "events", headers=json_reply)).data["events"]
        return any("napping" in str(e.get("chunk", "")) for e in events)

    await wait_for(printed, within=60)
    cancelled = await fetch("runs", run["id"], "cancel", method="POST", json={"interrupt": True})
    assert cancelled.data["run"]["status"] in TERMINAL
    (cell,) = cancelled.data["cells"]  # the cell the cancel interrupted (else: left running)
    assert (cell["path"], cell["cell_id"], cell["interrupted"]) == ("slow.ipynb", "nap", True)
    while time.monotonic() < deadline and state != "idle":
        await asyncio.sleep(0.2)
        state = json.loads((await jp_fetch("api", "kernels", kernel_id)).body)["execution_state"]
    assert state == "idle", "the kernel was interrupted, not left sleeping for 120 s"


async def test_a_notebook_the_model_names_outside_the_project_is_not_read(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    """The user's own notebook may lie anywhere under the server root (the side panel names it
    from there); a path the model chooses stays inside the run's project."""
    (server_root / "alpha").mkdir()
    write_notebook(server_root / "private.ipynb", [("p", "code", "password = 'hunter2-x'")])
    write_notebook(server_root / "open.ipynb")
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.read", {"path": "private.ipynb"}, id="theirs")]),
        Turn(tool_calls=[FakeToolCall("notebook.read", {}, id="own")]),
        Turn(text="done"),
    )
    alpha = {"project": "alpha"}
    made = await fetch(
        "sessions",
        method="POST",
        json={"agent": "plan", "notebook_path": "open.ipynb"},
        params=alpha,
    )
    session = made.data["session"]["id"]
    reply = await fetch(
        "sessions", session, "messages", method="POST", json={"content": "read"}, params=alpha
    )
    results = tool_results(reply.data["messages"])
    assert results["theirs"]["is_error"] is True
    assert "hunter2" not in json.dumps(reply.data)
    assert results["own"]["is_error"] is False, results["own"]
    assert "# Analysis" in results["own"]["output"]
