"""MCP tools under the one tool policy, with a real MCP server (``servers/stdio_tools.py``):
a tool without annotations is a write (it waits for approval in review mode ``ask`` and
``auto-edit`` and writes nothing before it), a ``readOnlyHint`` tool is a read (it runs), and
``trust`` in ``.agi/mcp.json`` overrides both ways, shown by ``agi tools``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.mcp.conftest import MODEL, MakeAgi, stdio_entry, write_mcp_json

pytestmark = pytest.mark.slow  # MCP servers are real processes

AGI = str(Path(sys.executable).parent / "agi")
NOTE = FakeToolCall("mcp_tools_note", {"path": "note.txt", "text": "from the server"})
LOOK = FakeToolCall("mcp_tools_look", {})


def _turn(make_agi: MakeAgi, fake_llm: FakeLLMServer, review_mode: str) -> tuple[Any, str]:
    fake_llm.enqueue(Turn(text="Writing a note.", tool_calls=[NOTE, LOOK]), Turn(text="Done."))
    agi = make_agi()
    session = agi.new_session(agent="build", model=MODEL, review_mode=review_mode)
    events = list(agi.stream("write a note", session=session.id))
    return agi, events


@pytest.mark.parametrize("review_mode", ["ask", "auto-edit"])
def test_a_write_tool_waits_for_approval_and_writes_nothing_before_it(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, review_mode: str
) -> None:
    write_mcp_json(project, {"tools": stdio_entry()})

    agi, events = _turn(make_agi, fake_llm, review_mode)

    assert events[-1]["type"] == "run.status"
    assert events[-1]["status"] == "waiting_approval"
    asked = [e for e in events if e["type"] == "approval.requested"]
    assert [e["name"] for e in asked] == ["mcp.tools.note"]
    assert not (project / "note.txt").exists()
    run_id = events[-1]["run_id"]
    calls = {c.name: c for c in agi.store.list_tool_calls(run_id=run_id)}
    assert calls["mcp.tools.note"].status == "waiting_approval"
    assert calls["mcp.tools.look"].status == "completed"  # the read ran
    assert calls["mcp.tools.look"].result["output"] == "looked"

    agi.decide(run_id, "approve")
    final = list(agi.follow(run_id))

    assert final[-1]["type"] == "run.final"
    assert agi.run(run_id).status == "succeeded"
    assert (project / "note.txt").read_text() == "from the server"
    calls = {c.name: c for c in agi.store.list_tool_calls(run_id=run_id)}
    assert calls["mcp.tools.note"].status == "completed"


def test_in_review_mode_auto_every_mcp_tool_runs(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    write_mcp_json(project, {"tools": stdio_entry()})

    agi, events = _turn(make_agi, fake_llm, "auto")

    assert not [e for e in events if e["type"] == "approval.requested"]
    assert agi.run(events[-1]["run_id"]).status == "succeeded"
    assert (project / "note.txt").read_text() == "from the server"


def test_trust_in_mcp_json_overrides_the_annotations_per_tool_and_per_server(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    entry = stdio_entry(trust="write", tools={"note": {"trust": "read"}})
    write_mcp_json(project, {"tools": entry})

    agi, events = _turn(make_agi, fake_llm, "ask")

    asked = [e["name"] for e in events if e["type"] == "approval.requested"]
    assert asked == ["mcp.tools.look"]  # the server's trust: write, over its readOnlyHint
    assert (project / "note.txt").read_text() == "from the server"  # the tool's trust: read
    tools = {t.name: t for t in agi.tools("build")}
    assert (tools["mcp.tools.note"].trust, tools["mcp.tools.note"].read_only) == ("read", True)
    assert (tools["mcp.tools.look"].trust, tools["mcp.tools.look"].read_only) == ("write", False)


def test_a_rule_of_the_session_still_wins_over_the_tools_default(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    write_mcp_json(project, {"tools": stdio_entry()})
    fake_llm.enqueue(Turn(tool_calls=[NOTE]), Turn(text="Done."))
    agi = make_agi()
    session = agi.new_session(
        agent="build",
        model=MODEL,
        review_mode="ask",
        permissions={"mcp.tools.note": "allow", "mcp.tools.look": "deny"},
    )

    result = agi.ask("write a note", session=session.id)

    assert result.run.status == "succeeded"
    assert (project / "note.txt").read_text() == "from the server"
    offered = {t["function"]["name"] for t in (fake_llm.requests[0].body or {})["tools"]}
    assert "mcp_tools_note" in offered
    assert "mcp_tools_look" not in offered  # denied tools are not offered


def test_agi_tools_shows_each_mcp_tools_trust_and_what_set_it(
    project: Path, agi_env: dict[str, str]
) -> None:
    write_mcp_json(project, {"tools": stdio_entry(tools={"add": {"trust": "read"}})})
    argv = [AGI, "tools", "--agent", "build", "--project", str(project)]
    env = agi_env | {"PATH": "/usr/bin:/bin"}

    listed = subprocess.run(
        [*argv, "--json"], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    table = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=True)

    tools = {t["name"]: t for t in json.loads(listed.stdout)}
    assert {
        name: (tools[name]["trust"], tools[name]["trust_from"], tools[name]["trait"])
        for name in ("mcp.tools.note", "mcp.tools.look", "mcp.tools.add", "fs.write")
    } == {
        "mcp.tools.note": ("write", "no readOnlyHint", "shell"),
        "mcp.tools.look": ("read", "readOnlyHint", "read"),
        "mcp.tools.add": ("read", "mcp.json tool 'add'", "read"),
        "fs.write": (None, None, "edit"),
    }
    note = next(line for line in table.stdout.splitlines() if "mcp.tools.note" in line)
    assert "write (no readOnlyHint)" in note
