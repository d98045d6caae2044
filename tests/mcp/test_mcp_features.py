"""The MCP features beyond tool calls, against a real MCP server (``servers/features.py``):
progress notifications are live tool output, a changed tool list is offered on the next model
turn, and resources, resource templates and prompts are listed (``agi mcp-resources``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.mcp.conftest import MODEL, MakeAgi, stdio_entry, write_mcp_json

pytestmark = pytest.mark.slow  # MCP servers are real processes (~1 s to start each)

AGI = str(Path(sys.executable).parent / "agi")


def offered(body: object) -> set[str]:
    tools = body.get("tools", []) if isinstance(body, dict) else []
    return {t["function"]["name"] for t in tools}


def test_progress_notifications_are_the_calls_live_output(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    write_mcp_json(project, {"feat": stdio_entry("features.py")})
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("mcp_feat_count", {"steps": 3})]), Turn(text="Counted.")
    )
    agi = make_agi()
    session = agi.new_session(agent="build", model=MODEL, review_mode="auto")

    result = agi.ask("count to 3", session=session.id)

    assert result.text == "Counted."
    (call,) = agi.store.list_tool_calls(run_id=result.run.id)
    assert (call.name, call.status) == ("mcp.feat.count", "completed")
    deltas = [
        e.payload
        for e in agi.store.list_run_events(result.run.id)
        if e.type == "tool.call.delta" and e.payload["tool_call_id"] == call.tool_call_id
    ]
    assert [(d["channel"], d["chunk"]) for d in deltas] == [
        ("progress", "[1/3] step 1 of 3\n"),
        ("progress", "[2/3] step 2 of 3\n"),
        ("progress", "[3/3] step 3 of 3\n"),
    ]


def test_a_changed_tool_list_is_offered_on_the_next_turn(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    write_mcp_json(project, {"feat": stdio_entry("features.py")})
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("mcp_feat_grow", {})]),
        Turn(tool_calls=[FakeToolCall("mcp_feat_grown", {})]),
        Turn(text="It grew."),
    )
    agi = make_agi()
    session = agi.new_session(agent="build", model=MODEL, review_mode="auto")

    result = agi.ask("grow a tool and use it", session=session.id)

    assert result.text == "It grew."
    first, second, _ = (r.body for r in fake_llm.requests)
    assert "mcp_feat_grown" not in offered(first)
    assert "mcp_feat_grown" in offered(second)
    calls = agi.store.list_tool_calls(run_id=result.run.id)
    assert [(c.name, c.status) for c in calls] == [
        ("mcp.feat.grow", "completed"),
        ("mcp.feat.grown", "completed"),
    ]
    assert calls[1].result["output"] == "I am new"
    assert "mcp.feat.grown" in {t.name for t in agi.tools("build")}


def test_agi_mcp_resources_lists_resources_templates_and_prompts(
    project: Path, agi_env: dict[str, str]
) -> None:
    write_mcp_json(
        project,
        {
            "feat": stdio_entry("features.py"),
            "tools": stdio_entry(),
            "broken": stdio_entry("crashing.py"),
        },
    )

    def agi(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [AGI, "mcp-resources", *args, "--project", str(project)],
            capture_output=True,
            text=True,
            env=agi_env | {"PATH": "/usr/bin:/bin"},
            timeout=120,
            check=False,
        )

    listed, shown = agi("--json"), agi("--server", "feat")

    assert listed.returncode == 0, listed.stderr
    servers = {s["name"]: s for s in json.loads(listed.stdout)}
    feat = servers["feat"]
    assert [(r["name"], r["uri"], r["mimeType"]) for r in feat["resources"]] == [
        ("readme", "memo://readme", "text/plain"),
        ("logo", "memo://logo", "image/png"),
    ]
    assert [t["uriTemplate"] for t in feat["templates"]] == ["memo://notes/{day}"]
    review, greeting = feat["prompts"]
    assert (greeting["name"], greeting.get("arguments") or []) == ("greeting", [])
    assert (review["name"], review["description"]) == ("review", "Review a file")
    assert review["arguments"][0]["name"] == "path"
    assert (servers["tools"]["resources"], servers["tools"]["prompts"]) == ([], [])
    assert servers["broken"]["state"] == "failed"
    assert "agi: MCP server broken failed:" in listed.stderr
    assert shown.returncode == 0, shown.stderr
    rows = [line.split() for line in shown.stdout.splitlines()]
    assert ["feat", "resource", "readme", "memo://readme", "What", "this", "server", "is"] in rows
    assert ["feat", "prompt", "review", "path", "Review", "a", "file"] in rows
    assert "broken" not in shown.stderr
