"""Every backend: the protocol, empty reads, several stores on one project, closing, threads."""

from __future__ import annotations

import threading

import pytest

from agi_jupyter import store as store_package
from agi_jupyter.errors import (
    ArtifactNotFound,
    NotFound,
    RunNotFound,
    SessionNotFound,
    UsageError,
)
from agi_jupyter.store import MIGRATIONS, Store, migrate
from tests.store.conftest import OpenStore


def test_package_exports() -> None:
    assert sorted(store_package.__all__) == sorted(
        [
            "MIGRATIONS",
            "ArtifactWriter",
            "SqliteStore",
            "Store",
            "create_store",
            "migrate",
            "open_store",
            "store_exists",
        ]
    )
    assert MIGRATIONS
    assert callable(migrate)


def test_store_satisfies_the_protocol(store: Store, backend: str) -> None:
    assert isinstance(store, Store)
    assert store.dialect == {"sqlite": "sqlite", "postgres": "postgresql"}[backend]
    assert store.location


def test_reads_on_a_fresh_project_find_nothing(store: Store) -> None:
    assert store.list_sessions().items == []
    assert store.list_sessions().next_cursor is None
    assert store.list_runs().items == []
    assert store.list_messages("ses_x") == []
    assert store.list_run_events("run_x") == []
    assert store.list_session_run_events("ses_x") == []
    assert store.list_tool_calls() == []
    assert store.list_artifacts() == []
    assert store.list_tasks() == []
    assert store.due_tasks(before="2999") == []
    assert store.list_capabilities() == []
    assert store.get_capability("x") is None
    assert store.list_unprocessed_webhook_events() == []
    assert store.due_runs() == []
    assert store.claim_due_runs(owner="me", stale_before="2000-01-01T00:00:00.000Z") == []
    assert store.stale_runs(heartbeat_before="2999") == []
    assert store.get_run_by_response_id("resp") is None
    assert store.stats()["sessions"] == 0
    for call, error in [
        (lambda: store.get_session("ses_x"), SessionNotFound),
        (lambda: store.get_run("run_x"), RunNotFound),
        (lambda: store.get_artifact("art_x"), ArtifactNotFound),
        (lambda: store.read_artifact("art_x"), ArtifactNotFound),
        (lambda: store.get_message("msg_x"), NotFound),
        (lambda: store.get_tool_call("tc_x"), NotFound),
        (lambda: store.get_task("tsk_x"), NotFound),
        (lambda: store.list_messages("ses_x", after_id="msg_x"), NotFound),
    ]:
        with pytest.raises(error):
            call()


def test_a_second_store_sees_what_the_first_writes(make_store: OpenStore) -> None:
    reader, writer = make_store(), make_store()
    assert reader.list_sessions().items == []
    created = writer.create_session(title="later")
    assert [s.id for s in reader.list_sessions().items] == [created.id]


def test_close_and_context_manager(make_store: OpenStore) -> None:
    with make_store() as store:
        store.create_session()
    with pytest.raises(UsageError, match="closed"):
        store.list_sessions()
    with pytest.raises(UsageError, match="closed"):
        store.create_session()
    store.close()  # twice is fine
    never_used = make_store()
    never_used.close()
    assert make_store().list_sessions().items != [], "closing one store keeps the others open"


def test_negative_artifact_threshold_is_refused(make_store: OpenStore) -> None:
    with pytest.raises(UsageError):
        make_store(artifact_threshold=-1)


def test_threads_share_one_store(store: Store) -> None:
    session = store.create_session()
    run = store.create_run(session.id)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(50):
                store.append_run_event(run.id, "tick", {"thread": n, "i": i})
                store.add_message(session.id, "user", [])
                store.list_messages(session.id, limit=5)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [e.seq for e in store.list_run_events(run.id)] == list(range(1, 201))
    assert store.get_session(session.id).message_count == 200
