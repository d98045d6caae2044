"""Deep research completed by polling (no webhook secret), failures, cancel, bad requests."""

from __future__ import annotations

from typing import Any

import pytest

from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.server.conftest import Fetch, wait_run
from tests.server.research_helpers import event_for, report_turn, signed
from tests.server.test_webhooks import check_report, start_research


@pytest.fixture
def agi_config() -> dict[str, Any]:
    return {"deep_research_poll_interval": 0.05}


async def test_deep_research_by_polling(fetch: Fetch, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(report_turn("resp_poll", delay=0.3))
    session = (await fetch("sessions", method="POST", json={})).data["session"]["id"]
    created = await fetch(
        "sessions",
        session,
        "runs",
        method="POST",
        json={"type": "deep_research", "input": "Research tidal power"},
    )
    final = await wait_run(fetch, created.data["run"]["id"])
    assert final["status"] == "succeeded", final
    assert len([r for r in fake_llm.requests if r.method == "GET"]) >= 1
    await check_report(fetch, final)


async def test_a_failed_response_fails_the_run(fetch: Fetch, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(fault=Fault(body={"message": "out of credits"}), background_delay=0.1))
    session = (await fetch("sessions", method="POST", json={})).data["session"]["id"]
    created = await fetch(
        "sessions", session, "runs", method="POST", json={"type": "deep_research", "input": "x"}
    )
    final = await wait_run(fetch, created.data["run"]["id"])
    assert final["status"] == "failed"
    assert final["error"]["code"] == "DEEP_RESEARCH_FAILED"
    assert "out of credits" in final["error"]["message"]


async def test_cancel_cancels_the_response(fetch: Fetch, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(report_turn("resp_cancel", delay=60))
    run = await start_research(fetch)
    cancelled = await fetch("runs", run["id"], "cancel", method="POST")
    assert cancelled.data["run"]["status"] == "cancelled"
    cancels = [r for r in fake_llm.requests if r.path.endswith("/resp_cancel/cancel")]
    assert len(cancels) == 1
    assert (await fetch("runs", run["id"], "cancel", method="POST")).error["code"] == (
        "RUN_TERMINAL"
    )


async def test_bad_deep_research_requests(fetch: Fetch) -> None:
    session = (await fetch("sessions", method="POST", json={})).data["session"]["id"]
    wrong_model = await fetch(
        "sessions",
        session,
        "runs",
        method="POST",
        json={"type": "deep_research", "input": "x", "model": "anthropic:claude-sonnet-4-6"},
    )
    assert (wrong_model.status, wrong_model.error["code"]) == (400, "VALIDATION_ERROR")
    stream = await fetch(
        "sessions", session, "runs:stream", method="POST", json={"type": "deep_research"}
    )
    assert stream.error["code"] == "VALIDATION_ERROR"


async def test_webhook_without_a_secret_is_404(fetch: Fetch) -> None:
    body, headers = signed(event_for("resp_x"))
    reply = await fetch("webhooks", "openai", method="POST", body=body, headers=headers)
    assert (reply.status, reply.error["code"]) == (404, "WEBHOOK_NOT_CONFIGURED")


async def test_deep_research_needs_an_openai_key(
    fetch: Fetch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")  # before the project's Agi reads its configuration
    session = (await fetch("sessions", method="POST", json={})).data["session"]["id"]
    no_key = await fetch(
        "sessions", session, "runs", method="POST", json={"type": "deep_research", "input": "x"}
    )
    assert (no_key.status, no_key.error["code"]) == (400, "PROVIDER_NOT_CONFIGURED")
    assert "OPENAI_API_KEY" in no_key.error["message"]
