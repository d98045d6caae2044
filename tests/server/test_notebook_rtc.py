"""Server runs on a notebook that is open collaboratively (jupyter-collaboration): the agent
edits the shared document, so open tabs see the change and nothing is written behind them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agi_jupyter.notebook import source_hash
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.notebook.conftest import write_notebook
from tests.server.conftest import Fetch

pytestmark = pytest.mark.slow


@pytest.fixture
def jp_server_config(agi_config: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    settings = {"tick_interval": 0.0, "heartbeat_interval": 0.0, "freeze_gc": False, **agi_config}
    extensions = {"agi_jupyter": True, "jupyter_server_ydoc": True, "jupyter_server_fileid": True}
    return {
        "ServerApp": {"jpserver_extensions": extensions},
        "AgiExtensionApp": settings,
        "YDocExtension": {"document_save_delay": 0.2, "file_poll_interval": 0.2},
        "BaseFileIdManager": {"db_path": str(tmp_path / "file_id_manager.db")},
    }


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """jupyter-collaboration keeps document updates in .jupyter_ystore.db of the working
    folder: the test's, not the repository."""
    monkeypatch.chdir(tmp_path)


async def open_shared(jp_serverapp: Any, path: str) -> Any:
    """The shared document of ``path``, as a collaborative tab opening it makes it."""
    collaboration = jp_serverapp.web_app.settings["jupyter_server_ydoc"]
    return await collaboration.get_document(
        path=path, content_type="notebook", file_format="json", copy=False, create=True
    )


async def test_edits_go_to_the_shared_document_and_undo_restores_it(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path, jp_serverapp: Any
) -> None:
    path = server_root / "shared.ipynb"
    write_notebook(path)
    ydoc = await open_shared(jp_serverapp, "shared.ipynb")
    assert [c["id"] for c in ydoc.get()["cells"]] == ["intro", "load", "total"]
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "total", "source": "x * 10", "expected_hash": source_hash("x + 1")},
                    id="edit",
                ),
                FakeToolCall(
                    "notebook.insert",
                    {"source": "print('new')", "after_cell_id": "total"},
                    id="insert",
                ),
            ]
        ),
        Turn(tool_calls=[FakeToolCall("notebook.run", {"cell_ids": ["load", "total"]}, id="run")]),
        Turn(text="done"),
    )
    made = await fetch(
        "sessions", method="POST", json={"agent": "build", "notebook_path": "shared.ipynb"}
    )
    reply = await fetch(
        "sessions",
        made.data["session"]["id"],
        "messages",
        method="POST",
        json={"content": "edit it"},
    )
    assert reply.data["run"]["status"] == "succeeded", reply
    parts = {
        p["tool_call_id"]: p
        for m in reply.data["messages"]
        for p in m["parts"]
        if p["type"] == "tool_result"
    }
    assert all(not p["is_error"] for p in parts.values()), parts
    cells = ydoc.get()["cells"]
    assert [c["source"] for c in cells] == [
        "# Analysis",
        "x = 20\nprint('loaded')",
        "x * 10",
        "print('new')",
    ]
    assert cells[2]["outputs"][0]["data"]["text/plain"] == "200"
    run_id = reply.data["run"]["id"]
    assert cells[2]["metadata"]["agi"]["run_id"] == run_id  # provenance, in the shared document
    assert cells[3]["metadata"]["agi"]["run_id"] == run_id
    assert "changed_at" in cells[3]["metadata"]["agi"]
    assert cells[1]["outputs"][0]["text"] == "loaded\n"
    rows = (await fetch("runs", reply.data["run"]["id"], "changes")).data["changes"]
    assert len(rows) == 4

    for _ in range(300):  # the collaboration extension saves the shared document soon
        if "x * 10" in path.read_text():
            break
        await asyncio.sleep(0.1)
    assert [c.source for c in nbformat.read(path, as_version=4).cells][2] == "x * 10"

    undone = await fetch("runs", reply.data["run"]["id"], "undo", method="POST", json={})
    assert undone.data["notebooks"][0]["backend"] == "rtc"
    assert undone.data["conflicts"] == [], [
        (c["action"], c["reason"]) for c in undone.data["changes"]
    ]
    restored = ydoc.get()["cells"]
    assert [(c["id"], c["source"]) for c in restored] == [
        ("intro", "# Analysis"),
        ("load", "x = 20\nprint('loaded')"),
        ("total", "x + 1"),
    ]
    assert all(not c.get("outputs") for c in restored)
    assert all("agi" not in c["metadata"] for c in restored), "undo took the provenance back"


async def test_a_concurrent_edit_of_the_shared_cell_is_refused(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path, jp_serverapp: Any
) -> None:
    write_notebook(server_root / "shared.ipynb")
    ydoc = await open_shared(jp_serverapp, "shared.ipynb")
    for ycell in ydoc.ycells:  # a collaborator types into the cell after the agent read it
        if ycell["id"] == "total":
            text = ycell["source"]
            text += "  # typed by a collaborator"
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "total", "source": "0", "expected_hash": source_hash("x + 1")},
                    id="edit",
                )
            ]
        ),
        Turn(text="refused"),
    )
    made = await fetch(
        "sessions", method="POST", json={"agent": "build", "notebook_path": "shared.ipynb"}
    )
    reply = await fetch(
        "sessions",
        made.data["session"]["id"],
        "messages",
        method="POST",
        json={"content": "edit it"},
    )
    (result,) = [
        p for m in reply.data["messages"] for p in m["parts"] if p["type"] == "tool_result"
    ]
    assert result["is_error"] is True
    assert "changed since you read it" in result["output"]
    assert ydoc.get()["cells"][2]["source"] == "x + 1  # typed by a collaborator"
