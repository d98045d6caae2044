"""The runner: the tick endpoint, concurrent ticks, the periodic tick and the heartbeat."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.server.conftest import Fetch, project_store, wait_for, wait_run


@pytest.fixture
def other(server_root: Path) -> Iterator[Agi]:
    """A second runtime on the server's project, as a notebook kernel or another server."""
    agi = Agi(server_root)
    yield agi
    agi.close()


def queue_runs(agi: Agi, sessions: int, per_session: int) -> list[str]:
    ids = []
    for s in range(sessions):
        session = agi.new_session(title=f"s{s}")
        for n in range(per_session):
            run = agi.submit(f"q{s}.{n}", session=session, start=False, execution_mode="background")
            ids.append(run.id)
    return ids


async def test_tick_executes_queued_runs(fetch: Fetch, other: Agi) -> None:
    ids = queue_runs(other, 1, 2)
    tick = await fetch("runner", "tick", method="POST", json={"max_runs": 5})
    assert tick.status == 200, tick
    assert tick.data["executed"] == 2
    assert set(tick.data) == {
        "executed",
        "recovered",
        "failed_stale",
        "skipped",
        "webhook_events",
        "completed_background",
    }
    for run_id in ids:
        assert (await fetch("runs", run_id)).data["run"]["status"] == "succeeded"
    bad = await fetch("runner", "tick", method="POST", json={"max_runs": 0})
    assert bad.error["code"] == "VALIDATION_ERROR"
    unknown = await fetch("runner", "tick", method="POST", json={"max_runs": 1, "extra": 1})
    assert unknown.error["code"] == "VALIDATION_ERROR"


@pytest.mark.slow
async def test_concurrent_ticks_execute_each_run_exactly_once(
    fetch: Fetch, other: Agi, fake_llm: FakeLLMServer, server_root: Path, backend: str
) -> None:
    ids = queue_runs(other, 20, 10)
    executed = 0
    for _ in range(40):
        ticks = [fetch("runner", "tick", method="POST", json={"max_runs": 50}) for _ in range(8)]
        competitor = asyncio.to_thread(other.tick, max_runs=50)  # another runtime, same store
        *replies, theirs = await asyncio.gather(*ticks, competitor)
        assert all(r.status == 200 for r in replies), replies
        executed += sum(r.data["executed"] for r in replies) + theirs.executed
        active = other.store.list_runs(statuses=["queued", "running"], limit=1).items
        if not active:
            break
    if backend == "sqlite":
        assert executed == 200
    else:  # runs ending also wake the server's own runner (NOTIFY), which executes some too
        assert 0 < executed <= 200
    model_requests = [r for r in fake_llm.requests if r.method == "POST"]
    assert len(model_requests) == 200
    with project_store(server_root) as store:
        for run_id in ids:
            run = store.get_run(run_id)
            assert (run.status, run.attempt) == ("succeeded", 1), run
            metas = [e for e in store.list_run_events(run_id) if e.type == "run.meta"]
            assert len(metas) == 1
        assert store.stats()["messages"] == 400


class TestPeriodic:
    @pytest.fixture
    def agi_config(self) -> dict[str, Any]:
        return {"tick_interval": 0.05}

    async def test_the_periodic_tick_runs_queued_work(self, fetch: Fetch, other: Agi) -> None:
        await fetch("sessions")  # the project is in use: the runner ticks it
        (run_id,) = queue_runs(other, 1, 1)
        run = await wait_run(fetch, run_id)
        assert run["status"] == "succeeded"
        assert run["owner"] != other.deps.owner, "the server's runner executed it"


def due_task(server_root: Path, title: str, in_seconds: float = -1) -> str:
    due = datetime.now(UTC) + timedelta(seconds=in_seconds)
    with project_store(server_root) as store:
        task = store.create_task(
            title, details="water the plants", due_at=due.isoformat().replace("+00:00", "Z")
        )
    return task.id


class TestHeartbeat:
    @pytest.fixture
    def agi_config(self) -> dict[str, Any]:
        return {"heartbeat_interval": 0.2}

    async def test_heartbeat_acts_on_due_tasks(
        self, fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path, jp_serverapp: Any
    ) -> None:
        task_id = due_task(server_root, "Water plants")
        later = due_task(server_root, "Next year", in_seconds=3600 * 24 * 365)
        await fetch("stats")  # the first request starts the runner (pytest-jupyter skips it)
        fake_llm.enqueue(
            Turn(tool_calls=[FakeToolCall("tasks", {"action": "complete", "id": task_id})]),
            Turn(text="Done: the plants are watered."),
        )

        async def task_done() -> bool:
            with project_store(server_root) as store:
                return store.get_task(task_id).status == "done"

        await wait_for(task_done)
        sessions = (await fetch("sessions")).data["sessions"]
        (session,) = [s for s in sessions if s["title"] == "Heartbeat: Water plants"]
        assert session["metadata"]["heartbeat"]["task_id"] == task_id
        (run,) = (await fetch("sessions", session["id"], "runs")).data["runs"]
        run = await wait_run(fetch, run["id"])
        assert (run["status"], run["execution_mode"]) == ("succeeded", "background")
        prompt = json.dumps(fake_llm.requests[0].body)
        assert task_id in prompt
        assert "water the plants" in prompt
        with project_store(server_root) as store:
            assert store.get_task(later).status == "pending", "not due within the interval"
        runner = jp_serverapp.web_app.settings["agi"].runner
        seen = runner.beats

        async def two_more_beats() -> bool:
            return runner.beats >= seen + 2

        await wait_for(two_more_beats)  # the task, done, is not handed over again
        assert len((await fetch("sessions")).data["sessions"]) == 1


class TestDurabilitySettings:
    @pytest.fixture
    def agi_config(self) -> dict[str, Any]:
        return {"stale_after": 3.0, "persist_deltas": False}

    async def test_the_traits_reach_the_projects_runtime(
        self, fetch: Fetch, jp_serverapp: Any
    ) -> None:
        extension = jp_serverapp.web_app.settings["agi"]
        agi = await extension.projects.get(None)
        assert (agi.config.stale_after, agi.config.persist_deltas) == (3.0, False)
        assert agi.deps.heartbeat_interval == 0.75
