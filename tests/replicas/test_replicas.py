"""Three ``jupyter server`` replicas on one PostgreSQL database share sessions, streams and the
queue of background runs, and recover the runs of a replica that is killed."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from agi_jupyter.testing.rules import default_rule, last_user_text
from tests.replicas.conftest import STALE_AFTER, Replica, sse_events

# Three servers on 2 shared cores: setup alone can take a minute when the machine is busy.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("replicas"), pytest.mark.timeout(900)]
TERMINAL = {"succeeded", "failed", "cancelled"}


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def prompts(fake: FakeLLMServer) -> list[str]:
    return [last_user_text(r.protocol, r.body) for r in fake.requests if r.protocol == "chat"]


def owner_pid(run: dict[str, Any] | Any) -> int:
    owner = run["owner"] if isinstance(run, dict) else run.owner
    return int(str(owner).split(":")[1])


def follow_session(
    replica: Replica, session: str, headers: dict[str, str]
) -> tuple[threading.Event, list[dict[str, Any]], threading.Thread]:
    """Read the session's SSE stream on ``replica`` in a thread until a ``run.final``."""
    subscribed, events = threading.Event(), []

    def read() -> None:
        with (
            replica.client(timeout=120) as client,
            client.stream("GET", f"sessions/{session}/stream", headers=headers) as response,
        ):
            for event in sse_events(response):
                if not event:
                    subscribed.set()
                    continue
                events.append(event)
                if event["data"]["type"] == "run.final":
                    return

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return subscribed, events, thread


def test_a_session_of_one_replica_is_read_and_streamed_on_the_others(
    replicas: list[Replica],
) -> None:
    a, b, c = replicas
    session = a.call("POST", "sessions", json={"title": "shared"})["session"]
    for other in (b, c):
        assert other.call("GET", f"sessions/{session['id']}")["session"] == session

    subscribed, events, reader = follow_session(c, session["id"], {})
    assert subscribed.wait(60)
    reply = b.call("POST", f"sessions/{session['id']}/messages", json={"content": "hello from b"})
    reader.join(timeout=120)
    assert not reader.is_alive()
    assert reply["text"] == "(offline fake model) echo: hello from b"
    data = [e["data"] for e in events]
    assert (data[0]["type"], data[-1]["type"]) == ("run.meta", "run.final")
    assert [e["text"] for e in data if e["type"] == "output.text.done"] == [reply["text"]]
    assert all(e.get("id") for e in events), "stored events carry their cursor"

    cut = events[1]["id"]  # a client moves to another replica and resumes where it was
    _, resumed, reader = follow_session(a, session["id"], {"Last-Event-ID": cut})
    reader.join(timeout=120)
    assert [e["id"] for e in resumed] == [e["id"] for e in events[2:]]

    history = a.call("GET", f"sessions/{session['id']}/history")["messages"]
    assert [(m["role"], m["text"]) for m in history] == [
        ("user", "hello from b"),
        ("assistant", reply["text"]),
    ]
    assert c.call("GET", f"runs/{reply['run']['id']}")["run"]["status"] == "succeeded"


def test_300_queued_runs_are_executed_once_each_across_the_replicas(
    replicas: list[Replica], fake: FakeLLMServer, replica_root: Path, env: dict[str, str]
) -> None:
    producer = Agi(replica_root / "project", env=env)  # queues only: it never ticks
    try:
        sessions = [producer.new_session(title=f"queue {i}").id for i in range(60)]
        ids = [
            producer.submit(
                f"job {i}", session=sessions[i % 60], start=False, execution_mode="background"
            ).id
            for i in range(300)
        ]

        def all_ended() -> bool:
            active = "SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running')"
            return bool(producer.store.query(active).rows[0][0] == 0)

        wait_for(all_ended, 600, "300 runs to end")
        runs = [producer.run(i) for i in ids]
    finally:
        producer.close()
    assert {r.status for r in runs} == {"succeeded"}
    assert {r.attempt for r in runs} == {1}
    jobs = Counter(p for p in prompts(fake) if p.startswith("job "))
    assert jobs == Counter({f"job {i}": 1 for i in range(300)}), "each run's model call once"
    by_replica = Counter(owner_pid(r) for r in runs)
    assert set(by_replica) <= {r.process.pid for r in replicas}
    assert len(by_replica) >= 2, f"the queue was not shared: {by_replica}"


def test_runs_of_the_python_and_rest_apis_are_stored_in_postgresql(
    replicas: list[Replica], replica_root: Path, env: dict[str, str], postgres_url: str
) -> None:
    """The bar: with a database URL configured, a run through the Python API and one through
    the REST API land in PostgreSQL, and no SQLite store appears."""
    project = replica_root / "project"
    with Agi(project, env=env) as agi:
        by_python = agi.ask("through python").run
        schema = agi.store.schema  # type: ignore[attr-defined]
    session = replicas[1].call("POST", "sessions", json={"title": "rest"})["session"]["id"]
    by_rest = replicas[1].call("POST", f"sessions/{session}/messages", json={"content": "rest"})
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(
            f'SELECT id, status FROM "{schema}".runs WHERE id = ANY(%s) ORDER BY id',
            [[by_python.id, by_rest["run"]["id"]]],
        ).fetchall()
    assert sorted(rows) == sorted(
        [(by_python.id, "succeeded"), (by_rest["run"]["id"], "succeeded")]
    )
    assert not (project / ".agi" / "agi.sqlite").exists()


def test_the_runs_of_a_killed_replica_are_recovered_by_another(
    replicas: list[Replica], fake: FakeLLMServer
) -> None:
    slow_calls: list[int] = []

    def rule(protocol: str, body: Any) -> Turn:
        if "SLOW" in last_user_text(protocol, body) and not slow_calls:
            slow_calls.append(1)  # the first attempt streams for a minute: it will be killed
            return Turn(chunks=["tick "] * 600, fault=Fault(stall_between_events=0.1))
        return default_rule(protocol, body)

    fake.default_rule = rule
    try:
        check_recovery(replicas, fake, slow_calls)
    finally:
        fake.default_rule = default_rule


def check_recovery(replicas: list[Replica], fake: FakeLLMServer, slow_calls: list[int]) -> None:
    a = replicas[0]
    session = a.call("POST", "sessions", json={"title": "doomed"})["session"]["id"]
    run_id = a.call("POST", f"sessions/{session}/runs", json={"input": "SLOW job"})["run"]["id"]
    wait_for(lambda: bool(slow_calls), 120, "the run's model call")
    running = a.call("GET", f"runs/{run_id}")["run"]
    assert running["status"] == "running"
    (victim,) = [r for r in replicas if r.process.pid == owner_pid(running)]
    victim.kill()
    survivor = next(r for r in replicas if r is not victim)

    def recovered() -> bool:
        return bool(survivor.call("GET", f"runs/{run_id}")["run"]["status"] in TERMINAL)

    wait_for(recovered, STALE_AFTER + 120, "another replica to recover the run")
    final = survivor.call("GET", f"runs/{run_id}")["run"]
    assert (final["status"], final["attempt"]) == ("succeeded", 2)
    assert owner_pid(final) != victim.process.pid
    events = survivor.call("GET", f"runs/{run_id}/events", headers={"Accept": "application/json"})[
        "events"
    ]
    assert [e["type"] for e in events].count("run.final") == 1
    assert prompts(fake).count("SLOW job") == 2
    answer = survivor.call("GET", f"sessions/{session}/history")["messages"][-1]
    assert answer["text"] == "(offline fake model) echo: SLOW job"
