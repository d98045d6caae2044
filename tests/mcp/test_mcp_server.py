"""``agi mcp``: the official ``mcp`` client starts our stdio server, lists and calls its tools,
starts and follows a run; what it did is in the store."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from agi_jupyter.app import Agi
from agi_jupyter.errors import UsageError
from agi_jupyter.mcp_server.server import ProjectServer
from agi_jupyter.testing import FakeLLMServer, Turn
from tests.mcp.conftest import MODEL, MakeAgi

pytestmark = pytest.mark.slow

AGI = str(Path(sys.executable).parent / "agi")


def server(project: Path, env: dict[str, str], *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=AGI, args=["mcp", "--project", str(project), *args], env=env
    )


async def session_with(params: StdioServerParameters, calls: list[tuple[str, Any]]) -> Any:
    """Connect, list the tools, make the calls in order; the tools and the results."""
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        results = [await client.call_tool(name, args) for name, args in calls]
    return tools, results


def test_the_mcp_client_lists_our_tools_over_stdio_and_its_calls_are_recorded(
    project: Path, agi_env: dict[str, str], fake_llm: FakeLLMServer
) -> None:
    (project / "data.txt").write_text("one\n")
    fake_llm.enqueue(Turn(text="Hello from the project."))
    calls = [
        ("fs_write", {"path": "made.txt", "content": "written by an MCP client\n"}),
        ("fs_read", {"path": "data.txt"}),
        ("fs_read", {"path": "../escape.txt"}),
        ("agi_start_run", {"prompt": "say hello", "model": MODEL}),
        ("agi_history", {"session_id": "ses_nope"}),
    ]

    tools, results = asyncio.run(session_with(server(project, agi_env), calls))

    names = {t.name for t in tools}
    assert {"fs_read", "fs_write", "apply_patch", "shell_run", "agi_follow"} <= names
    wrote, read, escaped, started, unknown = results
    assert unknown.is_error is True  # it answered [] for a session that does not exist
    assert "ses_nope" in unknown.content[0].text
    assert "not found" in unknown.content[0].text
    assert wrote.is_error is False
    assert (project / "made.txt").read_text() == "written by an MCP client\n"
    assert read.content[0].text == "one\n"
    assert escaped.is_error is True
    run_id = started.structured_content["run_id"]

    with Agi(project, env=agi_env) as agi:
        external = next(s for s in agi.sessions().items if s.sdk == "external")
        assert external.title == "MCP client: mcp"  # the SDK client's default name
        assert external.metadata["external"] == {"protocol": "mcp", "client": "mcp"}
        assert agi.sdk.adapter("external").resolve_display_model(external).label == "mcp:mcp"
        messages = agi.history(external.id, view="full")
        assert messages[0].meta["provider"] == "mcp"
        assert messages[0].meta["model"] == "mcp"
        refused = agi.ask("can you answer?", session=external.id).run
        assert refused.status == "failed"
        assert "answers no messages" in (refused.error or {})["message"]

        calls_made = [
            c for r in agi.runs(external.id).items for c in agi.store.list_tool_calls(run_id=r.id)
        ]
        assert sorted((c.name, c.status) for c in calls_made) == [
            ("fs.read", "completed"),
            ("fs.read", "failed"),
            ("fs.write", "completed"),
        ]
        diff = [
            a for r in agi.runs(external.id).items for a in agi.store.list_artifacts(run_id=r.id)
        ]
        assert [a.kind for a in diff] == ["file_diff"]
        assert agi.run(run_id).session_id != external.id


def test_a_run_started_over_stdio_is_followed_to_its_answer(
    project: Path, agi_env: dict[str, str], fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="Followed to the end."))

    async def start_and_follow() -> dict[str, Any]:
        async with Client(server(project, agi_env)) as client:
            started = await client.call_tool("agi_start_run", {"prompt": "go", "model": MODEL})
            run_id = (started.structured_content or {})["run_id"]
            state: dict[str, Any] = {"done": False, "next_seq": 0}
            for _ in range(10):
                reply = await client.call_tool(
                    "agi_follow",
                    {"run_id": run_id, "after_seq": state["next_seq"], "wait_seconds": 10},
                )
                state = reply.structured_content or {}
                if state["done"]:
                    break
            history = await client.call_tool(
                "agi_history", {"session_id": (started.structured_content or {})["session_id"]}
            )
            return {"state": state, "history": history.structured_content}

    result = asyncio.run(start_and_follow())

    assert result["state"]["answer"] == "Followed to the end."
    assert [m["role"] for m in result["history"]["messages"]] == ["user", "assistant"]


def test_a_plan_server_offers_no_writing_tool(project: Path, agi_env: dict[str, str]) -> None:
    tools, _ = asyncio.run(session_with(server(project, agi_env, "--agent", "plan"), []))
    names = {t.name for t in tools}
    assert "fs_read" in names
    assert not names & {"fs_write", "apply_patch", "shell_run", "write_capability"}


def test_an_external_session_answers_no_messages(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_agi()
    session = agi.new_session(agent="build", sdk="external", model=MODEL)
    run = agi.ask("hello?", session=session.id).run
    assert run.status == "failed"
    assert run.attempt == 1
    assert "answers no messages" in (run.error or {})["message"]
    assert "external" not in [s["id"] for s in agi.sdks()]
    with pytest.raises(UsageError, match="unknown agent"):
        ProjectServer(agi, "nobody")


def test_a_line_that_is_no_message_is_answered_with_a_json_rpc_error(
    project: Path, agi_env: dict[str, str]
) -> None:
    """JSON-RPC 2.0: a parse error (not JSON) or an invalid request (JSON, not a message) is
    answered with ``id: null``; the server goes on serving (it dropped such lines silently)."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    lines = ["this is not json", json.dumps({"hello": "world"}), json.dumps(initialize)]
    done = subprocess.run(
        [AGI, "mcp", "--project", str(project)],
        input="".join(f"{line}\n" for line in lines),
        capture_output=True,
        text=True,
        env=agi_env,
        timeout=60,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(a.get("id"), (a.get("error") or {}).get("code")) for a in answers] == [
        (None, -32700),
        (None, -32600),
        (1, None),
    ], done.stderr
    assert answers[2]["result"]["serverInfo"]["name"]


def test_arguments_over_the_limit_are_refused_before_anything_is_recorded(
    project: Path, agi_env: dict[str, str]
) -> None:
    """Issue 29.7: a 2 MB cell through ``agi mcp`` is refused with an error the client can
    act on; nothing is written or stored, and a call under the limit still works."""
    from agi_jupyter.providers.base import MAX_TOOL_ARGUMENTS

    big = "x" * (2 * MAX_TOOL_ARGUMENTS)

    async def calls() -> tuple[str, Any]:
        async with Client(server(project, agi_env)) as client:
            try:
                await client.call_tool("fs_write", {"path": "big.txt", "content": big})
            except Exception as e:  # the SDK raises the JSON-RPC error it got
                refused = str(e)
            else:
                refused = ""
            fine = await client.call_tool("fs_write", {"path": "small.txt", "content": "ok"})
        return refused, fine

    refused, fine = asyncio.run(calls())

    assert "over the limit of 1,048,576" in refused
    assert not (project / "big.txt").exists()
    assert fine.is_error is False
    with Agi(project, env=agi_env) as agi:
        recorded = [
            c
            for s in agi.sessions().items
            for r in agi.runs(s.id).items
            for c in agi.store.list_tool_calls(run_id=r.id)
        ]
    assert [(c.name, c.args["path"]) for c in recorded] == [("fs.write", "small.txt")]
