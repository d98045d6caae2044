"""Runs (background, input rules, cancel), artifacts and one-shot through the API."""

from __future__ import annotations

import json
from pathlib import Path

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn
from tests.server.conftest import Api, Fetch, ndjson, project_store, wait_run


async def new_session(fetch: Fetch) -> str:
    session_id: str = (await fetch("sessions", method="POST", json={})).data["session"]["id"]
    return session_id


async def test_background_runs_are_listed_and_read(fetch: Fetch) -> None:
    session = await new_session(fetch)
    ids = []
    for n in range(3):
        created = await fetch("sessions", session, "runs", method="POST", json={"input": f"q{n}"})
        assert created.status == 202, created
        assert created.data["run"]["execution_mode"] == "background"
        ids.append(created.data["run"]["id"])
    for run_id in ids:
        assert (await wait_run(fetch, run_id))["status"] == "succeeded"
    page = await fetch("sessions", session, "runs", params={"page_size": "2"})
    assert [r["id"] for r in page.data["runs"]] == ids[::-1][:2]
    rest = await fetch("sessions", session, "runs", params={"cursor": page.data["next_cursor"]})
    assert [r["id"] for r in rest.data["runs"]] == ids[:1]
    missing = await fetch("runs", "run_nope")
    assert (missing.status, missing.error["code"]) == (404, "RUN_NOT_FOUND")
    no_session = await fetch("sessions", "ses_nope", "runs")
    assert no_session.error["code"] == "SESSION_NOT_FOUND"


async def test_a_run_without_input_answers_the_last_user_message(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    session = await new_session(fetch)
    empty = await fetch("sessions", session, "runs", method="POST", json={})
    assert (empty.status, empty.error["code"]) == (409, "NO_USER_MESSAGE")
    fake_llm.enqueue(Turn(fault=Fault(status=400)))  # not retryable: the run fails
    failed = await fetch("sessions", session, "messages", method="POST", json={"content": "again?"})
    assert failed.data["run"]["status"] == "failed"
    retry = await fetch("sessions", session, "runs", method="POST", json={})
    assert retry.status == 202, retry
    run = await wait_run(fetch, retry.data["run"]["id"])
    assert run["status"] == "succeeded"
    messages = (await fetch("sessions", session, "messages")).data["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["text"] == "(offline fake model) echo: again?"
    answered = await fetch("sessions", session, "runs", method="POST", json={})
    assert answered.error["code"] == "NO_USER_MESSAGE"
    by_id = await fetch(
        "sessions", session, "runs", method="POST", json={"input_message_id": messages[1]["id"]}
    )
    assert by_id.error["code"] == "NO_USER_MESSAGE"
    unknown = await fetch(
        "sessions", session, "runs", method="POST", json={"input_message_id": "msg_nope"}
    )
    assert (unknown.status, unknown.error["code"]) == (404, "MESSAGE_NOT_FOUND")
    both = await fetch(
        "sessions",
        session,
        "runs",
        method="POST",
        json={"input": "x", "input_message_id": messages[0]["id"]},
    )
    assert both.error["code"] == "VALIDATION_ERROR"


async def test_cancel(fetch: Fetch, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(chunks=["a"] * 100, fault=Fault(stall_between_events=0.05)))
    session = await new_session(fetch)
    run_id = (await fetch("sessions", session, "runs", method="POST", json={"input": "slow"})).data[
        "run"
    ]["id"]
    await wait_run(fetch, run_id, statuses=("running",))
    cancelled = await fetch("runs", run_id, "cancel", method="POST")
    assert cancelled.status == 200, cancelled
    assert cancelled.data["run"]["status"] == "cancelled"
    assert cancelled.data["cells"] == [], "no notebook cells of the run were running"
    again = await fetch("runs", run_id, "cancel", method="POST")
    assert (again.status, again.error["code"]) == (409, "RUN_TERMINAL")
    unknown = await fetch("runs", "run_nope", "cancel", method="POST")
    assert (unknown.status, unknown.error["code"]) == (404, "RUN_NOT_FOUND")
    events = await fetch("runs", run_id, "events", headers={"Accept": "application/json"})
    assert events.data["events"][-1]["run"]["status"] == "cancelled"


async def test_deleting_a_session_cancels_its_runs(fetch: Fetch, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(chunks=["a"] * 100, fault=Fault(stall_between_events=0.05)))
    session = await new_session(fetch)
    run_id = (await fetch("sessions", session, "runs", method="POST", json={"input": "slow"})).data[
        "run"
    ]["id"]
    await wait_run(fetch, run_id, statuses=("running",))
    assert (await fetch("sessions", session, method="DELETE")).status == 200
    assert (await fetch("runs", run_id)).error["code"] == "RUN_NOT_FOUND"


async def test_artifacts(fetch: Fetch, server_root: Path) -> None:
    session = await new_session(fetch)
    done = await fetch("sessions", session, "messages", method="POST", json={"content": "x"})
    run_id = done.data["run"]["id"]
    big = "line\n" * 40_000  # over the inline threshold: stored as a file
    with project_store(server_root) as store:
        small = store.create_artifact("note", run_id=run_id, text="hello", mime="text/plain")
        large = store.create_artifact("log", run_id=run_id, text=big, filename="out.txt")
        data_only = store.create_artifact("summary", run_id=run_id, data={"n": 1})
    listed = await fetch("runs", run_id, "artifacts")
    assert [a["id"] for a in listed.data["artifacts"]] == [small.id, large.id, data_only.id]
    meta = await fetch("artifacts", large.id)
    assert meta.data["artifact"]["size"] == len(big)
    assert meta.data["artifact"]["text"] is None
    content = await fetch("artifacts", large.id, "content")
    assert content.body.decode() == big
    assert content.headers["Content-Type"].startswith("text/plain")
    assert content.headers["X-Content-Type-Options"] == "nosniff"
    assert (await fetch("artifacts", small.id, "content")).body == b"hello"
    as_json = await fetch("artifacts", data_only.id, "content")
    assert as_json.headers["Content-Type"] == "application/json"
    assert as_json.data == {"n": 1}
    missing = await fetch("artifacts", "art_nope")
    assert (missing.status, missing.error["code"]) == (404, "ARTIFACT_NOT_FOUND")
    missing_content = await fetch("artifacts", "art_nope", "content")
    assert missing_content.error["code"] == "ARTIFACT_NOT_FOUND"
    no_run = await fetch("runs", "run_nope", "artifacts")
    assert no_run.error["code"] == "RUN_NOT_FOUND"


async def test_one_shot(api: Api, fetch: Fetch, fake_llm: FakeLLMServer) -> None:
    answer = await fetch("one-shot", method="POST", json={"prompt": "ping"})
    assert answer.status == 200, answer
    assert answer.data["text"] == "(offline fake model) echo: ping"
    session = (await fetch("sessions", answer.data["run"]["session_id"])).data["session"]
    assert session["metadata"] == {"one_shot": True}
    conversation = [
        {"role": "user", "content": "my name is Ada"},
        {"role": "assistant", "content": "hello Ada"},
        {"role": "user", "content": "what is my name?"},
    ]
    fake_llm.enqueue(Turn(text="Ada"))
    chat = await fetch("one-shot", method="POST", json={"messages": conversation})
    assert chat.data["text"] == "Ada"
    sent = json.dumps(fake_llm.requests[-1].body)
    assert all(turn["content"] in sent for turn in conversation), "the history is sent"
    async with (
        api.client() as client,
        client.stream(
            "POST",
            "/one-shot",
            json={"prompt": "stream it"},
            headers={"Accept": "application/x-ndjson"},
        ) as response,
    ):
        events = await ndjson(response)
    assert (events[0]["type"], events[-1]["type"]) == ("run.meta", "run.final")
    bad_bodies = (
        {},
        {"prompt": "a", "messages": conversation},
        {"messages": conversation[1:2]},  # no user turn to answer
    )
    for bad in bad_bodies:
        reply = await fetch("one-shot", method="POST", json=bad)
        assert (reply.status, reply.error["code"]) == (400, "VALIDATION_ERROR"), bad
    async with api.client() as client:  # no body at all: the document says it is required
        empty = await client.post("/one-shot")
    assert (empty.status_code, empty.json()["error"]["code"]) == (400, "VALIDATION_ERROR")


async def test_a_one_shot_ending_with_an_assistant_turn_answers_its_last_user_turn(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    """The conversation's assistant turns after its last user turn reach the model as they
    are: the start of the answer (schemathesis found this schema-valid body refused)."""
    conversation = [
        {"role": "user", "content": "Write a haiku about autumn"},
        {"role": "assistant", "content": "Autumn moonlight"},
    ]
    fake_llm.enqueue(Turn(text="- a worm digs silently"))
    reply = await fetch("one-shot", method="POST", json={"messages": conversation})
    assert reply.status == 200, reply
    assert reply.data["text"] == "- a worm digs silently"
    body = fake_llm.requests[-1].body
    sent = [m for m in body.get("messages") or body["input"] if m.get("role") != "system"]
    assert [m["role"] for m in sent] == ["user", "assistant"]
    assert "Write a haiku about autumn" in json.dumps(sent[0])
    assert "Autumn moonlight" in json.dumps(sent[1])
    session = reply.data["run"]["session_id"]
    messages = (await fetch("sessions", session, "messages")).data["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "assistant"]


async def test_a_session_budget_stops_its_run_with_budget_exceeded(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    bad = await fetch("sessions", method="POST", json={"budget": {"max_tokens": 0}})
    assert (bad.status, bad.error["code"]) == (400, "VALIDATION_ERROR")
    created = await fetch(
        "sessions",
        method="POST",
        json={"model": "openai-chat:gpt-4o-mini", "budget": {"max_tokens": 100}},
    )
    assert created.status == 201, created
    session = created.data["session"]
    assert session["budget"] == {"max_tokens": 100}
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})], usage=(50, 10)),
        Turn(text="never asked for", usage=(70, 5)),
    )
    answered = await fetch(
        "sessions", session["id"], "messages", method="POST", json={"content": "list"}
    )
    run = answered.data["run"]
    assert run["status"] == "failed"
    assert run["error"]["code"] == "BUDGET_EXCEEDED"
    assert len(fake_llm.requests) == 1
    events = await fetch("runs", run["id"], "events", headers={"Accept": "application/json"})
    budget = [e for e in events.data["events"] if e["type"] == "budget"]
    assert budget[0]["remaining_tokens"] == 40
    assert budget[-1]["exceeded"] is True
    raised = await fetch(
        "sessions", session["id"], method="PATCH", json={"budget": {"max_tokens": 500}}
    )
    assert raised.data["session"]["budget"] == {"max_tokens": 500}
    removed = await fetch("sessions", session["id"], method="PATCH", json={"budget": None})
    assert removed.data["session"]["budget"] is None


async def test_a_notebook_budget_set_over_rest_stops_the_notebooks_runs(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    bad = await fetch(
        "notebook-budgets", method="PATCH", json={"path": "a.ipynb", "budget": {"max_usd": -1}}
    )
    assert (bad.status, bad.error["code"]) == (400, "VALIDATION_ERROR")
    for path in ("a\x00b.ipynb", "./", ".."):  # a NUL, or no notebook named: refused by schema
        nowhere = await fetch(
            "notebook-budgets", method="PATCH", json={"path": path, "budget": {"max_tokens": 5}}
        )
        assert (nowhere.status, nowhere.error["code"]) == (400, "VALIDATION_ERROR"), path
        assert nowhere.error["message"].startswith("path: String should match pattern"), path
    set_ = await fetch(
        "notebook-budgets",
        method="PATCH",
        json={"path": "./work/a.ipynb", "budget": {"max_tokens": 50}},
    )
    assert set_.status == 200, set_
    assert set_.data["notebook_budgets"] == {"work/a.ipynb": {"max_tokens": 50}}
    created = await fetch(
        "sessions",
        method="POST",
        json={"model": "openai-chat:gpt-4o-mini", "notebook_path": "work/a.ipynb"},
    )
    session = created.data["session"]
    fake_llm.enqueue(Turn(text="one", usage=(40, 10)))
    first = await fetch("sessions", session["id"], "messages", method="POST", json={"content": "1"})
    assert first.data["run"]["status"] == "succeeded"
    second = await fetch(
        "sessions", session["id"], "messages", method="POST", json={"content": "2"}
    )
    assert second.data["run"]["error"]["code"] == "BUDGET_EXCEEDED"
    assert "notebook work/a.ipynb budget: 50/50 tokens" in second.data["run"]["error"]["message"]
    assert len(fake_llm.requests) == 1
    removed = await fetch(
        "notebook-budgets", method="PATCH", json={"path": "work/a.ipynb", "budget": None}
    )
    assert removed.data["notebook_budgets"] == {}
    assert (await fetch("notebook-budgets")).data["notebook_budgets"] == {}


async def test_a_message_appended_without_a_run_is_answered_by_a_later_run(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    """Seed 001 §11.8.3: ``POST /sessions/{id}/messages {"run": false}``."""
    session = await new_session(fetch)
    appended = await fetch(
        "sessions", session, "messages", method="POST", json={"content": "later", "run": False}
    )
    assert appended.status == 201, appended
    assert (appended.data["role"], appended.data["text"]) == ("user", "later")
    assert fake_llm.requests == [], "no model call"
    assert (await fetch("sessions", session, "runs")).data["runs"] == []
    with_options = await fetch(
        "sessions", session, "messages", method="POST",
        json={"content": "x", "run": False, "model": "fake:echo"},
    )  # fmt: skip
    assert (with_options.status, with_options.error["code"]) == (400, "VALIDATION_ERROR")
    assert "no model" in with_options.error["message"]
    nowhere = await fetch(
        "sessions", "ses_nope", "messages", method="POST", json={"content": "x", "run": False}
    )
    assert nowhere.error["code"] == "SESSION_NOT_FOUND"
    fake_llm.enqueue(Turn(chunks=["a "] * 30, fault=Fault(hold_after=3)))
    started = await fetch("sessions", session, "runs", method="POST", json={})
    assert started.status == 202, started
    busy = await fetch(
        "sessions", session, "messages", method="POST", json={"content": "x", "run": False}
    )
    assert (busy.status, busy.error["code"]) == (409, "RUN_ACTIVE")
    fake_llm.release()
    assert (await wait_run(fetch, started.data["run"]["id"]))["status"] == "succeeded"
    messages = (await fetch("sessions", session, "messages")).data["messages"]
    assert [(m["role"], m["id"] == appended.data["id"]) for m in messages] == [
        ("user", True),
        ("assistant", False),
    ]
