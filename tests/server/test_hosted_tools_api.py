"""Provider-hosted tools through the API: set on create and patch, checked against the
session's provider (``HOSTED_TOOL_UNSUPPORTED``, 409), kept when a patch sends null."""

from __future__ import annotations

from tests.server.conftest import Fetch


async def test_hosted_tools_are_set_checked_and_changed(fetch: Fetch) -> None:
    created = await fetch(
        "sessions",
        method="POST",
        json={"model": "openai:gpt-5-mini", "hosted_tools": ["web_search"]},
    )
    assert created.status == 201
    session = created.data["session"]
    assert session["tool_config"]["hosted_tools"] == ["web_search"]

    refused = await fetch(
        "sessions",
        method="POST",
        json={"model": "openai-chat:gpt-4o-mini", "hosted_tools": ["web_search"]},
    )
    assert (refused.status, refused.error["code"]) == (409, "HOSTED_TOOL_UNSUPPORTED")
    assert "'openai-chat'" in refused.error["message"]
    unknown = await fetch("sessions", method="POST", json={"hosted_tools": ["browser"]})
    assert (unknown.status, unknown.error["code"]) == (400, "VALIDATION_ERROR")

    no_stores = await fetch(
        "sessions", session["id"], method="PATCH", json={"hosted_tools": ["file_search"]}
    )
    assert (no_stores.status, no_stores.error["code"]) == (409, "HOSTED_TOOL_UNSUPPORTED")
    patched = await fetch(
        "sessions",
        session["id"],
        method="PATCH",
        json={"hosted_tools": ["file_search", "web_search"], "vector_store_ids": ["vs_1"]},
    )
    assert patched.status == 200
    tool_config = patched.data["session"]["tool_config"]
    assert tool_config["hosted_tools"] == ["file_search", "web_search"]
    assert tool_config["vector_store_ids"] == ["vs_1"]
    kept = await fetch(
        "sessions", session["id"], method="PATCH", json={"hosted_tools": None, "title": "t"}
    )
    assert kept.data["session"]["tool_config"]["hosted_tools"] == ["file_search", "web_search"]
    cleared = await fetch(
        "sessions",
        session["id"],
        method="PATCH",
        json={"hosted_tools": [], "vector_store_ids": []},
    )
    assert "hosted_tools" not in cleared.data["session"]["tool_config"]
    assert "vector_store_ids" not in cleared.data["session"]["tool_config"]
