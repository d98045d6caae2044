"""Every backend: run events (seq per run, session tailing and its cursors) and tool calls."""

from __future__ import annotations

import threading

import pytest

from agi_jupyter.errors import Conflict, NotFound, RunNotFound, UsageError
from agi_jupyter.records import Run, RunEvent, Session
from agi_jupyter.store import Store
from tests.store.conftest import OpenStore


def test_append_run_event_numbers_from_one(store: Store, run: Run) -> None:
    first = store.append_run_event(run.id, "run.meta", {"model": "m"})
    second = store.append_run_event(run.id, "run.status", {"status": "running"})
    assert (first.seq, second.seq) == (1, 2)
    assert first.id.startswith("evt_")
    assert first.created_at.endswith("Z")
    assert store.list_run_events(run.id) == [first, second]


def test_seq_is_per_run(store: Store, session: Session) -> None:
    a, b = store.create_run(session.id), store.create_run(session.id)
    store.append_run_event(a.id, "x", {})
    store.append_run_event(a.id, "x", {})
    assert store.append_run_event(b.id, "x", {}).seq == 1
    assert store.append_run_event(a.id, "x", {}).seq == 3


def test_append_run_events_in_one_batch(store: Store, run: Run) -> None:
    store.append_run_event(run.id, "run.meta", {})
    batch = store.append_run_events(run.id, [("a", {"i": 1}), ("b", {"i": 2}), ("c", {})])
    assert [(e.seq, e.type, e.payload) for e in batch] == [
        (2, "a", {"i": 1}),
        (3, "b", {"i": 2}),
        (4, "c", {}),
    ]
    assert store.append_run_events(run.id, []) == []
    assert store.list_run_events(run.id)[1:] == batch


def test_list_run_events_after_seq_and_limit(store: Store, run: Run) -> None:
    store.append_run_events(run.id, [("e", {"i": i}) for i in range(10)])
    assert [e.seq for e in store.list_run_events(run.id, after_seq=7)] == [8, 9, 10]
    assert [e.seq for e in store.list_run_events(run.id, after_seq=2, limit=2)] == [3, 4]
    assert store.list_run_events("run_nope") == []


def test_append_to_unknown_run_or_bad_payload(store: Store, run: Run) -> None:
    with pytest.raises(RunNotFound):
        store.append_run_event("run_nope", "x", {})
    with pytest.raises(UsageError, match="JSON"):
        store.append_run_event(run.id, "x", {"bad": object()})
    assert store.list_run_events(run.id) == []


def test_list_session_run_events_tails_all_runs_of_a_session(
    store: Store, session: Session
) -> None:
    other = store.create_session()
    a, b = store.create_run(session.id), store.create_run(session.id)
    elsewhere = store.create_run(other.id)
    store.append_run_event(a.id, "a1", {})
    store.append_run_event(elsewhere.id, "x", {})
    store.append_run_event(b.id, "b1", {})
    store.append_run_event(a.id, "a2", {})
    tail = store.list_session_run_events(session.id)
    assert [(e.run_id, e.type) for _, e in tail] == [(a.id, "a1"), (b.id, "b1"), (a.id, "a2")]
    cursors = [c for c, _ in tail]
    assert all(isinstance(c, str) for c in cursors)
    assert len(set(cursors)) == 3
    assert store.session_events_end(session.id) == cursors[-1]
    assert store.list_session_run_events(session.id, after_cursor=cursors[-1]) == []
    store.append_run_events(b.id, [("b2", {}), ("b3", {})])
    more = store.list_session_run_events(session.id, after_cursor=cursors[-1])
    assert [e.type for _, e in more] == ["b2", "b3"]
    assert [e.type for _, e in store.list_session_run_events(session.id, limit=2)] == ["a1", "b1"]
    assert store.list_session_run_events(session.id, after_cursor=cursors[0], limit=1) == tail[1:2]


def test_tool_call_lifecycle(store: Store, run: Run) -> None:
    call = store.create_tool_call(run.id, "call_1", "fs.read", {"path": "a.txt"})
    assert call.id.startswith("tc_")
    assert (call.status, call.is_error, call.result, call.message_id) == (
        "pending",
        False,
        None,
        None,
    )
    assert store.get_tool_call(call.id) == call
    done = store.update_tool_call(
        call.id,
        status="failed",
        result={"error": "nope", "lines": [1, 2]},
        is_error=True,
        started_at="2026-01-01T00:00:00.000Z",
        finished_at="2026-01-01T00:00:01.000Z",
    )
    assert (done.status, done.is_error, done.result) == (
        "failed",
        True,
        {"error": "nope", "lines": [1, 2]},
    )
    assert store.get_tool_call(call.id) == done
    assert store.update_tool_call(call.id, result="plain text").result == "plain text"


def test_tool_call_errors(store: Store, run: Run) -> None:
    call = store.create_tool_call(run.id, "call_1", "fs.read", {})
    with pytest.raises(Conflict):
        store.create_tool_call(run.id, "call_1", "fs.read", {})
    with pytest.raises(RunNotFound):
        store.create_tool_call("run_nope", "call_2", "fs.read", {})
    with pytest.raises(UsageError):
        store.create_tool_call(run.id, "call_3", "x", {}, status="exploded")  # type: ignore[arg-type]
    for changes in ({"status": "exploded"}, {"run_id": "run_x"}, {"nope": 1}, {"id": "tc_x"}):
        with pytest.raises(UsageError):
            store.update_tool_call(call.id, **changes)
    with pytest.raises(NotFound) as info:
        store.update_tool_call("tc_nope", status="running")
    assert info.value.code == "TOOL_CALL_NOT_FOUND"
    with pytest.raises(NotFound):
        store.get_tool_call("tc_nope")


def test_list_tool_calls_by_run_and_session(store: Store, session: Session) -> None:
    other = store.create_session()
    a, b, c = (store.create_run(s.id) for s in (session, session, other))
    ca = store.create_tool_call(a.id, "1", "fs.read", {})
    cb = store.create_tool_call(b.id, "1", "shell.run", {}, message_id="msg_1", status="running")
    cc = store.create_tool_call(c.id, "1", "fs.read", {})
    assert store.list_tool_calls(run_id=a.id) == [ca]
    assert store.list_tool_calls(session_id=session.id) == [ca, cb]
    assert store.list_tool_calls(session_id=session.id, run_id=b.id) == [cb]
    assert store.list_tool_calls(session_id=other.id, run_id=b.id) == []
    assert store.list_tool_calls() == [ca, cb, cc]


def test_append_with_the_callers_seq(store: Store, run: Run) -> None:
    assert store.append_run_event(run.id, "run.meta", {}, seq=1).seq == 1
    assert store.append_run_event(run.id, "output.text.done", {}, seq=5).seq == 5  # 2-4: deltas
    assert store.append_run_event(run.id, "run.final", {}).seq == 6
    for stale in (6, 3):
        with pytest.raises(Conflict):
            store.append_run_event(run.id, "x", {}, seq=stale)
    assert [e.seq for e in store.list_run_events(run.id)] == [1, 5, 6]
    assert [e.seq for e in store.list_run_events(run.id, after_seq=1)] == [5, 6]


def test_append_run_events_with_caller_numbered_seqs(store: Store, run: Run) -> None:
    batch = store.append_run_events(run.id, [("a", {}), ("b", {})], seqs=[3, 7])
    assert [e.seq for e in batch] == [3, 7]
    with pytest.raises(Conflict):
        store.append_run_events(run.id, [("c", {})], seqs=[7])
    with pytest.raises(Conflict):
        store.append_run_events(run.id, [("c", {}), ("d", {})], seqs=[9, 8])
    with pytest.raises(UsageError):
        store.append_run_events(run.id, [("c", {})], seqs=[9, 10])
    assert [e.seq for e in store.list_run_events(run.id)] == [3, 7]


def test_session_events_end_is_where_a_tail_from_now_starts(store: Store, session: Session) -> None:
    empty_end = store.session_events_end(session.id)
    assert store.list_session_run_events(session.id, after_cursor=empty_end) == []
    run = store.create_run(session.id)
    store.append_run_events(run.id, [("a", {}), ("b", {})])
    end = store.session_events_end(session.id)
    assert [
        e.type for _, e in store.list_session_run_events(session.id, after_cursor=empty_end)
    ] == [
        "a",
        "b",
    ]
    assert store.list_session_run_events(session.id, after_cursor=end) == []
    store.append_run_event(run.id, "c", {})
    assert [e.type for _, e in store.list_session_run_events(session.id, after_cursor=end)] == ["c"]
    assert store.session_events_end("ses_nope")  # a cursor, even for an unknown session


@pytest.mark.parametrize("cursor", ["", "x", "-1", "p", "1.5", "p-3", "😀"])
def test_malformed_session_cursors_are_refused(store: Store, session: Session, cursor: str) -> None:
    with pytest.raises(UsageError, match="cursor"):
        store.list_session_run_events(session.id, after_cursor=cursor)


def test_cursors_of_one_backend_are_refused_clearly_by_the_other(
    store: Store, run: Run, backend: str
) -> None:
    """SQLite keeps the numbers it always gave (old cursors keep working); PostgreSQL's are
    not numbers, and refuses a number as another backend's cursor."""
    store.append_run_events(run.id, [("a", {}), ("b", {})])
    (first, _), _ = store.list_session_run_events(run.session_id)
    if backend == "sqlite":
        assert first.isdigit()
        with pytest.raises(UsageError, match="numbers"):
            store.list_session_run_events(run.session_id, after_cursor=f"p{first}")
    else:
        assert not first.isdigit()
        with pytest.raises(UsageError, match="SQLite"):
            store.list_session_run_events(run.session_id, after_cursor="12")
    assert [
        e.type for _, e in store.list_session_run_events(run.session_id, after_cursor=first)
    ] == ["b"]


def test_a_tailer_never_misses_an_event_of_concurrent_writers(
    make_store: OpenStore, session: Session
) -> None:
    """Four writers append to four runs of one session while a reader tails the session by
    cursor: it sees every event exactly once, each run's in seq order. (A cursor handed out
    before commit, like a sequence, would let a tailer skip an event that commits late.)"""
    writer_store, reader = make_store(), make_store()
    runs = [writer_store.create_run(session.id) for _ in range(4)]
    done = threading.Event()
    errors: list[BaseException] = []

    def write(run_id: str) -> None:
        try:
            for i in range(40):
                writer_store.append_run_event(run_id, "tick", {"i": i})
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(r.id,)) for r in runs]
    for t in threads:
        t.start()
    seen: list[RunEvent] = []
    cursor: str | None = None
    for _ in range(100_000):  # bounded; ends once the writers are done and all is read
        page = reader.list_session_run_events(session.id, after_cursor=cursor, limit=7)
        if page:
            cursor = page[-1][0]
            seen.extend(e for _, e in page)
        elif done.is_set():
            break
        elif not any(t.is_alive() for t in threads):
            done.set()  # one more pass after the last write
    for t in threads:
        t.join()
    assert errors == []
    assert len(seen) == 160
    assert len({e.id for e in seen}) == 160
    for r in runs:
        assert [e.seq for e in seen if e.run_id == r.id] == list(range(1, 41))
