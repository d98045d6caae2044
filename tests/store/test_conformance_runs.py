"""Every backend: runs (create, pages, updates with versions, compare-and-set claims,
heartbeats, queues)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agi_jupyter.errors import Conflict, RunLost, RunNotFound, SessionNotFound, UsageError
from agi_jupyter.records import Run, RunFence, Session, TextPart
from agi_jupyter.run_state import LoopProgress, LoopState, UsageTotals
from agi_jupyter.store import Store
from tests.store.conftest import OpenStore

PAST, FUTURE = "2000-01-01T00:00:00.000Z", "2999-01-01T00:00:00.000Z"
ONE_TURN = LoopState(max_iterations=8, progress=LoopProgress(1, UsageTotals(10, 2), 0.01, 10))


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
        loop_state=LoopState(input=(TextPart(text="hi"),), max_iterations=3),
        usage={"input_tokens": 3},
        cell_id="c1",
        execution_count=7,
    )
    assert store.get_run(full.id) == full


@pytest.mark.parametrize(
    "fields",
    [
        {"colour": 1},
        {"version": 3},
        {"id": "run_x"},
        {"status": "sleeping"},
        {"type": "x"},
        {"loop_state": {"iteration": 1}},  # the typed record, not its JSON
    ],
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
        loop_state=ONE_TURN,
        usage={"input_tokens": 5},
        cost_usd=0.5,
        next_attempt_at=None,
    )
    assert updated.version == run.version + 1
    assert updated.updated_at >= run.updated_at
    assert (updated.error, updated.loop_state, updated.usage) == (
        {"code": "X", "message": "m"},
        ONE_TURN,
        {"input_tokens": 5},
    )
    assert store.get_run(run.id) == updated
    assert store.update_run(run.id).version == run.version + 2


@pytest.mark.parametrize(
    "changes",
    [
        {"nope": 1},
        {"version": 9},
        {"session_id": "ses_x"},
        {"status": "paused"},
        {"loop_state": {"iteration": 1}},
    ],
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
    fence = store.claim_run(run.id, run.version, owner="a")
    assert fence is not None
    store.update_run(run.id, heartbeat_at=PAST)
    before = store.get_run(run.id)
    assert store.heartbeat(fence)
    after = store.get_run(run.id)
    assert after.heartbeat_at is not None
    assert after.heartbeat_at > PAST
    assert after.version == before.version + 1
    with pytest.raises(RunLost):
        store.heartbeat(RunFence(run.id, "b", fence.epoch))
    with pytest.raises(RunLost):
        store.heartbeat(RunFence("run_nope", "a", fence.epoch))
    store.update_run(run.id, status="cancelled")  # a cancel asked for by someone else
    assert not store.heartbeat(fence)


def test_epoch_counts_hand_overs(store: Store, run: Run) -> None:
    first = store.claim_run(run.id, run.version, owner="a")
    assert first == RunFence(run.id, "a", run.epoch + 1)
    assert store.get_run(run.id).fence == first
    store.update_run(run.id, loop_state=ONE_TURN)  # no hand-over: same epoch
    assert store.get_run(run.id).epoch == first.epoch
    taken = store.get_run(run.id)
    assert store.update_run_if(taken.id, taken.version, status="queued", owner=None)
    assert store.get_run(run.id).epoch == first.epoch + 1
    second = store.claim_run(run.id, store.get_run(run.id).version, owner="a")
    assert second is not None
    assert second.epoch == first.epoch + 2  # the same owner name, a new fence


def test_fenced_writes_fail_once_the_run_changed_hands(
    store: Store, session: Session, run: Run
) -> None:
    fence = store.claim_run(run.id, run.version, owner="a")
    assert fence is not None
    message = store.add_message(session.id, "assistant", [TextPart(text="ok")], fence=fence)
    call = store.create_tool_call(run.id, "c1", "fs.read", {}, fence=fence)
    store.update_tool_call(call.id, status="completed", fence=fence)
    store.update_message(message.id, status="error", fence=fence)
    store.append_run_events(run.id, [("iteration", {})], seqs=[1], fence=fence)
    store.add_session_usage(session.id, input_tokens=1, output_tokens=1, cost_usd=0, fence=fence)
    store.update_run(run.id, loop_state=ONE_TURN, fence=fence)
    # a tick takes the run over (the owner stalled)
    taken = store.get_run(run.id)
    assert store.update_run_if(run.id, taken.version, status="queued", owner=None)
    assert store.claim_run(run.id, taken.version + 1, owner="b") is not None
    before = (store.get_session(session.id), store.list_messages(session.id))
    writes = [
        lambda: store.add_message(session.id, "assistant", [TextPart(text="late")], fence=fence),
        lambda: store.update_message(message.id, status="complete", fence=fence),
        lambda: store.create_tool_call(run.id, "c2", "fs.read", {}, fence=fence),
        lambda: store.update_tool_call(call.id, status="failed", fence=fence),
        lambda: store.append_run_event(run.id, "run.final", {}, seq=9, fence=fence),
        lambda: store.add_session_usage(
            session.id, input_tokens=5, output_tokens=5, cost_usd=1, fence=fence
        ),
        lambda: store.update_run(run.id, status="succeeded", fence=fence),
        lambda: store.heartbeat(fence),
    ]
    for write in writes:
        with pytest.raises(RunLost):
            write()
    assert (store.get_session(session.id), store.list_messages(session.id)) == before
    assert [c.status for c in store.list_tool_calls(run_id=run.id)] == ["completed"]
    assert [e.seq for e in store.list_run_events(run.id)] == [1]
    assert store.get_run(run.id).status == "running"


def test_claim_due_runs_takes_each_sessions_head_once(
    store: Store, make_store: OpenStore, session: Session
) -> None:
    other = store.create_session()
    busy = store.create_session()
    a1, a2 = store.create_run(session.id), store.create_run(session.id)
    b1 = store.create_run(other.id, next_attempt_at=FUTURE)
    store.create_run(other.id)  # behind b1, which is not due yet: waits
    running, waiting = store.create_run(busy.id), store.create_run(busy.id)
    assert store.claim_run(running.id, running.version, owner="x")
    claimed = store.claim_due_runs(owner="t1", stale_before=PAST, limit=10)
    assert [r.id for r in claimed] == [a1.id]
    assert {(r.status, r.owner, r.epoch) for r in claimed} == {("running", "t1", 1)}
    assert store.claim_due_runs(owner="t2", stale_before=PAST) == []  # a1 runs: a2 waits
    store.update_run(a1.id, status="succeeded", fence=claimed[0].fence)
    assert [r.id for r in make_store().claim_due_runs(owner="t2", stale_before=PAST)] == [a2.id]
    # the busy session's owner went silent: its next run is free to go
    assert [r.id for r in store.claim_due_runs(owner="t3", stale_before=FUTURE)] == [waiting.id]
    assert store.claim_due_runs(owner="t4", stale_before=PAST, exclude=[b1.id]) == []
    assert [
        r.id
        for r in store.claim_due_runs(owner="t4", stale_before=PAST, now=FUTURE, exclude=[a2.id])
    ] == [b1.id]


def test_concurrent_claims_of_due_runs_are_disjoint(
    make_store: OpenStore, session: Session
) -> None:
    setup = make_store()
    sessions = [setup.create_session() for _ in range(30)]
    for s in sessions:
        setup.create_run(s.id)
    stores = [make_store() for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    got: list[list[str]] = [[] for _ in stores]

    def claim(i: int) -> None:
        barrier.wait(timeout=30)
        while batch := stores[i].claim_due_runs(owner=f"w{i}", stale_before=PAST, limit=3):
            got[i].extend(r.id for r in batch)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    claimed = [run_id for ids in got for run_id in ids]
    assert len(claimed) == len(set(claimed)) == 30


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
