"""Approvals through the API: a session created with ``review_mode: ask`` whose run waits,
the waiting calls listed, a decision per call, the errors of a wrong decision."""

from __future__ import annotations

import asyncio

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


async def test_a_run_waiting_for_a_larger_budget_is_answered_over_rest(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    created = await fetch(
        "sessions",
        method="POST",
        json={
            "agent": "build",
            "review_mode": "ask",
            "model": "openai-chat:gpt-4o-mini",
            "budget": {"max_tokens": 100},
        },
    )
    session = created.data["session"]
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})], usage=(50, 10)),
        Turn(text="listed", usage=(70, 5)),
    )
    reply = await fetch(
        "sessions", session["id"], "messages", method="POST", json={"content": "list"}
    )
    run = reply.data["run"]
    assert run["status"] == "waiting_approval"
    listed = await fetch("runs", run["id"], "approvals")
    assert listed.data["approvals"] == []
    question = listed.data["budget"]
    assert question["budgets"][0]["spent_tokens"] == 60
    assert question["budgets"][0]["max_tokens"] == 100
    assert question["input_tokens_at_least"] == 50

    same = await fetch(
        "runs", run["id"], "approvals", method="POST",
        json={"decision": "approve", "budget": {"max_tokens": 100}},
    )  # fmt: skip
    assert (same.status, same.error["code"]) == (400, "BUDGET_NOT_RAISED")
    none = await fetch("runs", run["id"], "approvals", method="POST", json={"decision": "approve"})
    assert (none.status, none.error["code"]) == (400, "BUDGET_NOT_RAISED")
    assert len(fake_llm.requests) == 1

    raised = await fetch(
        "runs", run["id"], "approvals", method="POST",
        json={"decision": "approve", "budget": {"max_tokens": 1000}},
    )  # fmt: skip
    assert raised.status == 200, raised
    assert raised.data["decided"] == []

    async def finished() -> bool:
        status = (await fetch("runs", run["id"])).data["run"]["status"]
        return bool(status == "succeeded")

    await wait_for(finished)
    assert len(fake_llm.requests) == 2
    ses = await fetch("sessions", session["id"])
    assert ses.data["session"]["budget"] == {"max_tokens": 1000}
    again = await fetch("runs", run["id"], "approvals")
    assert again.data["budget"] is None


async def test_two_doors_deciding_at_once_one_wins_and_every_door_sees_who(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    """The panel and ``agi --server`` answer the same question at the same moment: one
    decision is stored, the other gets 409 naming it; the decision event says where it was
    taken and by whom (the server's user, as JupyterLab names them)."""
    created = await fetch("sessions", method="POST", json={"agent": "build", "review_mode": "ask"})
    session = created.data["session"]
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_write", {"path": "a.txt", "content": "a"})]),
        Turn(text="done"),
    )
    reply = await fetch(
        "sessions", session["id"], "messages", method="POST", json={"content": "write"}
    )
    run = reply.data["run"]
    assert run["status"] == "waiting_approval"

    panel, cli = await asyncio.gather(
        fetch("runs", run["id"], "approvals", method="POST",
              json={"decision": "approve", "door": "panel"}),
        fetch("runs", run["id"], "approvals", method="POST",
              json={"decision": "deny", "door": "cli"}),
    )  # fmt: skip
    answers = {"panel": panel, "cli": cli}
    (winner,) = [door for door, answer in answers.items() if answer.status == 200]
    (loser,) = [door for door, answer in answers.items() if answer.status != 200]
    assert (answers[loser].status, answers[loser].error["code"]) == (409, "NO_PENDING_APPROVAL")
    words = {"panel": "approved in the panel", "cli": "denied from the command line"}[winner]
    assert f"was decided already: fs.write {words} by " in answers[loser].error["message"]

    await fetch("runner", "tick", method="POST", json={})

    async def finished() -> bool:
        return bool((await fetch("runs", run["id"])).data["run"]["status"] == "succeeded")

    await wait_for(finished)
    stored = await fetch("runs", run["id"], "events", headers={"Accept": "application/json"})
    decided = [e for e in stored.data["events"] if e["type"] == "approval.decided"]
    (event,) = decided
    assert event["door"] == winner
    # by: the server's name of the person who sent the winning request (a token user here)
    assert event["by"]
    assert answers[loser].error["message"].endswith(f"{words} by {event['by']}")
