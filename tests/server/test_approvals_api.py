"""Approvals through the API: a session created with ``review_mode: ask`` whose run waits,
the waiting calls listed, a decision per call, the errors of a wrong decision."""

from __future__ import annotations

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.server.conftest import Fetch, wait_for


async def test_a_waiting_run_is_listed_decided_per_call_and_resumed(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    created = await fetch("sessions", method="POST", json={"agent": "build", "review_mode": "ask"})
    assert created.status == 201, created
    session = created.data["session"]
    assert session["tool_config"]["review_mode"] == "ask"
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall("fs_write", {"path": "a.txt", "content": "a"}),
                FakeToolCall("fs_write", {"path": "b.txt", "content": "b"}),
            ]
        ),
        Turn(text="wrote one"),
    )
    reply = await fetch(
        "sessions", session["id"], "messages", method="POST", json={"content": "write"}
    )
    run = reply.data["run"]
    assert run["status"] == "waiting_approval"
    listed = await fetch("runs", run["id"], "approvals")
    first, second = listed.data["approvals"]
    assert (first["name"], first["arguments"]["path"]) == ("fs.write", "a.txt")

    bad = await fetch("runs", run["id"], "approvals", method="POST", json={"decision": "maybe"})
    assert (bad.status, bad.error["code"]) == (400, "VALIDATION_ERROR")
    missing = await fetch("runs", "run_nope", "approvals", method="POST", json={"decision": "deny"})
    assert (missing.status, missing.error["code"]) == (404, "RUN_NOT_FOUND")

    one = await fetch(
        "runs", run["id"], "approvals", method="POST",
        json={"tool_call_id": second["tool_call_id"], "decision": "deny", "message": "only a"},
    )  # fmt: skip
    assert one.status == 200, one
    assert (one.data["decided"], one.data["run"]["status"]) == (
        [second["tool_call_id"]],
        "waiting_approval",
    )
    again = await fetch(
        "runs", run["id"], "approvals", method="POST",
        json={"tool_call_id": second["tool_call_id"], "decision": "approve"},
    )  # fmt: skip
    assert (again.status, again.error["code"]) == (409, "NO_PENDING_APPROVAL")
    rest = await fetch("runs", run["id"], "approvals", method="POST", json={"decision": "approve"})
    assert rest.data["run"]["status"] == "queued"
    await fetch("runner", "tick", method="POST", json={})

    async def finished() -> bool:
        status = (await fetch("runs", run["id"])).data["run"]["status"]
        return bool(status == "succeeded")

    await wait_for(finished)
    assert (await fetch("runs", run["id"], "approvals")).data["approvals"] == []
    assert "only a" in str(fake_llm.requests[-1].body)
