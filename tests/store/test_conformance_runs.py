"""Every backend: runs (create, pages, updates with versions, compare-and-set claims,
heartbeats, queues)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agi_jupyter.errors import Conflict, RunNotFound, SessionNotFound, UsageError
from agi_jupyter.records import Run, Session
from agi_jupyter.store import Store
from tests.store.conftest import OpenStore

PAST, FUTURE = "2000-01-01T00:00:00.000Z", "2999-01-01T00:00:00.000Z"


def test_create_run_defaults_and_fields(store: Store, session: Session) -> None:
    run = store.create_run(session.id)
    assert run.id.startswith("run_")
    assert (run.status, run.type, run.execution_mode, run.version) == (
        "queued",
        "agent",
        "foreground_stream",
        0,
    )
    assert (run.usage, run.error, run.loop_state) == ({}, None, None)
    assert store.get_run(run.id) == run
    full = store.create_run(
        session.id,
        type="deep_research",
        execution_mode="background",
        model="o3-deep-research",
        max_attempts=2,
        loop_state={"messages": [1, 2]},
        usage={"input_tokens": 3},
        cell_id="c1",
        execution_count=7,
    )
    assert store.get_run(full.id) == full


@pytest.mark.parametrize(
    "fields",
    [{"colour": 1}, {"version": 3}, {"id": "run_x"}, {"status": "sleeping"}, {"type": "x"}],
)
def test_create_run_rejects_bad_fields(
    store: Store, session: Session, fields: dict[str, Any]
) -> None:
    with pytest.raises(UsageError):
        store.create_run(session.id, **fields)


def test_create_run_of_unknown_session(store: Store) -> None:
    with pytest.raises(SessionNotFound):
        store.create_run("ses_nope")


def test_get_unknown_run(store: Store, run: Run) -> None:
    with pytest.raises(RunNotFound) as info:
        store.get_run("run_nope")
    assert info.value.code == "RUN_NOT_FOUND"


def collect(store: Store, size: int, **kwargs: Any) -> list[str]:
    ids: list[str] = []
    page = store.list_runs(limit=size, **kwargs)
    for _ in range(100):
        ids.extend(r.id for r in page.items)
        if page.next_cursor is None:
            return ids
        page = store.list_runs(limit=size, cursor=page.next_cursor, **kwargs)
    raise AssertionError("too many pages")


def test_list_runs_pages_filters_newest_first(store: Store) -> None:
    a, b = store.create_session(), store.create_session()
    runs = [store.create_run(a.id if i % 3 else b.id) for i in range(17)]
    for r in runs[::4]:
        store.update_run(r.id, status="running")
    assert collect(store, 4) == [r.id for r in reversed(runs)]
    assert collect(store, 3, session_id=a.id) == [
        r.id for r in reversed(runs) if r.session_id == a.id
    ]
    running = [r.id for r in reversed(runs[::4])]
    assert collect(store, 2, statuses=["running"]) == running
    assert collect(store, 2, statuses={"running", "queued"}) == [r.id for r in reversed(runs)]
    assert store.list_runs(statuses=[]).items == []
    with pytest.raises(UsageError, match="status"):
        store.list_runs(statuses=["runing"])
    assert collect(store, 5, session_id=b.id, statuses=["running"]) == [
        r.id for r in reversed(runs[::4]) if r.session_id == b.id
    ]


def test_list_runs_pages_are_stable_under_inserts(store: Store, session: Session) -> None:
    original = {store.create_run(session.id).id for _ in range(9)}
    seen: list[str] = []
    page = store.list_runs(limit=2)
    for _ in range(20):
        seen.extend(r.id for r in page.items)
        store.create_run(session.id)
        if page.next_cursor is None:
            break
        page = store.list_runs(limit=2, cursor=page.next_cursor)
    assert sorted(seen) == sorted(original)


def test_a_cursor_of_another_listing_is_refused(store: Store, session: Session) -> None:
    store.create_session()
    cursor = store.list_sessions(limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(UsageError, match="cursor"):
        store.list_runs(cursor=cursor)


def test_update_run_bumps_version_and_round_trips_json(store: Store, run: Run) -> None:
    updated = store.update_run(
        run.id,
        status="failed",
        error={"code": "X", "message": "m"},
        loop_state={"i": 1},
        usage={"input_tokens": 5},
        cost_usd=0.5,
        next_attempt_at=None,
    )
    assert updated.version == run.version + 1
    assert updated.updated_at >= run.updated_at
    assert (updated.error, updated.loop_state, updated.usage) == (
        {"code": "X", "message": "m"},
        {"i": 1},
        {"input_tokens": 5},
    )
    assert store.get_run(run.id) == updated
    assert store.update_run(run.id).version == run.version + 2


@pytest.mark.parametrize(
    "changes", [{"nope": 1}, {"version": 9}, {"session_id": "ses_x"}, {"status": "paused"}]
)
def test_update_run_rejects_bad_changes(store: Store, run: Run, changes: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        store.update_run(run.id, **changes)
    with pytest.raises(UsageError):
        store.update_run_if(run.id, run.version, **changes)
    assert store.get_run(run.id) == run


def test_update_unknown_run(store: Store, run: Run) -> None:
    with pytest.raises(RunNotFound):
        store.update_run("run_nope", status="failed")


def test_update_run_if_is_compare_and_set(store: Store, run: Run) -> None:
    assert store.update_run_if(run.id, run.version, status="cancelled")
    assert not store.update_run_if(run.id, run.version, status="failed")
    after = store.get_run(run.id)
    assert (after.status, after.version) == ("cancelled", run.version + 1)
    assert not store.update_run_if("run_nope", 0, status="failed")


def test_claim_run_same_version_exactly_one_wins(store: Store, run: Run) -> None:
    assert store.claim_run(run.id, run.version, owner="a")
    assert not store.claim_run(run.id, run.version, owner="b")
    claimed = store.get_run(run.id)
    assert (claimed.status, claimed.owner, claimed.version) == ("running", "a", run.version + 1)
    assert claimed.heartbeat_at is not None
    assert claimed.started_at == claimed.heartbeat_at
    assert not store.claim_run("run_nope", 0, owner="a")


def test_claim_keeps_the_first_started_at(store: Store, run: Run) -> None:
    store.claim_run(run.id, run.version, owner="a")
    first = store.get_run(run.id)
    requeued = store.update_run(run.id, status="queued", owner=None)
    assert store.claim_run(run.id, requeued.version, owner="b")
    assert store.get_run(run.id).started_at == first.started_at


def test_claim_race_between_connections(make_store: OpenStore, run: Run) -> None:
    stores = [make_store() for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    wins: list[str] = []

    def claim(i: int) -> None:
        barrier.wait(timeout=30)
        if stores[i].claim_run(run.id, run.version, owner=f"w{i}"):
            wins.append(f"w{i}")

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert stores[0].get_run(run.id).owner == wins[0]


def test_heartbeat_only_for_the_running_owner(store: Store, run: Run) -> None:
    assert not store.heartbeat(run.id, "a")  # queued
    store.claim_run(run.id, run.version, owner="a")
    store.update_run(run.id, heartbeat_at=PAST)
    before = store.get_run(run.id)
    assert store.heartbeat(run.id, "a")
    after = store.get_run(run.id)
    assert after.heartbeat_at is not None
    assert after.heartbeat_at > PAST
    assert after.version == before.version + 1
    assert not store.heartbeat(run.id, "b")
    store.update_run(run.id, status="cancelled")
    assert not store.heartbeat(run.id, "a")
    assert not store.heartbeat("run_nope", "a")


def test_due_runs(store: Store, session: Session) -> None:
    now_due = store.create_run(session.id)
    past = store.create_run(session.id, next_attempt_at=PAST)
    store.create_run(session.id, next_attempt_at=FUTURE)
    running = store.create_run(session.id)
    store.claim_run(running.id, running.version, owner="a")
    assert [r.id for r in store.due_runs()] == [now_due.id, past.id]
    assert [r.id for r in store.due_runs(limit=1)] == [now_due.id]
    assert [r.id for r in store.due_runs(now="1999-01-01T00:00:00.000Z")] == [now_due.id]
    assert len(store.due_runs(now="3000-01-01T00:00:00.000Z")) == 3


def test_stale_runs(store: Store, session: Session) -> None:
    fresh, old, never = (store.create_run(session.id) for _ in range(3))
    for r in (fresh, old, never):
        store.claim_run(r.id, 0, owner="x")
    store.update_run(old.id, heartbeat_at=PAST)
    store.update_run(never.id, heartbeat_at=None)
    cutoff = "2026-01-01T00:00:00.000Z"
    assert {r.id for r in store.stale_runs(heartbeat_before=cutoff)} == {old.id, never.id}
    assert len(store.stale_runs(heartbeat_before=cutoff, limit=1)) == 1
    store.update_run(old.id, status="failed")
    assert [r.id for r in store.stale_runs(heartbeat_before=cutoff)] == [never.id]


def test_provider_response_id_lookup_and_uniqueness(store: Store, session: Session) -> None:
    run = store.create_run(session.id, provider_response_id="resp_1")
    assert store.get_run_by_response_id("resp_1") == run
    assert store.get_run_by_response_id("resp_2") is None
    other = store.create_run(session.id)
    with pytest.raises(Conflict):
        store.update_run(other.id, provider_response_id="resp_1")
    with pytest.raises(Conflict):
        store.create_run(session.id, provider_response_id="resp_1")
    assert store.get_run(other.id) == other


def test_find_replayable_run_by_request_hash(store: Store, session: Session) -> None:
    def run(status: str, *, notebook: str = "a.ipynb", error: Any = None, hash_: str = "h1") -> str:
        made = store.create_run(session.id, request_hash=hash_, notebook_path=notebook)
        return store.update_run(made.id, status=status, error=error).id

    assert store.find_replayable_run("h1", notebook_path="a.ipynb") is None
    older = run("succeeded")
    newest = run("succeeded")
    run("failed")
    run("succeeded", error={"code": "MAX_ITERATIONS_REACHED", "message": "stopped"})
    elsewhere = run("succeeded", notebook="b.ipynb")
    run("succeeded", hash_="h2")
    found = store.find_replayable_run("h1", notebook_path="a.ipynb")
    assert found is not None
    assert found.id == newest != older
    anywhere = store.find_replayable_run("h1", notebook_path=None)
    assert anywhere is not None
    assert anywhere.id == elsewhere
    assert store.find_replayable_run("h3", notebook_path=None) is None
