"""MCP servers' tools in our runtime: offered by agent, called by a scripted model, results
mapped, servers reused, restarted, reported when broken, and stopped with the runtime."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from agi_jupyter.records import ToolResultPart
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.mcp.conftest import MODEL, MakeAgi, stdio_entry, wait_until, write_mcp_json
from tests.stored import stored_texts

pytestmark = pytest.mark.slow  # MCP servers are real processes (~1 s to start each)


def tool_names_offered(fake_llm: FakeLLMServer) -> list[str]:
    body = fake_llm.requests[0].body or {}
    return sorted(t["function"]["name"] for t in body.get("tools", []))


def test_build_agent_is_offered_the_servers_tools_and_a_call_returns_its_result(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    write_mcp_json(project, {"tools": stdio_entry()})
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("mcp_tools_add", {"a": 2, "b": 40})]),
        Turn(text="It is 42."),
    )
    agi = make_agi()
    session = agi.new_session(agent="build", model=MODEL)

    result = agi.ask("What is 2 + 40?", session=session.id)

    assert result.text == "It is 42."
    offered = tool_names_offered(fake_llm)
    assert {"mcp_tools_add", "mcp_tools_picture", "fs_read"} <= set(offered)
    add = next(
        t["function"]
        for t in (fake_llm.requests[0].body or {})["tools"]
        if t["function"]["name"] == "mcp_tools_add"
    )
    assert add["description"] == "Add two numbers."
    assert add["parameters"]["required"] == ["a", "b"]
    (call,) = agi.store.list_tool_calls(run_id=result.run.id)
    assert (call.name, call.status, call.args) == ("mcp.tools.add", "completed", {"a": 2, "b": 40})
    assert call.result["output"] == "42"
    assert call.result["data"] == {"structured": {"result": 42}}
    tool_message = next(m for m in agi.history(session.id, view="full") if m.role == "tool")
    part = tool_message.parts[0]
    assert isinstance(part, ToolResultPart)
    assert part.output == "42"
    # the model was sent the result
    second = fake_llm.requests[1].body or {}
    assert any(m.get("role") == "tool" and m.get("content") == "42" for m in second["messages"])


def test_results_images_resources_errors_and_large_outputs(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    write_mcp_json(project, {"tools": stdio_entry()})
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall("mcp_tools_picture", {}),
                FakeToolCall("mcp_tools_documents", {}),
                FakeToolCall("mcp_tools_refuse", {}),
                FakeToolCall("mcp_tools_big", {"lines": 400}),
            ]
        ),
        Turn(text="done"),
    )
    agi = make_agi(config={"artifact_threshold": 4096})
    session = agi.new_session(agent="build", model=MODEL)

    run = agi.ask("show me", session=session.id).run

    calls = {c.name: c for c in agi.store.list_tool_calls(run_id=run.id)}
    picture = calls["mcp.tools.picture"]
    (image_id,) = picture.result["data"]["artifacts"]
    assert f"stored as artifact {image_id}" in picture.result["output"]
    assert picture.result["output"].startswith("a tiny picture")
    image = agi.store.get_artifact(image_id)
    assert (image.kind, image.mime, image.run_id) == ("image", "image/png", run.id)
    assert agi.store.read_artifact(image_id).startswith(b"\x89PNG")

    documents = calls["mcp.tools.documents"].result
    assert "[resource memo://notes (text/plain)]\nremember the milk" in documents["output"]
    assert "[resource link memo://elsewhere: elsewhere]" in documents["output"]
    (blob_id,) = documents["data"]["artifacts"]
    assert agi.store.read_artifact(blob_id) == b"\x00\x01binary"

    refused = calls["mcp.tools.refuse"]
    assert (refused.status, refused.is_error) == ("failed", True)
    assert "this tool refuses on purpose" in refused.result["output"]

    big = calls["mcp.tools.big"].result
    assert "output_artifact_id" in big
    assert len(big["output"].encode()) < 4096
    spilled = agi.store.read_artifact(big["output_artifact_id"]).decode()
    assert spilled.count("of a long output") == 400


def test_agents_are_offered_only_what_their_tool_lists_reach(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    write_mcp_json(project, {"tools": stdio_entry(), "other": stdio_entry()})
    (project / ".agi" / "agents.json").write_text(
        json.dumps({"adder": {"tools": ["mcp.tools.add", "mcp.tools.l*"]}})
    )
    agi = make_agi()

    assert [t.name for t in agi.tools("plan") if t.name.startswith("mcp.")] == []
    states = {s["name"]: s["state"] for s in agi.mcp_servers()}
    assert states == {"other": "not started", "tools": "not started"}  # plan reaches none

    assert [t.name for t in agi.tools("adder")] == ["mcp.tools.add", "mcp.tools.look"]
    states = {s["name"]: s["state"] for s in agi.mcp_servers()}
    assert states == {"other": "not started", "tools": "running"}
    look = next(t for t in agi.tools("adder") if t.name == "mcp.tools.look")
    assert look.read_only
    assert look.source == "mcp:tools"

    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("mcp_tools_pid", {})]),
        Turn(text="no"),
    )
    session = agi.new_session(agent="adder", model=MODEL)
    run = agi.ask("pid?", session=session.id).run
    (call,) = agi.store.list_tool_calls(run_id=run.id)
    assert call.status == "denied"  # known, but not on the agent's list
    assert tool_names_offered(fake_llm) == ["mcp_tools_add", "mcp_tools_look"]


def test_a_server_that_fails_to_start_is_reported_once_and_its_tools_are_absent(
    make_agi: MakeAgi,
    fake_llm: FakeLLMServer,
    project: Path,
    agi_env: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    agi_env["CRASH_TOKEN"] = "tok-crash-0123456789"
    write_mcp_json(
        project,
        {
            "broken": stdio_entry("crashing.py", "${CRASH_TOKEN}"),
            "unset": stdio_entry(env={"KEY": "${NOT_SET_ANYWHERE}"}),
            "tools": stdio_entry(),
        },
    )
    fake_llm.enqueue(Turn(text="one"), Turn(text="two"))
    agi = make_agi()
    session = agi.new_session(agent="build", model=MODEL)

    with caplog.at_level(logging.WARNING, logger="agi_jupyter.mcp"):
        first = agi.ask("hi", session=session.id)
        second = agi.ask("again", session=session.id)

    assert (first.run.status, second.run.status) == ("succeeded", "succeeded")
    offered = tool_names_offered(fake_llm)
    assert "mcp_tools_add" in offered
    assert not [n for n in offered if n.startswith(("mcp_broken", "mcp_unset"))]
    reports = [r.getMessage() for r in caplog.records if "failed to start" in r.getMessage()]
    assert len(reports) == 2  # once per broken server, not once per run
    status = {s["name"]: s for s in agi.mcp_servers()}
    broken = status["broken"]
    assert broken["state"] == "failed"
    assert broken["tools"] == []
    assert "cannot open the database /nonexistent/db" in broken["error"]
    assert "tok-crash-0123456789" not in broken["error"]
    assert "token was [REDACTED:" in broken["error"]
    assert "tok-crash-0123456789" not in "\n".join(reports)
    assert "${NOT_SET_ANYWHERE} is not set" in status["unset"]["error"]
    assert status["tools"]["state"] == "running"


def test_a_server_that_died_is_started_again_and_all_stop_with_the_runtime(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    write_mcp_json(project, {"tools": stdio_entry()})
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("mcp_tools_pid", {})]),
        Turn(tool_calls=[FakeToolCall("mcp_tools_die", {})]),
        Turn(tool_calls=[FakeToolCall("mcp_tools_pid", {})]),
        Turn(text="done"),
    )
    agi = make_agi()
    session = agi.new_session(agent="build", model=MODEL)

    run = agi.ask("go", session=session.id).run

    first, died, again = agi.store.list_tool_calls(run_id=run.id)
    assert died.is_error
    assert "went away during the call" in died.result["output"]
    assert not again.is_error
    old_pid, new_pid = int(first.result["output"]), int(again.result["output"])
    assert old_pid != new_pid
    assert not _alive(old_pid)
    agi.close()
    assert wait_until(lambda: not _alive(new_pid), timeout=15)


def test_a_streamable_http_server_gets_its_headers_and_secrets_stay_out_of_the_store(
    make_agi: MakeAgi,
    fake_llm: FakeLLMServer,
    project: Path,
    agi_env: dict[str, str],
    http_server: str,
) -> None:
    agi_env["REMOTE_API_TOKEN"] = "rt-0123456789abcdef"
    write_mcp_json(
        project,
        {
            "remote": {
                "type": "http",
                "url": http_server,
                "headers": {"Authorization": "Bearer ${REMOTE_API_TOKEN}"},
            }
        },
    )
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall("mcp_remote_shout", {"text": "hello"}),
                FakeToolCall("mcp_remote_whoami", {}),
            ]
        ),
        Turn(text="done"),
    )
    agi = make_agi()
    session = agi.new_session(agent="build", model=MODEL)

    run = agi.ask("go", session=session.id).run

    shout, whoami = agi.store.list_tool_calls(run_id=run.id)
    assert shout.result["output"] == "HELLO"
    assert whoami.result["output"].startswith("authorization: [REDACTED:MCP_REMOTE")
    stored = stored_texts(project, agi.store)
    assert stored  # the run was recorded somewhere: the SQLite file, or PostgreSQL rows
    assert [where for where, text in stored if "rt-0123456789abcdef" in text] == []
    (remote,) = agi.mcp_servers()
    assert (remote["transport"], remote["target"]) == ("http", http_server)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped) counts as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
