"""Issue 29.7 through the server, on both stores: a run whose tool call carries a 300 KB
argument stores it once, and every door still gives it whole: the session's messages, the
session stream and its resume, the history sent to the model next; deleting the session leaves
no blob behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.server.conftest import Api, Fetch, project_store, sse_events
from tests.store.conftest import count
from tests.store.test_conformance_large_values import big, occurrences


async def session_events(api: Api, session: str, **how: Any) -> list[dict[str, Any]]:
    """The session stream's stored events from ``how`` on, up to the end of a run."""
    events = []
    async with (
        api.client() as client,
        client.stream("GET", f"/sessions/{session}/stream", **how) as response,
    ):
        async for event in sse_events(response):
            events.append(event)
            if event["data"]["type"] == "run.final":
                break
    return events


async def test_a_large_argument_is_stored_once_and_every_door_gives_it_whole(
    api: Api, fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path, backend: str
) -> None:
    arg = big(7)
    args = {"path": "big.txt", "content": arg}
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_write", args, id="call_big", chunks=30)]),
        Turn(text="written"),
        Turn(text="again"),
    )
    made = await fetch("sessions", method="POST", json={"agent": "build"})
    session = made.data["session"]["id"]
    reply = await fetch("sessions", session, "messages", method="POST", json={"content": "go"})
    assert reply.data["run"]["status"] == "succeeded", reply
    assert (server_root / "big.txt").read_text() == arg
    store = project_store(server_root)
    try:
        assert occurrences(store, arg) == 1

        messages = (await fetch("sessions", session, "messages")).data["messages"]
        calls = [p for m in messages for p in m["parts"] if p["type"] == "tool_call"]
        assert [c["arguments"] for c in calls] == [args]

        start = {"params": {"after_cursor": "0" if backend == "sqlite" else "p0"}}
        events = await session_events(api, session, **start)
        done = [e for e in events if e["data"]["type"] == "tool.call.arguments.done"]
        assert [e["data"]["arguments"] for e in done] == [args]
        completed = [
            p["arguments"]
            for e in events
            if e["data"]["type"] == "message.completed"
            for p in e["data"]["message"]["parts"]
            if p["type"] == "tool_call"
        ]
        assert completed == [args]
        before = events[events.index(done[0]) - 1]["id"]
        resumed = await session_events(api, session, headers={"Last-Event-ID": before})
        assert resumed[0]["data"]["type"] == "tool.call.arguments.done"
        assert resumed[0]["data"]["arguments"] == args

        again = await fetch("sessions", session, "messages", method="POST", json={"content": "?"})
        assert again.data["run"]["status"] == "succeeded", again
        sent = json.dumps(fake_llm.requests[-1].body)  # the history, as the model gets it
        assert sent.count(arg) == 1

        deleted = await fetch("sessions", session, method="DELETE")
        assert deleted.status in (200, 204), deleted
        assert occurrences(store, arg) == 0
        assert count(store, "SELECT COUNT(*) FROM blob_refs") == 0
    finally:
        store.close()
