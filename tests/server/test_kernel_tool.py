"""Server runs offered ``python`` in the live kernel of the session's notebook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.server.conftest import Fetch


def offered_tools(request_body: dict[str, Any]) -> list[str]:
    return [
        t.get("name") or t.get("function", {}).get("name") for t in request_body.get("tools") or []
    ]


@pytest.mark.slow
async def test_python_runs_in_the_bound_notebook_kernel(
    fetch: Fetch, jp_fetch: Any, jp_serverapp: Any, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    nbformat.write(nbformat.v4.new_notebook(), server_root / "analysis.ipynb")
    started = await jp_fetch(
        "api", "sessions", method="POST",
        body=json.dumps({"path": "analysis.ipynb", "type": "notebook", "name": "analysis.ipynb",
                         "kernel": {"name": "python3"}}),
    )  # fmt: skip
    assert started.code == 201
    await jp_serverapp.web_app.settings["agi"].kernels.refresh()
    bound = await fetch(
        "sessions", method="POST", json={"agent": "build", "notebook_path": "analysis.ipynb"}
    )
    unbound = await fetch("sessions", method="POST", json={"agent": "build"})
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("python", {"code": "x = 21 * 2\nprint('hi')\nx"})]),
        Turn(text="x is 42"),
        Turn(tool_calls=[FakeToolCall("python", {"code": "x + 1"})]),
        Turn(text="43"),
    )
    first = await fetch(
        "sessions", bound.data["session"]["id"], "messages", method="POST",
        json={"content": "compute"},
    )  # fmt: skip
    assert first.data["run"]["status"] == "succeeded", first
    assert "python" in offered_tools(fake_llm.requests[0].body)
    (result,) = [
        p for m in first.data["messages"] for p in m["parts"] if p["type"] == "tool_result"
    ]
    assert result["is_error"] is False
    assert "stdout:\nhi" in result["output"]
    assert "result: 42" in result["output"]
    second = await fetch(
        "sessions", bound.data["session"]["id"], "messages", method="POST",
        json={"content": "again"},
    )  # fmt: skip
    (again,) = [
        p for m in second.data["messages"] for p in m["parts"] if p["type"] == "tool_result"
    ]
    assert "result: 43" in again["output"], "the kernel kept the variable"
    fake_llm.enqueue(Turn(text="no python here"))
    await fetch(
        "sessions", unbound.data["session"]["id"], "messages", method="POST",
        json={"content": "hi"},
    )  # fmt: skip
    assert "python" not in offered_tools(fake_llm.requests[-1].body)
