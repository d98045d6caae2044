"""MCP servers' resources and prompts through the server: listed (``GET /mcp/resources``), and
mentioned in a message (``@resource``, ``@prompt``): read on the server into context stored
with the message and sent to the model (on SQLite and on PostgreSQL, as every server test).
The servers are real ones (``tests/mcp/servers``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agi_jupyter.testing import FakeLLMServer, Turn
from tests.mcp.helpers import stdio_entry, write_mcp_json
from tests.server.conftest import Fetch

# A request that starts the MCP servers (a Python process each) may take a while on a busy
# machine: a bound well above jp_fetch's 20 s.
STARTS = {"request_timeout": 120}


def _servers(root: Path) -> None:
    write_mcp_json(root, {"feat": stdio_entry("features.py"), "broken": stdio_entry("crashing.py")})


async def test_the_route_lists_resources_templates_and_prompts_per_server(
    fetch: Fetch, server_root: Path
) -> None:
    _servers(server_root)

    listed = await fetch("mcp", "resources", **STARTS)
    one = await fetch("mcp", "resources", params={"server": "feat"})
    unknown = await fetch("mcp", "resources", params={"server": "nowhere"})

    assert listed.status == 200, listed
    servers = {s["name"]: s for s in listed.data["servers"]}
    feat, broken = servers["feat"], servers["broken"]
    assert feat["state"] == "running"
    assert [(r["name"], r["uri"], r["mime_type"]) for r in feat["resources"]] == [
        ("readme", "memo://readme", "text/plain"),
        ("logo", "memo://logo", "image/png"),
    ]
    assert [t["uri_template"] for t in feat["templates"]] == ["memo://notes/{day}"]
    prompts = {p["name"]: p for p in feat["prompts"]}
    assert prompts["review"]["arguments"] == [
        {"name": "path", "description": None, "required": True}
    ]
    assert (prompts["review"]["mentionable"], prompts["greeting"]["mentionable"]) == (False, True)
    # A server that cannot start: its error, and nothing listed (not a 500).
    assert broken["state"] == "failed"
    assert broken["error"]
    assert (broken["resources"], broken["prompts"]) == ([], [])
    assert [s["name"] for s in one.data["servers"]] == ["feat"]
    assert (unknown.status, unknown.error["code"]) == (404, "MCP_SERVER_NOT_FOUND")
    assert "nowhere" in unknown.error["message"]


def _sent(fake_llm: FakeLLMServer, index: int = -1) -> str:
    return json.dumps(fake_llm.requests[index].body)


async def test_a_resource_mention_reads_it_into_the_message_and_the_request(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    _servers(server_root)
    session = await fetch("sessions", method="POST", json={})
    sid = session.data["session"]["id"]
    fake_llm.enqueue(Turn(text="it is a test server"), Turn(text="still is"))
    mentions = [
        {"kind": "resource", "server": "feat", "ref": "memo://readme"},
        {"kind": "resource", "server": "feat", "ref": "memo://logo"},
        {"kind": "prompt", "server": "feat", "ref": "greeting"},
    ]

    first = await fetch(
        "sessions", sid, "messages", method="POST",
        json={"content": "what is this server?", "mentions": mentions}, **STARTS,
    )  # fmt: skip

    assert first.data["run"]["status"] == "succeeded", first
    sent = _sent(fake_llm, 0)
    assert '<mention kind=\\"resource\\" ref=\\"feat:memo://readme\\">\\na test server' in sent
    assert "Say hello to the data team in one line." in sent  # the prompt's message
    assert "memo://logo (image/png, 32 bytes): not shown" in sent  # binary: named, not sent
    history = await fetch("sessions", sid, "history")
    (user, *_rest) = history.data["messages"]
    parts = [(p["type"], p.get("kind"), p.get("ref")) for p in user["parts"]]
    assert parts == [
        ("text", None, None),
        ("mention", "resource", "feat:memo://readme"),
        ("mention", "resource", "feat:memo://logo"),
        ("mention", "prompt", "feat:greeting"),
    ]
    stored = user["parts"][1]["text"]
    assert stored == "a test server"

    second = await fetch("sessions", sid, "messages", method="POST", json={"content": "and?"})
    assert second.data["run"]["status"] == "succeeded", second
    assert '\\"feat:memo://readme\\">\\na test server' in _sent(fake_llm), "sent as stored"


async def test_mcp_mentions_that_name_nothing_are_clear_errors(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    _servers(server_root)
    session = await fetch("sessions", method="POST", json={})
    sid = session.data["session"]["id"]

    def post(mention: dict[str, Any]) -> Any:
        body = {"content": "look", "mentions": [mention], "run": False}
        return fetch("sessions", sid, "messages", method="POST", json=body, **STARTS)

    missing = await post({"kind": "resource", "server": "feat", "ref": "memo://nothing"})
    no_server = await post({"kind": "resource", "server": "nowhere", "ref": "memo://readme"})
    failed = await post({"kind": "resource", "server": "broken", "ref": "memo://readme"})
    with_arguments = await post({"kind": "prompt", "server": "feat", "ref": "review"})
    which = await post({"kind": "prompt", "ref": "greeting"})

    for reply in (missing, no_server, failed, with_arguments):
        assert (reply.status, reply.error["code"]) == (404, "MENTION_NOT_FOUND"), reply
    assert "nowhere" in no_server.error["message"]
    assert "not available" in failed.error["message"]
    assert (which.status, which.error["code"]) == (400, "VALIDATION_ERROR")  # names its server
    assert fake_llm.requests == [], "nothing reached a model"
