"""Server runs on a notebook open in a JupyterLab tab without RTC, through the bridge routes.

The tab here is a script speaking the labextension's side of the protocol over real HTTP
(the SSE request stream, the open-notebooks announcement, the replies); the TypeScript side is
driven in a real JupyterLab by tests/browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from pathlib import Path
from typing import Any

import nbformat
from pydantic import TypeAdapter

from agi_jupyter.notebook import NotebookError, source_hash
from agi_jupyter.notebook.model import parse
from agi_jupyter.notebook.ops import apply_op
from agi_jupyter.notebook.wire import TabChange, op_of
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.notebook.conftest import write_notebook
from tests.server.conftest import Api, Fetch, sse_events

CHANGE: TypeAdapter[TabChange] = TypeAdapter(TabChange)


def answer(notebook: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    if request["op"] == "read":
        return {"ok": True, "notebook": notebook}
    before = copy.deepcopy(notebook)
    try:
        apply_op(notebook, op_of(CHANGE.validate_python(request["change"])))
    except NotebookError as e:
        return {"ok": False, "code": e.code, "message": e.message}
    return {"ok": True, "before": before, "after": copy.deepcopy(notebook)}


async def tab(
    api: Api, notebooks: dict[str, dict[str, Any]], ready: asyncio.Event, seen: list[dict[str, Any]]
) -> None:
    """A browser window with ``notebooks`` open (their models are the dicts)."""
    async with (
        api.client(timeout=None) as http,
        http.stream("GET", "notebook/bridge", params={"client_id": "w1"}) as stream,
    ):
        await http.post("notebook/bridge", json={"client_id": "w1", "open": list(notebooks)})
        ready.set()
        async for event in sse_events(stream):
            request = event["data"]
            seen.append(request)
            reply = answer(notebooks[request["path"]], request)
            posted = await http.post(
                "notebook/replies", json={"request_id": request["request_id"], "reply": reply}
            )
            assert posted.status_code == 200, posted.text


async def test_edits_go_to_the_open_tab_and_never_to_the_file(
    api: Api, fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path, jp_serverapp: Any
) -> None:
    path = server_root / "open.ipynb"
    on_disk = write_notebook(path)
    model = parse(on_disk)
    model["cells"][0]["source"] = "# Unsaved title"  # the user's unsaved edit in the tab
    ready, seen = asyncio.Event(), []
    window = asyncio.create_task(tab(api, {"open.ipynb": model}, ready, seen))
    await asyncio.wait_for(ready.wait(), 10)
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("notebook.read", {}, id="read")]),
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "total", "source": "x - 1", "expected_hash": source_hash("x + 1")},
                    id="edit",
                ),
                FakeToolCall(
                    "notebook.delete",
                    {"cell_id": "intro", "expected_hash": source_hash("# Analysis")},
                    id="stale",
                ),
            ]
        ),
        Turn(text="done"),
    )
    try:
        made = await fetch(
            "sessions", method="POST", json={"agent": "build", "notebook_path": "open.ipynb"}
        )
        reply = await fetch(
            "sessions",
            made.data["session"]["id"],
            "messages",
            method="POST",
            json={"content": "edit"},
        )
        results = {
            p["tool_call_id"]: p
            for m in reply.data["messages"]
            for p in m["parts"]
            if p["type"] == "tool_result"
        }
        assert "read from the open tab" in results["read"]["output"]
        assert "# Unsaved title" in results["read"]["output"]
        assert results["edit"]["is_error"] is False
        assert results["stale"]["is_error"] is True, "the tab's cell is not what was expected"
        assert [c["source"] for c in model["cells"]] == [
            "# Unsaved title",
            "x = 20\nprint('loaded')",
            "x - 1",
        ]
        assert path.read_bytes() == on_disk, "nothing was written behind the tab"
        undone = await fetch("runs", reply.data["run"]["id"], "undo", method="POST", json={})
        assert undone.data["notebooks"][0]["backend"] == "tab"
        assert model["cells"][2]["source"] == "x + 1"
        assert model["cells"][0]["source"] == "# Unsaved title", "the user's edit survives"
        assert {r["op"] for r in seen} == {"read", "apply"}
    finally:
        window.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await window
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "total", "source": "x", "expected_hash": source_hash("x + 1")},
                )
            ]
        ),
        Turn(text="ok"),
    )
    bridge = jp_serverapp.web_app.settings["agi"].bridge
    for _ in range(100):  # the closed window is forgotten: the file is used again
        if bridge.client_for("open.ipynb") is None:
            break
        await asyncio.sleep(0.05)
    again = await fetch(
        "sessions",
        made.data["session"]["id"],
        "messages",
        method="POST",
        json={"content": "edit the file"},
    )
    assert again.data["run"]["status"] == "succeeded"
    assert nbformat.read(path, as_version=4).cells[2].source == "x"


async def test_a_reply_nobody_waits_for_is_refused(fetch: Fetch) -> None:
    lost = await fetch(
        "notebook", "replies", method="POST", json={"request_id": "nbr_x", "reply": {"ok": True}}
    )
    assert lost.status == 404
    assert lost.error["code"] == "REQUEST_NOT_FOUND"
    outside = await fetch(
        "notebook",
        "replies",
        method="POST",
        json={"request_id": "nbr_x", "reply": {}, "project_dir": "/etc"},
    )
    assert outside.status == 400
