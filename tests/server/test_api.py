"""Sessions, messages, history, catalogue, projects, and every route's auth and error shape."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.server.routes import ROUTES, Route
from agi_jupyter.testing import FakeLLMServer
from tests.server.conftest import Fetch, project_store


def example_path(route: Route) -> list[str]:
    """The route's path under /agi/v1 as parts, with made-up ids."""
    path = route.path.removeprefix("/agi/v1/").removeprefix("/agi/")
    return [
        part.replace("{session_id}", "ses_x")
        .replace("{run_id}", "run_x")
        .replace("{artifact_id}", "art_x")
        for part in path.split("/")
    ]


@pytest.mark.parametrize(
    "route", [r for r in ROUTES if r.authenticated], ids=lambda r: f"{r.method} {r.path}"
)
async def test_every_route_needs_jupyter_auth(jp_fetch: Any, route: Route) -> None:
    from tornado.httpclient import HTTPClientError

    parts = example_path(route)
    root = ("agi", "v1") if route.path.startswith("/agi/v1") else ("agi",)
    body = b"{}" if route.method in ("POST", "PATCH") else None
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch(
            *root,
            *parts,
            method=route.method,
            body=body,
            headers={"Authorization": ""},
            allow_nonstandard_methods=True,
        )
    assert info.value.code == 401
    assert json.loads(info.value.response.body)["error"]["code"] == "UNAUTHORIZED"
    assert info.value.response.headers["WWW-Authenticate"] == 'Token realm="jupyter"'


async def test_sessions_crud(fetch: Fetch) -> None:
    created = await fetch(
        "sessions",
        method="POST",
        json={"title": "t", "agent": "plan", "model": "openai:gpt-5-mini", "metadata": {"k": 1}},
    )
    assert created.status == 201, created
    session = created.data["session"]
    assert (session["agent"], session["provider"], session["model"]) == (
        "plan",
        "openai",
        "gpt-5-mini",
    )
    got = await fetch("sessions", session["id"])
    assert got.data["session"] == session
    changed = await fetch(
        "sessions", session["id"], method="PATCH", json={"title": "new", "queue_mode": "interrupt"}
    )
    assert changed.status == 200, changed
    assert (changed.data["session"]["title"], changed.data["session"]["queue_mode"]) == (
        "new",
        "interrupt",
    )
    assert changed.data["session"]["agent"] == "plan", "PATCH changes only what it is given"
    deleted = await fetch("sessions", session["id"], method="DELETE")
    assert deleted.data == {"ok": True}
    missing = await fetch("sessions", session["id"])
    assert (missing.status, missing.error["code"]) == (404, "SESSION_NOT_FOUND")


async def test_sessions_are_paginated(fetch: Fetch) -> None:
    for n in range(5):
        await fetch("sessions", method="POST", json={"title": f"s{n}"})
    titles: list[str] = []
    cursor: str | None = None
    while True:
        params = {"page_size": "2", **({"cursor": cursor} if cursor else {})}
        page = await fetch("sessions", params=params)
        titles += [s["title"] for s in page.data["sessions"]]
        cursor = page.data["next_cursor"]
        if cursor is None:
            break
    assert titles == ["s4", "s3", "s2", "s1", "s0"]
    bad = await fetch("sessions", params={"cursor": "garbage"})
    assert (bad.status, bad.error["code"]) == (404, "CURSOR_NOT_FOUND")
    first = await fetch("sessions", params={"page_size": "2", "cursor": ""})  # empty: page one
    assert [s["title"] for s in first.data["sessions"]] == ["s4", "s3"]
    too_big = await fetch("sessions", params={"page_size": "100000"})
    assert (too_big.status, too_big.error["code"]) == (400, "VALIDATION_ERROR")


async def test_messages_and_history(fetch: Fetch) -> None:
    session = (await fetch("sessions", method="POST", json={})).data["session"]["id"]
    for text in ("one", "two"):
        await fetch("sessions", session, "messages", method="POST", json={"content": text})
    first = await fetch("sessions", session, "messages", params={"page_size": "3"})
    assert [m["role"] for m in first.data["messages"]] == ["user", "assistant", "user"]
    rest = await fetch(
        "sessions", session, "messages", params={"cursor": first.data["next_cursor"]}
    )
    assert [m["role"] for m in rest.data["messages"]] == ["assistant"]
    assert rest.data["next_cursor"] is None
    simple = await fetch("sessions", session, "history")
    assert simple.data["view"] == "simple"
    assert [m["text"] for m in simple.data["messages"]][:1] == ["one"]
    full = await fetch("sessions", session, "history", params={"view": "full"})
    assert len(full.data["messages"]) == 4
    bad_view = await fetch("sessions", session, "history", params={"view": "weird"})
    assert bad_view.status == 400
    unknown = await fetch("sessions", "ses_nope", "messages")
    assert unknown.error["code"] == "SESSION_NOT_FOUND"
    bad_cursor = await fetch("sessions", session, "messages", params={"cursor": "msg_nope"})
    assert (bad_cursor.status, bad_cursor.error["code"]) == (404, "CURSOR_NOT_FOUND")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (json.dumps({"title": "x", "colour": "red"}).encode(), "colour"),
        (json.dumps({"title": 5}).encode(), "title"),
        (json.dumps({"queue_mode": "sometimes"}).encode(), "queue_mode"),
    ],
)
async def test_bad_bodies_are_validation_errors(fetch: Fetch, body: bytes, fragment: str) -> None:
    reply = await fetch("sessions", method="POST", body=body)
    assert reply.status == 400, reply
    assert reply.error["code"] == "VALIDATION_ERROR"
    assert fragment in reply.error["message"]


class TestLimits:
    @pytest.fixture
    def agi_config(self) -> dict[str, Any]:
        return {"max_body_size": 2000}

    async def test_oversized_bodies_are_413(self, fetch: Fetch) -> None:
        session = (await fetch("sessions", method="POST", json={})).data["session"]["id"]
        big = {"content": "x" * 5000}
        reply = await fetch("sessions", session, "messages", method="POST", json=big)
        assert (reply.status, reply.error["code"]) == (413, "PAYLOAD_TOO_LARGE")
        small = await fetch("sessions", session, "messages", method="POST", json={"content": "x"})
        assert small.status == 200


@pytest.mark.parametrize(
    ("method", "parts", "code"),
    [
        ("GET", ("sessions", "ses_nope"), "SESSION_NOT_FOUND"),
        ("PATCH", ("sessions", "ses_nope"), "SESSION_NOT_FOUND"),
        ("DELETE", ("sessions", "ses_nope"), "SESSION_NOT_FOUND"),
        ("GET", ("sessions", "ses_nope", "history"), "SESSION_NOT_FOUND"),
        ("GET", ("sessions", "ses_nope", "stream"), "SESSION_NOT_FOUND"),
        ("POST", ("sessions", "ses_nope", "messages"), "SESSION_NOT_FOUND"),
        ("POST", ("sessions", "ses_nope", "runs"), "SESSION_NOT_FOUND"),
        ("POST", ("sessions", "ses_nope", "runs:stream"), "SESSION_NOT_FOUND"),
        ("GET", ("runs", "run_nope", "events"), "RUN_NOT_FOUND"),
        ("GET", ("artifacts", "art_nope"), "ARTIFACT_NOT_FOUND"),
    ],
)
async def test_unknown_ids_are_404(
    fetch: Fetch, method: str, parts: tuple[str, ...], code: str
) -> None:
    bodies = {"messages": {"content": "x"}, "ses_nope": {"title": "x"}}
    body = bodies.get(parts[-1], {"input": "x"})
    kwargs: dict[str, Any] = {"json": body} if method in ("POST", "PATCH") else {}
    reply = await fetch(*parts, method=method, **kwargs)
    assert (reply.status, reply.error["code"]) == (404, code), reply


async def test_unknown_agent_is_404_and_unknown_model_400(fetch: Fetch) -> None:
    agent = await fetch("sessions", method="POST", json={"agent": "nobody"})
    assert (agent.status, agent.error["code"]) == (404, "AGENT_NOT_FOUND")
    model = await fetch("sessions", method="POST", json={"model": "mystery-model"})
    assert (model.status, model.error["code"]) == (400, "VALIDATION_ERROR")


async def test_provider_not_configured(fetch: Fetch, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    session = (await fetch("sessions", method="POST", json={})).data["session"]["id"]
    reply = await fetch(
        "sessions",
        session,
        "messages",
        method="POST",
        json={"content": "x", "model": "anthropic:claude-sonnet-4-6"},
    )
    assert (reply.status, reply.error["code"]) == (400, "PROVIDER_NOT_CONFIGURED")
    assert "ANTHROPIC_API_KEY" in reply.error["message"]


async def test_projects_are_folders_under_the_root(fetch: Fetch, server_root: Path) -> None:
    (server_root / "alpha").mkdir()
    made = await fetch(
        "sessions", method="POST", json={"title": "in alpha"}, params={"project": "alpha"}
    )
    assert made.status == 201
    with project_store(server_root / "alpha") as store:
        assert [s.title for s in store.list_sessions().items] == ["in alpha"]
    in_alpha = await fetch("sessions", params={"project": "alpha"})
    in_root = await fetch("sessions")
    assert [s["title"] for s in in_alpha.data["sessions"]] == ["in alpha"]
    assert in_root.data["sessions"] == []
    (server_root / "link").symlink_to(server_root.parent)
    # Whatever is not a folder under the root is not a project, for the API: a 404.
    for escape in ("..", "../..", "alpha/../..", "/etc", "link", "nope", "x" * 300, "a\x00b"):
        bad = await fetch("sessions", params={"project": escape})
        assert (bad.status, bad.error["code"]) == (404, "PROJECT_NOT_FOUND"), escape


async def test_catalogue(fetch: Fetch) -> None:
    agents = await fetch("agents")
    names = [a["name"] for a in agents.data["agents"]]
    assert {"general", "plan", "build"} <= set(names)
    tools = await fetch("tools", params={"agent": "plan"})
    assert "fs.read" in [t["name"] for t in tools.data["tools"]]
    assert "fs.write" not in [t["name"] for t in tools.data["tools"]]
    assert tools.data["tools"][0]["parameters"]["type"] == "object"
    everything = await fetch("tools")
    assert len(everything.data["tools"]) > len(tools.data["tools"])
    providers = await fetch("providers")
    assert "sk-test-openai-secret-0001" not in providers.body.decode()
    openai = next(p for p in providers.data["providers"] if p["name"] == "openai")
    assert openai["configured"] is True
    assert openai["key_env"] == ["OPENAI_API_KEY"]
    stats = await fetch("stats")
    assert stats.data["sessions"] == 0
    unknown_agent = await fetch("tools", params={"agent": "nobody"})
    assert (unknown_agent.status, unknown_agent.error["code"]) == (404, "AGENT_NOT_FOUND")


async def test_sdks_and_session_sdk(fetch: Fetch) -> None:
    listed = await fetch("sdks")
    assert listed.status == 200
    assert listed.data["default_sdk"] == "native"
    sdks = {s["id"]: s for s in listed.data["sdks"]}
    assert {"native", "claude", "codex"} <= set(sdks)
    assert sdks["native"]["available"] is True
    assert sdks["native"]["capabilities"]["interrupt"] is True
    assert sdks["codex"]["capabilities"]["queue_while_streaming"] is False
    created = await fetch(
        "sessions",
        method="POST",
        json={"sdk": "claude", "agent": "plan", "model": "anthropic:claude-sonnet-4-6"},
    )
    assert created.status == 201
    assert created.data["session"]["sdk"] == "claude"
    session_id = created.data["session"]["id"]
    changed = await fetch(f"sessions/{session_id}", method="PATCH", json={"sdk": "native"})
    assert changed.data["session"]["sdk"] == "native"
    bad = await fetch("sessions", method="POST", json={"sdk": "pi"})
    assert (bad.status, bad.error["code"]) == (400, "VALIDATION_ERROR")


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"sdk": "claude", "model": "openai:gpt-5-mini"}, 400),  # the request contradicts itself
        ({"sdk": "codex", "model": "anthropic:claude-sonnet-4-6"}, 400),
        ({"sdk": "claude"}, 409),  # the project's default model (openai here) does not fit
    ],
)
async def test_a_session_whose_sdk_cannot_run_its_model_is_refused(
    fetch: Fetch, body: dict[str, str], status: int
) -> None:
    reply = await fetch("sessions", method="POST", json=body)
    assert (reply.status, reply.error["code"]) == (status, "SDK_MODEL_MISMATCH")
    assert (await fetch("sessions")).data["sessions"] == []


async def test_changing_a_session_keeps_its_sdk_and_model_compatible(fetch: Fetch) -> None:
    made = await fetch("sessions", method="POST", json={"sdk": "codex", "model": "gpt-5-codex"})
    session = made.data["session"]["id"]
    to_claude = await fetch("sessions", session, method="PATCH", json={"sdk": "claude"})
    assert (to_claude.status, to_claude.error["code"]) == (409, "SDK_MODEL_MISMATCH")
    other = await fetch("sessions", session, method="PATCH", json={"model": "claude-x"})
    assert (other.status, other.error["code"]) == (409, "SDK_MODEL_MISMATCH")
    both = {"sdk": "claude", "model": "anthropic:claude-sonnet-4-6"}
    assert (await fetch("sessions", session, method="PATCH", json=both)).status == 200
    kept = await fetch("sessions", session, method="PATCH", json={"sdk": None, "queue_mode": None})
    assert (kept.data["session"]["sdk"], kept.data["session"]["queue_mode"]) == ("claude", "queue")
    override = await fetch(
        "sessions", session, "messages", method="POST", json={"content": "x", "model": "gpt-5"}
    )
    assert (override.status, override.error["code"]) == (409, "SDK_MODEL_MISMATCH")
    agents = await fetch("agents")
    assert all("sdk" in a for a in agents.data["agents"])


async def test_tasks_are_listed_and_paginated(fetch: Fetch, server_root: Path) -> None:

    with project_store(server_root) as store:
        for n in range(3):
            store.create_task(f"task {n}")
        store.update_task(store.list_tasks()[0].id, status="done")
    page = await fetch("tasks", params={"page_size": "2"})
    assert [t["title"] for t in page.data["tasks"]] == ["task 0", "task 1"]
    rest = await fetch("tasks", params={"cursor": page.data["next_cursor"]})
    assert [t["title"] for t in rest.data["tasks"]] == ["task 2"]
    done = await fetch("tasks", params={"status": "done"})
    assert [t["title"] for t in done.data["tasks"]] == ["task 0"]


@pytest.mark.parametrize("path", [("nothing-here",), ("sessions", "s", "nope", "deeper")])
async def test_unknown_paths_under_agi_answer_json(fetch: Fetch, path: tuple[str, ...]) -> None:
    reply = await fetch(*path)
    assert (reply.status, reply.error["code"]) == (404, "NOT_FOUND")
    assert reply.headers["Content-Type"] == "application/json"


async def test_a_one_shot_whose_run_fails_at_once_is_no_200(
    fetch: Fetch, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGI_CODEX_BIN", str(tmp_path / "no-codex-here"))
    body = {"prompt": "hi", "sdk": "codex", "model": "openai:gpt-5-codex"}
    reply = await fetch("one-shot", method="POST", json=body)
    assert (reply.status, reply.error["code"]) == (409, "SDK_NOT_AVAILABLE")
    streamed = await fetch(
        "one-shot", method="POST", json=body, headers={"Accept": "application/x-ndjson"}
    )
    assert streamed.status == 200  # a stream has begun: the failure is its error event
    events = [json.loads(line) for line in streamed.body.splitlines()]
    assert events[-1]["run"]["status"] == "failed"
    assert any(e["type"] == "error" and e["code"] == "SDK_NOT_AVAILABLE" for e in events)


async def test_tools_lists_mcp_tools_with_their_server_and_the_servers(
    fetch: Fetch, server_root: Path
) -> None:
    from tests.mcp.helpers import stdio_entry, write_mcp_json

    write_mcp_json(server_root, {"tools": stdio_entry(), "broken": stdio_entry("crashing.py")})
    reply = await fetch("tools", params={"agent": "build"})
    assert reply.status == 200
    tools = {t["name"]: t for t in reply.data["tools"]}
    assert (tools["mcp.tools.look"]["server"], tools["mcp.tools.look"]["read_only"]) == (
        "tools",
        True,
    )
    assert tools["fs.write"]["source"] == "builtin"
    servers = {s["name"]: s for s in reply.data["mcp_servers"]}
    assert servers["tools"]["state"] == "running"
    assert "mcp.tools.add" in servers["tools"]["tools"]
    assert servers["broken"]["state"] == "failed"
    assert "cannot open the database" in servers["broken"]["error"]


async def test_providers_list_a_local_servers_models(
    fetch: Fetch, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    monkeypatch.setenv("AGI_COMPAT_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("VLLM_BASE_URL", f"http://127.0.0.1:{closed}/v1")
    listed = await fetch("providers")
    assert listed.status == 200
    providers = {p["name"]: p for p in listed.data["providers"]}
    assert providers["compat"]["served_models"] == ["claude-fake", "fake", "gpt-fake"]
    assert providers["compat"]["served_models_error"] is None
    assert providers["vllm"]["served_models"] == []
    assert providers["vllm"]["served_models_error"].startswith("unreachable")
    assert providers["openai"]["served_models"] is None
