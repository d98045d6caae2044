"""Every backend: tool calls waiting for a person (``decide_tool_calls``), and a run waiting
for an approval holding its session's queue."""

from __future__ import annotations

import threading

from agi_jupyter.records import Run, Session
from agi_jupyter.store import Store
from tests.store.conftest import OpenStore

PAST = "2000-01-01T00:00:00.000Z"


def _park(store: Store, run: Run, *ids: str) -> Run:
    """The run's owner leaves calls waiting and parks the run (as endings.await_approval)."""
    fence = store.claim_run(run.id, run.version, owner="owner")
    assert fence is not None
    for tool_call_id in ids:
        store.create_tool_call(
            run.id, tool_call_id, "shell.run", {"command": "ls"}, status="waiting_approval",
            fence=fence,
        )  # fmt: skip
    return store.update_run(run.id, status="waiting_approval", owner=None, fence=fence)


def test_a_decision_is_recorded_once_and_the_last_one_queues_the_run(
    store: Store, run: Run
) -> None:
    parked = _park(store, run, "call_a", "call_b")
    assert store.claim_due_runs(owner="t", stale_before=PAST) == []

    (a,) = store.decide_tool_calls(run.id, {"decision": "approve"}, tool_call_id="call_a")
    assert (a.tool_call_id, a.approval) == ("call_a", {"decision": "approve"})
    assert store.get_run(run.id).status == "waiting_approval"  # call_b is undecided
    assert store.decide_tool_calls(run.id, {"decision": "deny"}, tool_call_id="call_a") == []

    (b,) = store.decide_tool_calls(run.id, {"decision": "deny", "message": "no"})
    assert b.approval == {"decision": "deny", "message": "no"}
    resumed = store.get_run(run.id)
    assert (resumed.status, resumed.owner) == ("queued", None)
    assert resumed.next_attempt_at is not None
    assert resumed.version > parked.version
    assert store.get_tool_call(a.id).status == "waiting_approval"  # the resuming owner runs it
    (claimed,) = store.claim_due_runs(owner="t", stale_before=PAST)
    assert (claimed.id, claimed.epoch) == (run.id, parked.epoch + 1)
    assert store.decide_tool_calls(run.id, {"decision": "approve"}) == []


def test_a_waiting_run_holds_the_runs_queued_after_it(store: Store, session: Session) -> None:
    first = store.create_run(session.id)
    later = store.create_run(session.id)
    _park(store, first, "call_1")
    assert store.claim_due_runs(owner="t", stale_before=PAST) == []
    store.decide_tool_calls(first.id, {"decision": "approve"})
    assert [r.id for r in store.claim_due_runs(owner="t", stale_before=PAST)] == [first.id]
    assert store.claim_due_runs(owner="t2", stale_before=PAST) == []  # first runs now
    assert [r.id for r in store.due_runs()] == [later.id]


def test_concurrent_decisions_queue_the_run_exactly_once(make_store: OpenStore, run: Run) -> None:
    ids = [f"call_{i}" for i in range(6)]
    _park(make_store(), run, *ids)
    stores = [make_store() for _ in ids]
    barrier = threading.Barrier(len(ids))
    got: list[int] = []

    def decide(i: int) -> None:
        barrier.wait(timeout=30)
        got.append(len(stores[i].decide_tool_calls(run.id, {"d": i}, tool_call_id=ids[i])))

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(len(ids))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == [1] * len(ids)
    assert make_store().get_run(run.id).status == "queued"
