"""Every backend: ``claim_due_runs`` hands out the queue, each run to exactly one caller."""

from __future__ import annotations

import threading
from collections import Counter

from agi_jupyter.records import Run, Session
from agi_jupyter.store import Store
from tests.store.conftest import OpenStore

PAST, FUTURE = "2000-01-01T00:00:00.000Z", "2999-01-01T00:00:00.000Z"


def test_claims_the_oldest_due_runs(store: Store) -> None:
    sessions = [store.create_session() for _ in range(4)]
    runs = [store.create_run(s.id) for s in sessions]
    store.update_run(runs[1].id, next_attempt_at=FUTURE)
    store.update_run(runs[2].id, next_attempt_at=PAST)
    claimed = store.claim_due_runs(owner="a", stale_before=PAST, limit=2)
    assert [r.id for r in claimed] == [runs[0].id, runs[2].id]
    for got in claimed:
        assert (got.status, got.owner) == ("running", "a")
        assert got.heartbeat_at is not None
        assert got.started_at == got.heartbeat_at
        assert store.get_run(got.id) == got
    assert claimed[0].version == runs[0].version + 1
    assert [r.id for r in store.claim_due_runs(owner="b", stale_before=PAST)] == [runs[3].id]
    assert store.claim_due_runs(owner="b", stale_before=PAST) == []
    later = store.claim_due_runs(owner="c", stale_before=PAST, now="3000-01-01T00:00:00.000Z")
    assert [r.id for r in later] == [runs[1].id]


def test_one_run_per_session_and_none_of_a_busy_session(store: Store, session: Session) -> None:
    first, second = store.create_run(session.id), store.create_run(session.id)
    other = store.create_session()
    elsewhere = store.create_run(other.id)
    claimed = store.claim_due_runs(owner="a", stale_before=PAST)
    assert [r.id for r in claimed] == [first.id, elsewhere.id]
    # first is running: second waits
    assert store.claim_due_runs(owner="b", stale_before=PAST) == []
    store.update_run(first.id, status="succeeded")
    assert [r.id for r in store.claim_due_runs(owner="b", stale_before=PAST)] == [second.id]


def test_a_requeued_run_is_claimed_again_keeping_its_start(store: Store, run: Run) -> None:
    (claimed,) = store.claim_due_runs(owner="a", stale_before=PAST)
    store.update_run(run.id, status="queued", owner=None)
    (again,) = store.claim_due_runs(owner="b", stale_before=PAST)
    assert (again.owner, again.started_at) == ("b", claimed.started_at)
    assert again.version == claimed.version + 2


def test_claim_due_and_compare_and_set_claims_never_share_a_run(store: Store) -> None:
    queued = [store.create_run(store.create_session().id) for _ in range(20)]
    (taken,) = store.claim_due_runs(owner="due", stale_before=PAST, limit=1)
    assert not store.claim_run(taken.id, queued[0].version, owner="cas")
    assert store.claim_run(queued[1].id, queued[1].version, owner="cas")
    rest = store.claim_due_runs(owner="due", stale_before=PAST, limit=100)
    assert queued[1].id not in {r.id for r in rest}
    assert len(rest) == 18


def test_concurrent_claimers_take_every_run_exactly_once(make_store: OpenStore) -> None:
    setup = make_store()
    sessions = [setup.create_session() for _ in range(15)]
    runs = [setup.create_run(sessions[i % 15].id) for i in range(60)]
    claimers = [make_store() for _ in range(4)]
    barrier = threading.Barrier(len(claimers))
    taken: list[tuple[str, str]] = []
    errors: list[BaseException] = []

    def claim(i: int) -> None:
        barrier.wait(timeout=30)
        try:
            for _ in range(500):  # bounded: far more rounds than there are runs
                got = claimers[i].claim_due_runs(owner=f"w{i}", stale_before=PAST, limit=3)
                taken.extend((r.id, f"w{i}") for r in got)
                for r in got:  # done at once, so the session's next run becomes due
                    claimers[i].update_run(r.id, status="succeeded")
                if not got and not claimers[i].due_runs(limit=1):
                    return
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(claimers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    counts = Counter(run_id for run_id, _ in taken)
    assert set(counts) == {r.id for r in runs}
    assert set(counts.values()) == {1}
    for run_id, owner in taken:
        assert setup.get_run(run_id).owner == owner
