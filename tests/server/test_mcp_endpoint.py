"""``/agi/mcp``: the official ``mcp`` client against the project's MCP server in a real Jupyter
server (streamable HTTP through tornado), behind Jupyter's auth."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agi_jupyter.testing import FakeLLMServer, Turn

pytestmark = pytest.mark.slow


def mcp_url(http_server_client: Any, jp_base_url: str, query: str = "") -> str:
    url: str = http_server_client.get_url(f"{jp_base_url}agi/mcp")
    return url + query


@contextlib.asynccontextmanager
async def connect(url: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    """The official client over streamable HTTP, sending Jupyter's token header."""
    timeout = httpx2.Timeout(30.0, read=60.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def test_the_mcp_client_lists_and_calls_our_tools_and_the_call_is_recorded(
    jp_serverapp: Any,
    http_server_client: Any,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
    jp_root_dir: Path,
) -> None:
    (Path(jp_root_dir) / "notes.txt").write_text("served over MCP\n")
    async with connect(mcp_url(http_server_client, jp_base_url), jp_auth_header) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("fs_read", {"path": "notes.txt"})
        outside = await client.call_tool("fs_read", {"path": "/etc/hostname"})
        sessions = await client.call_tool("agi_sessions", {})

    assert {"fs_read", "fs_write", "shell_run", "agi_sessions", "agi_start_run"} <= names
    assert not any(n.startswith("mcp_") for n in names)
    assert result.is_error is False
    assert result.content[0].text == "served over MCP\n"  # type: ignore[union-attr]
    assert outside.is_error is True
    assert "outside the project" in outside.content[0].text  # type: ignore[union-attr]
    (session,) = sessions.structured_content["sessions"]  # type: ignore[index]
    assert session["title"].startswith("MCP client: ")
    assert (session["agent"], session["sdk"]) == ("build", "external")

    project = await jp_serverapp.web_app.settings["agi"].projects.get(None)
    runs = project.runs(session["id"]).items
    assert len(runs) == 2
    calls = [c for r in runs for c in project.store.list_tool_calls(run_id=r.id)]
    assert sorted((c.name, c.status) for c in calls) == [
        ("fs.read", "completed"),
        ("fs.read", "failed"),
    ]
    roles = [m.role for m in project.history(session["id"], view="full")]
    assert roles == ["assistant", "tool", "assistant", "tool"]


async def test_a_client_starts_a_run_and_follows_it_to_its_answer(
    http_server_client: Any,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
    fake_llm: FakeLLMServer,
) -> None:
    fake_llm.enqueue(Turn(text="Answered through MCP."))
    async with connect(mcp_url(http_server_client, jp_base_url), jp_auth_header) as client:
        started = await client.call_tool(
            "agi_start_run", {"prompt": "hello", "model": "openai-chat:gpt-4o-mini"}
        )
        run_id = started.structured_content["run_id"]  # type: ignore[index]
        followed: dict[str, Any] = {"done": False, "next_seq": 0}
        for _ in range(10):
            reply = await client.call_tool(
                "agi_follow",
                {"run_id": run_id, "after_seq": followed["next_seq"], "wait_seconds": 10},
            )
            followed = reply.structured_content or {}
            if followed["done"]:
                break

    assert followed["status"] == "succeeded"
    assert followed["answer"] == "Answered through MCP."
    assert followed["events"][-1]["type"] == "run.final"


async def test_a_read_only_agent_is_exposed_read_only(
    http_server_client: Any, jp_base_url: str, jp_auth_header: dict[str, str]
) -> None:
    url = mcp_url(http_server_client, jp_base_url, "?agent=plan")
    async with connect(url, jp_auth_header) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        denied = await client.call_tool("agi_start_run", {"prompt": "x", "session_id": "ses_x"})

    assert "fs_read" in tools
    assert "fs_write" not in tools
    assert "shell_run" not in tools
    assert tools["fs_read"].title == "fs.read"
    assert tools["fs_read"].annotations is not None
    assert tools["fs_read"].annotations.read_only_hint is True
    assert denied.is_error is True


async def test_the_endpoint_needs_jupyter_auth(http_server_client: Any, jp_base_url: str) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "x", "version": "1"},
        },
    }
    async with httpx.AsyncClient() as http:
        response = await http.post(
            mcp_url(http_server_client, jp_base_url),
            content=json.dumps(body),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
    assert response.status_code == 403


async def test_an_unknown_agent_is_a_validation_error(
    http_server_client: Any, jp_base_url: str, jp_auth_header: dict[str, str]
) -> None:
    async with httpx.AsyncClient(headers=jp_auth_header) as http:
        response = await http.post(
            mcp_url(http_server_client, jp_base_url, "?agent=nobody"),
            content=b"{}",
            headers={"Content-Type": "application/json"},
        )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    assert "unknown agent 'nobody'" in response.json()["error"]["message"]
