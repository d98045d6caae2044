"""The OpenAI webhook route and deep research completed by webhook (a secret is configured)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.server.ratelimit import RateLimiter
from agi_jupyter.testing import FakeLLMServer
from tests.server.conftest import Fetch, project_store, wait_run
from tests.server.research_helpers import CITATIONS, REPORT, SECRET, event_for, report_turn, signed


@pytest.fixture
def agi_config() -> dict[str, Any]:
    return {"webhook_secret": SECRET, "deep_research_poll_interval": 3600}


async def deliver(fetch: Fetch, body: bytes, headers: dict[str, str], **kwargs: Any) -> Any:
    return await fetch("webhooks", "openai", method="POST", body=body, headers=headers, **kwargs)


async def start_research(fetch: Fetch, prompt: str = "Research tidal power") -> dict[str, Any]:
    session = (await fetch("sessions", method="POST", json={})).data["session"]["id"]
    created = await fetch(
        "sessions", session, "runs", method="POST", json={"type": "deep_research", "input": prompt}
    )
    assert created.status == 202, created
    run: dict[str, Any] = await wait_run(fetch, created.data["run"]["id"], ("waiting_webhook",))
    return run


@pytest.mark.parametrize(
    "tamper",
    ["signature", "stale", "future", "missing", "garbage", "other-secret"],
)
async def test_bad_signatures_are_401(fetch: Fetch, tamper: str) -> None:
    payload = event_for("resp_x")
    if tamper == "stale":
        body, headers = signed(payload, at=datetime.now(UTC) - timedelta(minutes=10))
    elif tamper == "future":
        body, headers = signed(payload, at=datetime.now(UTC) + timedelta(minutes=10))
    elif tamper == "other-secret":
        body, headers = signed(payload, secret="whsec_" + "QUJD" * 8)
    else:
        body, headers = signed(payload)
        if tamper == "signature":
            body = body.replace(b"resp_x", b"resp_y")
        elif tamper == "missing":
            del headers["webhook-signature"]
        else:
            headers["webhook-signature"] = "garbage"
    reply = await deliver(fetch, body, headers)
    assert (reply.status, reply.error["code"]) == (401, "INVALID_SIGNATURE"), reply


async def test_a_signed_body_that_is_no_event_is_400(fetch: Fetch) -> None:
    body, headers = signed({"hello": "world"})  # type: ignore[arg-type]
    reply = await deliver(fetch, body, headers)
    assert (reply.status, reply.error["code"]) == (400, "VALIDATION_ERROR")


async def test_webhook_needs_no_jupyter_auth(fetch: Fetch) -> None:
    body, headers = signed(event_for("resp_unrelated", event_id="evt_noauth"))
    reply = await deliver(fetch, body, {**headers, "Authorization": ""})
    assert reply.status == 200, reply
    assert reply.data == {"ok": True, "duplicate": False}


async def test_a_redelivery_is_known_by_its_webhook_id(fetch: Fetch) -> None:
    body, headers = signed(event_for("resp_w", event_id="evt_w1"), msg_id="msg_same")
    first = await deliver(fetch, body, headers)
    # The same delivery again, its payload id changed (a proxy re-wrapping events, say).
    body, headers = signed(event_for("resp_w", event_id="evt_w2"), msg_id="msg_same")
    again = await deliver(fetch, body, headers)
    assert (first.data["duplicate"], again.data["duplicate"]) == (False, True)


async def test_deep_research_by_webhook_delivered_100_times(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    fake_llm.enqueue(report_turn("resp_dr1"))
    run = await start_research(fetch)
    assert run["provider_response_id"] == "resp_dr1"
    (create,) = [r for r in fake_llm.requests if r.method == "POST"]
    assert create.body["background"] is True
    assert create.body["model"] == "o3-deep-research"
    assert create.body["tools"] == [{"type": "web_search_preview"}]
    assert create.body["input"] == "Research tidal power"
    assert create.headers["idempotency-key"] == f"{run['id']}-1"
    fake_llm.complete_background("resp_dr1")
    body, headers = signed(event_for("resp_dr1", event_id="evt_dr1"))
    replies = await asyncio.gather(*(deliver(fetch, body, headers) for _ in range(100)))
    assert all(r.status == 200 for r in replies)
    assert sorted(r.data["duplicate"] for r in replies) == [False] + [True] * 99
    final = await wait_run(fetch, run["id"])
    assert final["status"] == "succeeded", final
    assert final["last_webhook_event_id"] == "evt_dr1"
    retrieves = [r for r in fake_llm.requests if r.method == "GET"]
    assert len(retrieves) == 1, "the event is processed once"
    with project_store(server_root) as store:
        assert store.stats()["webhook_events"] == 1
        assert store.list_unprocessed_webhook_events() == []
    await check_report(fetch, final)


async def check_report(fetch: Fetch, run: dict[str, Any]) -> None:
    """The run's artifact, its assistant message and its event sequence."""
    (artifact,) = (await fetch("runs", run["id"], "artifacts")).data["artifacts"]
    assert artifact["kind"] == "deep_research_report"
    assert artifact["mime"] == "text/markdown"
    assert artifact["title"] == "Tidal power in 2026"
    data = artifact["data"]
    assert data["provider_response_id"] == run["provider_response_id"]
    assert [s["url"] for s in data["sources"]] == [url for url, _ in CITATIONS]
    assert data["sources"][0]["title"] == "Tides report"
    assert data["usage"]["output_tokens"] == 480
    assert "raw_response" not in data
    content = await fetch("artifacts", artifact["id"], "content")
    assert content.body.decode() == REPORT
    messages = (await fetch("sessions", run["session_id"], "messages")).data["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["parts"][1] == {
        "type": "artifact_ref",
        "artifact_id": artifact["id"],
        "kind": "deep_research_report",
        "title": "Tidal power in 2026",
    }
    events = (
        await fetch("runs", run["id"], "events", headers={"Accept": "application/json"})
    ).data["events"]
    sequence = [(e["type"], e.get("status")) for e in events]
    assert sequence == [
        ("run.meta", None),
        ("run.status", "running"),
        ("message.completed", None),
        ("run.status", "waiting_webhook"),
        ("run.status", "processing_webhook"),
        ("output.text.done", None),
        ("message.completed", None),
        ("usage", None),
        ("run.status", "succeeded"),
        ("run.final", None),
    ]
    assert events[-1]["run"]["usage"]["input_tokens"] == 120


async def test_webhook_before_the_response_id_is_kept_and_matched(
    fetch: Fetch, fake_llm: FakeLLMServer
) -> None:
    body, headers = signed(event_for("resp_early", event_id="evt_early"))
    assert (await deliver(fetch, body, headers)).status == 200
    tick = await fetch("runner", "tick", method="POST", json={})
    assert tick.data["webhook_events"] == 0, "no run has that response id yet: kept"
    fake_llm.enqueue(report_turn("resp_early"))
    run = await start_research(fetch)
    fake_llm.complete_background("resp_early")
    await fetch("runner", "tick", method="POST", json={})
    final = await wait_run(fetch, run["id"])
    assert final["status"] == "succeeded"
    assert final["last_webhook_event_id"] == "evt_early"


async def test_webhooks_are_rate_limited_per_address(fetch: Fetch, jp_serverapp: Any) -> None:
    jp_serverapp.web_app.settings["agi"].webhook_limiter = RateLimiter(3)
    body, headers = signed(event_for("resp_rl", event_id="evt_rl"))
    statuses = [(await deliver(fetch, body, headers)).status for _ in range(5)]
    assert statuses == [200, 200, 200, 429, 429]
    limited = await deliver(fetch, body, headers)
    assert limited.error["code"] == "RATE_LIMITED"
