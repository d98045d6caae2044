"""Streaming replies (NDJSON, SSE, JSON), disconnects, replay and following, session streams."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.server.conftest import Api, Fetch, ndjson, sse_events, sse_frames, wait_run

NDJSON = {"Accept": "application/x-ndjson"}
SSE = {"Accept": "text/event-stream"}


async def new_session(fetch: Fetch, **fields: Any) -> str:
    reply = await fetch("sessions", method="POST", json=fields)
    assert reply.status == 201, reply
    session_id: str = reply.data["session"]["id"]
    return session_id


def check_sequence(events: list[dict[str, Any]]) -> None:
    assert events[0]["type"] == "run.meta"
    assert events[-1]["type"] == "run.final"
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs)), "seq must increase"
    assert all(e["run_id"] == events[0]["run_id"] for e in events)


async def test_post_message_returns_json_when_done(fetch: Fetch) -> None:
    session = await new_session(fetch)
    reply = await fetch("sessions", session, "messages", method="POST", json={"content": "hi"})
    assert reply.status == 200, reply
    data = reply.data
    assert data["run"]["status"] == "succeeded"
    assert data["text"] == "(offline fake model) echo: hi"
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    assert data["messages"][1]["parts"] == [{"type": "text", "text": data["text"]}]


async def test_post_message_streams_ndjson(api: Api, fetch: Fetch, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(chunks=["Hel", "lo ", "there"]))
    session = await new_session(fetch)
    async with (
        api.client() as client,
        client.stream(
            "POST", f"/sessions/{session}/messages", json={"content": "x"}, headers=NDJSON
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/x-ndjson")
        events = await ndjson(response)
    check_sequence(events)
    deltas = [e["delta"] for e in events if e["type"] == "output.text.delta"]
    assert deltas
    assert "".join(deltas) == "Hello there"  # chunks read together may come as one delta
    assert [e["text"] for e in events if e["type"] == "output.text.done"] == ["Hello there"]
    assert events[-1]["run"]["status"] == "succeeded"


async def test_post_message_streams_sse(api: Api, fetch: Fetch) -> None:
    session = await new_session(fetch)
    async with (
        api.client() as client,
        client.stream(
            "POST", f"/sessions/{session}/messages", json={"content": "yo"}, headers=SSE
        ) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        received = [e async for e in sse_events(response)]
    events = [e["data"] for e in received]
    check_sequence(events)
    assert [e["event"] for e in received] == [e["type"] for e in events]
    assert [int(e["id"]) for e in received] == [e["seq"] for e in events]


async def test_sse_events_conform_to_the_documented_schema(api: Api, fetch: Fetch) -> None:
    """Each event of an SSE stream, as the document describes it: the event's fields, and its
    ``data`` JSON text holding an ``Event`` (``contentSchema``). Found by schemathesis: the
    document once described ``data``'s object as the whole event."""
    async with api.client() as client:
        doc = (await client.get("../openapi.json")).json()
    operation = doc["paths"]["/agi/v1/sessions/{session_id}/messages"]["post"]
    described = operation["responses"]["200"]["content"]["text/event-stream"]["schema"]
    components = {"components": doc["components"]}  # where their "#/components/..." point
    frame = Draft202012Validator(described | components)
    data = described["properties"]["data"]
    assert data["contentMediaType"] == "application/json"
    event_schema = Draft202012Validator(data["contentSchema"] | components)
    session = await new_session(fetch)
    async with (
        api.client() as client,
        client.stream(
            "POST", f"/sessions/{session}/messages", json={"content": "yo"}, headers=SSE
        ) as response,
    ):
        frames = [frame async for frame in sse_frames(response)]
    assert len(frames) > 3
    for each in frames:
        frame.validate(each)
        event_schema.validate(json.loads(each["data"]))


async def test_runs_stream_defaults_to_ndjson(api: Api, fetch: Fetch) -> None:
    session = await new_session(fetch)
    async with (
        api.client() as client,
        client.stream("POST", f"/sessions/{session}/runs:stream", json={"input": "q"}) as response,
    ):
        assert response.headers["content-type"].startswith("application/x-ndjson")
        events = await ndjson(response)
    check_sequence(events)
    completed = [e["message"] for e in events if e["type"] == "message.completed"]
    assert [m["role"] for m in completed] == ["user", "assistant"]


async def test_disconnect_mid_stream_lets_the_run_finish(
    api: Api, fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    chunks = [f"w{i} " for i in range(30)]
    fake_llm.enqueue(Turn(chunks=chunks, fault=Fault(stall_between_events=0.03)))
    session = await new_session(fetch)
    seen: list[dict[str, Any]] = []
    async with (
        api.client() as client,
        client.stream(
            "POST", f"/sessions/{session}/messages", json={"content": "long"}, headers=NDJSON
        ) as response,
    ):
        async for line in response.aiter_lines():
            seen.append(json.loads(line))
            if seen[-1]["type"] == "output.text.delta":
                break  # the client goes away mid-answer
    run_id = seen[0]["run_id"]
    status_when_left = (await fetch("runs", run_id)).data["run"]["status"]
    assert status_when_left == "running", "the run must still be going when the client left"
    run = await wait_run(fetch, run_id)
    assert run["status"] == "succeeded"
    history = await fetch("sessions", session, "history")
    assistant = [m for m in history.data["messages"] if m["role"] == "assistant"]
    assert assistant[-1]["text"] == "".join(chunks)


async def test_events_replay_after_seq_and_resume(api: Api, fetch: Fetch) -> None:
    session = await new_session(fetch)
    done = await fetch("sessions", session, "messages", method="POST", json={"content": "r"})
    run_id = done.data["run"]["id"]
    everything = await fetch("runs", run_id, "events", headers={"Accept": "application/json"})
    all_events = everything.data["events"]
    check_sequence(all_events)
    cut = all_events[2]["seq"]
    async with (
        api.client() as client,
        client.stream("GET", f"/runs/{run_id}/events", params={"after_seq": cut}) as response,
    ):
        rest = await ndjson(response)
    assert [e["seq"] for e in rest] == [e["seq"] for e in all_events if e["seq"] > cut]
    assert rest[-1]["type"] == "run.final"
    async with (
        api.client() as client,
        client.stream(
            "GET", f"/runs/{run_id}/events", headers={**SSE, "Last-Event-ID": str(cut)}
        ) as response,
    ):
        resumed = [e["data"] async for e in sse_events(response)]
    assert resumed == rest


async def test_follow_a_background_run_live(
    api: Api, fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(chunks=["a", "b", "c"], fault=Fault(stall_between_events=0.05)))
    session = await new_session(fetch)
    created = await fetch("sessions", session, "runs", method="POST", json={"input": "bg"})
    assert created.status == 202, created
    run = created.data["run"]
    assert run["execution_mode"] == "background"
    async with (
        api.client() as client,
        client.stream(
            "GET", f"/runs/{run['id']}/events", params={"follow": "true"}, headers=SSE
        ) as response,
    ):
        events = [e["data"] async for e in sse_events(response)]
    check_sequence(events)  # replayed from the store, then live
    assert [e["text"] for e in events if e["type"] == "output.text.done"] == ["abc"]
    deltas = "".join(e["delta"] for e in events if e["type"] == "output.text.delta")
    assert "abc".endswith(deltas), "live deltas from when the follower joined (not persisted)"


async def test_session_stream_shows_runs_of_other_processes(
    api: Api, fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    """A run executed by another ``Agi`` (as in a notebook kernel) reaches the session stream
    through the store; with persist_deltas its deltas arrive too (coalesced)."""
    session = await new_session(fetch)
    fake_llm.enqueue(
        Turn(chunks=[f"{i} " for i in range(20)], fault=Fault(stall_between_events=0.02))
    )
    kernel = Agi(server_root, config={"persist_deltas": True})
    received: list[dict[str, Any]] = []
    try:
        async with (
            api.client() as client,
            client.stream("GET", f"/sessions/{session}/stream") as response,
        ):
            assert response.headers["content-type"].startswith("text/event-stream")

            def run_in_kernel() -> str:
                return kernel.ask("from the kernel", session=session).text

            answer = asyncio.ensure_future(asyncio.to_thread(run_in_kernel))
            async for event in sse_events(response):
                received.append(event)
                if event["data"]["type"] == "run.final":
                    break
        text = await answer
    finally:
        await asyncio.to_thread(kernel.close)
    events = [e["data"] for e in received]
    check_sequence(events)
    assert all(e.get("id") for e in received), "events from the store carry their cursor"
    deltas = "".join(e["delta"] for e in events if e["type"] == "output.text.delta")
    assert deltas == text == "".join(f"{i} " for i in range(20))


async def test_session_stream_announces_session_changes(api: Api, fetch: Fetch) -> None:
    session = await new_session(fetch, title="before")
    async with (
        api.client() as client,
        client.stream("GET", f"/sessions/{session}/stream") as response,
    ):
        changed = asyncio.ensure_future(
            fetch("sessions", session, method="PATCH", json={"title": "after"})
        )
        async for event in sse_events(response):
            assert event["event"] == "session.updated"
            assert event["data"]["session"]["title"] == "after"
            break
        assert (await changed).status == 200


async def test_session_stream_resumes_after_a_cursor(api: Api, fetch: Fetch, backend: str) -> None:
    """Every stored event carries its cursor as the SSE id; reconnecting with it (Last-Event-ID
    or after_cursor) continues right after that event. A malformed cursor, or another
    backend's (a SQLite store's number on PostgreSQL, a PostgreSQL ``p`` position on SQLite),
    is refused before the stream starts."""
    session = await new_session(fetch)
    done = await fetch("sessions", session, "messages", method="POST", json={"content": "one"})
    assert done.status == 200, done
    async with (
        api.client() as client,
        client.stream(
            "GET",
            f"/sessions/{session}/stream",
            params={"after_cursor": "0" if backend == "sqlite" else "p0"},
        ) as response,
    ):
        stored = []
        async for event in sse_events(response):
            stored.append(event)
            if event["data"]["type"] == "run.final":
                break
    check_sequence([e["data"] for e in stored])
    cut = stored[2]["id"]
    for how in ({"headers": {"Last-Event-ID": cut}}, {"params": {"after_cursor": cut}}):
        async with (
            api.client() as client,
            client.stream("GET", f"/sessions/{session}/stream", **how) as response,
        ):
            rest = []
            async for event in sse_events(response):
                rest.append(event)
                if event["data"]["type"] == "run.final":
                    break
        assert [e["id"] for e in rest] == [e["id"] for e in stored[3:]]
    bad = ["junk", "12"] if backend == "postgres" else ["junk", "p12"]
    for cursor in bad:
        refused = await fetch("sessions", session, "stream", params={"after_cursor": cursor})
        assert (refused.status, refused.error["code"]) == (404, "CURSOR_NOT_FOUND"), cursor


async def test_every_session_stream_event_of_a_run_carries_an_id_to_resume_from(
    api: Api, fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    """Runs of this server reach the stream live (from the bus): each event still has an
    ``id:``, and ``Last-Event-ID`` resumes right after it, with nothing repeated or lost."""
    session = await new_session(fetch)
    fake_llm.enqueue(
        Turn(chunks=[f"{i} " for i in range(10)], fault=Fault(stall_between_events=0.02))
    )
    first: list[dict[str, Any]] = []
    async with api.client() as client:
        async with client.stream("GET", f"/sessions/{session}/stream") as response:
            posted = asyncio.ensure_future(
                fetch("sessions", session, "messages", method="POST", json={"content": "go"})
            )
            async for event in sse_events(response):
                first.append(event)
                if event["data"]["type"] == "message.completed":  # the user message: stop
                    break
        run_id = first[0]["data"]["run_id"]
        assert all(e.get("id") for e in first), first
        assert (await posted).status == 200  # the run went on while nobody listened
        resumed: list[dict[str, Any]] = []
        headers = {"Last-Event-ID": first[-1]["id"]}
        async with client.stream("GET", f"/sessions/{session}/stream", headers=headers) as again:
            async for event in sse_events(again):
                resumed.append(event)
                if event["data"]["type"] == "run.final":
                    break
    json_reply = {"Accept": "application/json"}
    stored = (await fetch("runs", run_id, "events", headers=json_reply)).data["events"]
    after = [e["seq"] for e in stored if e["seq"] > first[-1]["data"]["seq"]]
    assert [e["data"]["seq"] for e in resumed] == after, "every stored event after it, once"
    assert all(e.get("id") for e in resumed)
    bad = await fetch("sessions", session, "stream", params={"after_cursor": "not-a-cursor"})
    assert (bad.status, bad.error["code"]) == (404, "CURSOR_NOT_FOUND")


async def test_a_resumed_session_stream_repeats_nothing_of_earlier_runs(
    api: Api, fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    """Two runs of this server, streamed live: resuming after an event of the second repeats
    none of the first run's events (the live events' cursor lagged behind the store, and only
    the last run's sequence was remembered: 39 events were sent where 19 were due)."""
    session = await new_session(fetch)
    for _ in range(2):
        fake_llm.enqueue(
            Turn(chunks=[f"{i} " for i in range(8)], fault=Fault(stall_between_events=0.01))
        )
    first: list[dict[str, Any]] = []
    async with api.client() as client:
        async with client.stream("GET", f"/sessions/{session}/stream") as response:
            for content in ("one", "two"):
                done = await fetch(
                    "sessions", session, "messages", method="POST", json={"content": content}
                )
                assert done.status == 200, done
            async for event in sse_events(response):
                first.append(event)
                runs = {e["data"].get("run_id") for e in first}
                if len(runs) == 2 and event["data"]["type"] == "output.text.delta":
                    break  # mid-way through the second run
        cut = first[-1]
        second = cut["data"]["run_id"]
        resumed: list[dict[str, Any]] = []
        headers = {"Last-Event-ID": cut["id"]}
        async with client.stream("GET", f"/sessions/{session}/stream", headers=headers) as again:
            async for event in sse_events(again):
                resumed.append(event)
                if event["data"]["type"] == "run.final" and event["data"]["run_id"] == second:
                    break
    json_reply = {"Accept": "application/json"}
    stored = (await fetch("runs", second, "events", headers=json_reply)).data["events"]
    due = [e["seq"] for e in stored if e["seq"] > cut["data"]["seq"]]
    assert [(e["data"]["run_id"], e["data"]["seq"]) for e in resumed] == [
        (second, seq) for seq in due
    ]


# --- a retried attempt: output.text.reset before its first delta ---------------------------------

RETRIED_FINAL = "the final answer, streamed again"


def _consumed(events: list[dict[str, Any]]) -> str:
    """What a consumer shows that joins deltas and drops what each reset discards."""
    text = ""
    for event in events:
        if event["type"] == "output.text.delta":
            text += event["delta"]
        elif event["type"] == "output.text.reset":
            text = text[: len(text) - event["discarded_chars"]]
    return text


async def _retried_stream(
    api: Api, fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path, headers: dict[str, str]
) -> None:
    (server_root / ".agi").mkdir(exist_ok=True)
    (server_root / ".agi" / "config.json").write_text(json.dumps({"retry_backoff": [0.01]}))
    first = " ".join(f"first{i}" for i in range(40))
    fake_llm.enqueue(Turn(text=first, fault=Fault(drop_after=8)), Turn(text=RETRIED_FINAL))
    session = await new_session(fetch, model="openai-chat:gpt-4o-mini")
    async with (
        api.client() as client,
        client.stream(
            "POST", f"/sessions/{session}/messages", json={"content": "go"}, headers=headers
        ) as response,
    ):
        if headers is SSE:
            events = [e["data"] async for e in sse_events(response)]
        else:
            events = await ndjson(response)
    check_sequence(events)
    (reset,) = [e for e in events if e["type"] == "output.text.reset"]
    before = events[: events.index(reset)]
    shown = "".join(e["delta"] for e in before if e["type"] == "output.text.delta")
    assert shown
    assert first.startswith(shown)
    assert (reset["attempt"], reset["discarded_chars"]) == (2, len(shown))
    assert events[-1]["run"]["status"] == "succeeded"
    reply = await fetch("sessions", session, "history")
    (answer,) = [m for m in reply.data["messages"] if m["role"] == "assistant"]
    assert _consumed(events) == answer["text"] == RETRIED_FINAL


async def test_a_retried_ndjson_stream_says_what_it_discards(
    api: Api, fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    await _retried_stream(api, fetch, fake_llm, server_root, NDJSON)


async def test_a_retried_sse_stream_says_what_it_discards(
    api: Api, fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    await _retried_stream(api, fetch, fake_llm, server_root, SSE)
