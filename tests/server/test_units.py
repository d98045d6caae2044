"""Pieces of the server and of deep research that need no server."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.errors import NotFound, UsageError
from agi_jupyter.research import (
    InvalidSignature,
    ResearchSettings,
    WebhookNotConfigured,
    build_report,
    verify_webhook,
)
from agi_jupyter.runtime.follow import afollow_session
from agi_jupyter.server.projects import Projects
from agi_jupyter.server.ratelimit import RateLimiter
from agi_jupyter.server.routes import url_pattern
from agi_jupyter.server.streaming import dumps, encode, negotiate
from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.server.research_helpers import SECRET, event_for, report_turn, signed


@pytest.mark.parametrize(
    ("accept", "default", "expected"),
    [
        (None, "json", "json"),
        ("*/*", "ndjson", "ndjson"),
        ("text/event-stream", "json", "sse"),
        ("application/x-ndjson", "json", "ndjson"),
        ("application/json", "ndjson", "json"),
        ("application/json;q=0.5, text/event-stream", "json", "sse"),
        ("text/event-stream;q=0, application/x-ndjson", "json", "ndjson"),
        ("text/html", "ndjson", "ndjson"),
    ],
)
def test_negotiate(accept: str | None, default: Any, expected: str) -> None:
    assert negotiate(accept, default) == expected


def test_encode() -> None:
    event = {"type": "usage", "run_id": "r", "seq": 3, "input_tokens": 1}
    assert encode("ndjson", event) == (json.dumps(event, separators=(",", ":")) + "\n").encode()
    sse = encode("sse", event, 3).decode()
    assert sse.startswith("event: usage\nid: 3\ndata: {")
    assert sse.endswith("}\n\n")


def test_url_patterns_accept_an_encoded_colon() -> None:
    import re

    pattern = re.compile(url_pattern("/agi/v1/sessions/{session_id}/runs:stream") + "$")
    assert pattern.match("/agi/v1/sessions/ses_1/runs:stream")
    assert pattern.match("/agi/v1/sessions/ses_1/runs%3Astream")
    assert not pattern.match("/agi/v1/sessions/ses_1/runs")


def test_rate_limiter() -> None:
    now = [0.0]
    limiter = RateLimiter(60, clock=lambda: now[0])
    assert all(limiter.allow("a") for _ in range(60))
    assert not limiter.allow("a")
    assert limiter.allow("b"), "per address"
    now[0] += 1.0  # one token back per second
    assert limiter.allow("a")
    assert not limiter.allow("a")
    assert RateLimiter(0).allow("x")


def test_projects_resolve(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    root = outer / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "with" / ".agi").mkdir(parents=True)
    (root / "with" / "sub").mkdir()
    projects = Projects(root, "", lambda p: None)  # type: ignore[arg-type, return-value]
    assert projects.resolve(None) == root.resolve()
    assert projects.resolve("a/b") == (root / "a" / "b").resolve()
    assert projects.resolve("with/sub") == (root / "with").resolve(), "nearest .agi inside"
    for bad in ("..", "/tmp", "a/../../x", "a\x00", "missing", "n" * 5000):
        with pytest.raises(NotFound) as info:
            projects.resolve(bad)
        assert info.value.code == "PROJECT_NOT_FOUND"
    (outer / ".agi").mkdir()  # a store above the root is never used: the folder gets its own
    assert projects.resolve("a") == (root / "a").resolve()
    assert (root / "a" / ".agi").is_dir()


class FakeAgi:
    """What ``Projects`` uses of an ``Agi``: its folder, local runs, active runs, close()."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.closed = False
        self.local_runs = False
        self.active: list[str] = []
        self.runs_manager = self

    def has_local_runs(self) -> bool:
        return self.local_runs

    def has_active_runs(self) -> bool:
        return bool(self.active)

    def close(self) -> None:
        self.closed = True


@pytest.mark.asyncio
async def test_open_projects_are_bounded_and_closed_when_idle(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for i in range(6):
        (root / f"p{i}").mkdir(parents=True)
    made: dict[Path, FakeAgi] = {}

    def factory(path: Path) -> FakeAgi:
        made[path] = FakeAgi(path)
        return made[path]

    projects = Projects(root, "", factory, max_open=3, idle_timeout=60)  # type: ignore[arg-type]
    first = await projects.get("p0")
    held = projects.hold(first)
    busy = await projects.get("p1")
    busy.runs_manager.local_runs = True  # type: ignore[attr-defined]
    waiting = await projects.get("p2")
    waiting.active = ["run_waiting_for_a_webhook"]  # type: ignore[attr-defined]
    for i in (3, 4, 5):
        await projects.get(f"p{i}")
    await projects.wait_closed()
    # Above max_open, the least recently used closable ones went; p0-p2 may not close.
    assert sorted(p.name for p in made if made[p].closed) == ["p3", "p4"]
    assert sorted(a.project.name for a in projects.open()) == ["p0", "p1", "p2", "p5"]
    projects.release(held)
    busy.runs_manager.local_runs = False  # type: ignore[attr-defined]
    assert sorted(p.name for p in projects.evict(now=time.monotonic() + 61)) == ["p0", "p1", "p5"]
    await projects.wait_closed()
    assert [a.project.name for a in projects.open()] == ["p2"]
    again = await projects.get("p0")  # reopened on the next use
    assert again is not first
    assert not again.closed  # type: ignore[attr-defined]


def test_build_report() -> None:
    text = "# Title here\n\nSee [a] and [b] and [a] again."
    response = {
        "id": "resp_1",
        "status": "completed",
        "output": [
            {"type": "reasoning", "summary": []},
            {
                "type": "message",
                "content": [
                    {
                        "type": "output_text",
                        "text": text,
                        "annotations": [
                            {
                                "type": "url_citation",
                                "url": "https://a",
                                "title": "A",
                                "start_index": 18,
                                "end_index": 21,
                            },
                            {"type": "url_citation", "url": "https://b", "title": "B"},
                            {"type": "url_citation", "url": "https://a", "title": "A2"},
                            {"type": "file_citation", "file_id": "f"},
                        ],
                    }
                ],
            },
        ],
        "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
    }
    report = build_report(response)
    assert report.markdown == text
    assert report.title == "Title here"
    assert report.sources == [
        {"url": "https://a", "title": "A", "snippet": "[a]"},
        {"url": "https://b", "title": "B"},
    ]
    assert report.usage == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    assert build_report({"output": []}).title == "Deep research report"


def test_verify_webhook() -> None:
    body, headers = signed(event_for("resp_9", event_id="evt_9"))
    delivery = verify_webhook(SECRET, body, headers)
    assert (delivery.event_id, delivery.type, delivery.response_id) == (
        "evt_9",
        "response.completed",
        "resp_9",
    )
    with pytest.raises(WebhookNotConfigured):
        verify_webhook(None, body, headers)
    with pytest.raises(WebhookNotConfigured):
        verify_webhook("whsec_%%%", body, headers)
    with pytest.raises(InvalidSignature):
        verify_webhook(SECRET, body + b" ", headers)
    with pytest.raises(InvalidSignature):
        verify_webhook(SECRET, body, {**headers, "webhook-signature": "v1,=="})


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer) -> Path:
    folder = tmp_path / "proj"
    (folder / ".agi").mkdir(parents=True)
    return folder


def make_agi(project: Path, fake_llm: FakeLLMServer, **kwargs: Any) -> Agi:
    env = {
        "HOME": str(project.parent / "home"),
        "OPENAI_API_KEY": "sk-test-openai-secret-0001",
        "OPENAI_BASE_URL": fake_llm.openai_base_url,
        "AGI_FAKE_LLM_URL": fake_llm.openai_base_url,
        "AGI_REVIEW_MODE": "auto",  # (see tests/conftest.py)
    }
    return Agi(project, env=env, **kwargs)


def test_agi_research_in_process_by_polling(project: Path, fake_llm: FakeLLMServer) -> None:
    """What ``%%agi --research`` builds on: ``Agi.research`` + ``follow``, no server."""
    fake_llm.enqueue(report_turn("resp_kernel", delay=0.2))
    with make_agi(project, fake_llm, research=ResearchSettings(poll_interval=0.05)) as agi:
        run = agi.research("Research tidal power")
        assert (run.type, run.execution_mode, run.model) == (
            "deep_research",
            "background",
            "o3-deep-research",
        )
        events = list(agi.follow(run.id))
        statuses = [e["status"] for e in events if e["type"] == "run.status"]
        assert statuses == ["running", "waiting_webhook", "processing_webhook", "succeeded"]
        result = agi.result(run.id)
        assert result.text.startswith("# Tidal power")
        with pytest.raises(UsageError):
            agi.research("x", model="anthropic:claude-sonnet-4-6")


def test_persisted_deltas_are_written_in_batches(project: Path, fake_llm: FakeLLMServer) -> None:
    chunks = [f"{i} " for i in range(40)]
    fake_llm.enqueue(Turn(chunks=chunks, fault=Fault(stall_between_events=0.01)))
    with make_agi(project, fake_llm, config={"persist_deltas": True}) as agi:
        writes = []
        for name in ("append_run_event", "append_run_events"):
            original = getattr(agi.store, name)

            def spy(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                writes.append(time.monotonic())
                return _original(*args, **kwargs)

            setattr(agi.store, name, spy)
        start = time.monotonic()
        run_id = agi.ask("count", model="fake:echo").run_id
        elapsed = time.monotonic() - start
        stored = agi.store.list_run_events(run_id)
    deltas = [e.payload["delta"] for e in stored if e.type == "output.text.delta"]
    assert "".join(deltas) == "".join(chunks), "every delta is stored, in order"
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    coarse = len([e for e in stored if e.type != "output.text.delta"])
    assert len(writes) <= coarse + elapsed * 10 + 2, (len(writes), coarse, elapsed)
    assert len(writes) < len(stored) / 2


async def test_session_follower_dedupes_and_idles(project: Path, fake_llm: FakeLLMServer) -> None:
    agi = make_agi(project, fake_llm)
    try:
        session = agi.new_session()
        follower = afollow_session(agi.store, agi.bus, session.id, idle_every=0.2)
        assert await anext(follower) is None, "subscribed"
        run = agi.submit("hello", session=session, model="fake:echo")
        items = [await anext(follower)]
        while not (items[-1] and items[-1][1]["type"] == "run.final"):
            items.append(await anext(follower))
        events = [item[1] for item in items if item]
        seqs = [e["seq"] for e in events]
        assert seqs == sorted(set(seqs)), "each event once"
        assert {e["run_id"] for e in events} == {run.id}
        assert await anext(follower) is None, "idle: a keep-alive tick"
        await follower.aclose()
    finally:
        await asyncio.to_thread(agi.close)


def test_events_waiting_for_their_run_do_not_hold_newer_ones_back(
    project: Path, fake_llm: FakeLLMServer
) -> None:
    from agi_jupyter.research import store_delivery
    from agi_jupyter.research.webhooks import parse_delivery

    fake_llm.enqueue(report_turn("resp_real"))
    settings = ResearchSettings(webhooks=True)
    with make_agi(project, fake_llm, research=settings) as agi:
        run = agi.research("topic")
        deadline = time.monotonic() + 60  # (a loaded machine: 10 s was not always enough)
        while agi.run(run.id).status != "waiting_webhook" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert agi.run(run.id).status == "waiting_webhook"
        for n in range(60):  # older events about responses no run has (yet)
            body = json.dumps(event_for(f"resp_other{n}", event_id=f"evt_o{n}")).encode()
            store_delivery(agi.store, parse_delivery(body, webhook_id=f"m{n}"))
        body = json.dumps(event_for("resp_real", event_id="evt_real")).encode()
        store_delivery(agi.store, parse_delivery(body, webhook_id="m_real"))
        fake_llm.complete_background("resp_real")
        result = agi.tick(max_webhook_events=50)
        assert (result.webhook_events, result.completed_background) == (1, 1)
        assert agi.run(run.id).status == "succeeded"
        assert len(agi.store.list_unprocessed_webhook_events(limit=100)) == 60


@pytest.mark.slow
def test_loading_the_extension_imports_no_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys, agi_jupyter;"
        "agi_jupyter._jupyter_server_extension_points();"
        "import agi_jupyter.server.openapi;"
        "heavy = ('openai', 'anthropic', 'httpx2', 'ipywidgets', 'standardwebhooks');"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == ""


def test_an_event_about_a_response_not_yet_finished_is_kept(
    project: Path, fake_llm: FakeLLMServer
) -> None:
    """OpenAI's retrieve may lag its webhook: the event waits for the next tick."""
    from agi_jupyter.research import store_delivery
    from agi_jupyter.research.webhooks import parse_delivery

    fake_llm.enqueue(report_turn("resp_lag"))
    with make_agi(project, fake_llm, research=ResearchSettings(webhooks=True)) as agi:
        run = agi.research("topic")
        deadline = time.monotonic() + 10
        while agi.run(run.id).status != "waiting_webhook" and time.monotonic() < deadline:
            time.sleep(0.02)
        body = json.dumps(event_for("resp_lag", event_id="evt_lag")).encode()
        store_delivery(agi.store, parse_delivery(body, webhook_id="m_lag"))
        early = agi.tick()
        assert (early.webhook_events, early.completed_background) == (0, 0)
        assert agi.run(run.id).status == "waiting_webhook"
        fake_llm.complete_background("resp_lag")
        late = agi.tick()
        assert (late.webhook_events, late.completed_background) == (1, 1)
        assert agi.run(run.id).status == "succeeded"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (
            {"type": "output.text.delta", "delta": 'é\n"x'},
            '{"type":"output.text.delta","delta":"é\\n\\"x"}',
        ),
        ({"n": 2**70}, '{"n":1180591620717411303424}'),  # over 64 bits: the json fallback
        ({1: True}, '{"1":true}'),  # a non-string key: the json fallback
        ({"s": "\ud800"}, '{"s":"\\ud800"}'),  # a lone surrogate, escaped so it encodes
        ({"f": float("nan")}, '{"f":null}'),  # valid JSON, unlike json's NaN
    ],
)
def test_dumps_writes_compact_valid_json_for_every_value(value: Any, text: str) -> None:
    assert dumps(value) == text
    assert json.loads(dumps(value)) is not None
    dumps(value).encode()  # every result can be sent
