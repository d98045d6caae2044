"""Every backend: snapshots (content-addressed blobs), changes of runs, and the notebook reply
mailbox (the expiry of untaken replies is in the backend-specific tests: it backdates rows)."""

from __future__ import annotations

import hashlib
import threading

import pytest

from agi_jupyter.errors import NotFound, RunNotFound, UsageError
from agi_jupyter.store import Store
from tests.store.conftest import OpenStore, count


def test_a_blob_is_stored_once_under_its_sha256(store: Store) -> None:
    data = b'{"cells": []}\n'
    sha = store.put_blob(data)
    assert sha == hashlib.sha256(data).hexdigest()
    assert store.put_blob(data) == sha
    assert store.get_blob(sha) == data
    assert count(store, "SELECT COUNT(*) FROM blobs") == 1
    assert count(store, "SELECT SUM(size) FROM blobs") == len(data)
    binary = bytes(range(256)) * 3
    assert store.get_blob(store.put_blob(binary)) == binary
    with pytest.raises(NotFound) as info:
        store.get_blob("0" * 64)
    assert info.value.code == "BLOB_NOT_FOUND"


def test_changes_are_listed_in_order_per_run_and_path(store: Store) -> None:
    session = store.create_session()
    run = store.create_run(session.id)
    other = store.create_run(session.id)
    a, b, c = (store.put_blob(x) for x in (b"a", b"b", b"c"))
    first = store.add_change(
        run_id=run.id, kind="notebook", path="nb.ipynb", before_sha=a, after_sha=b,
        tool_call_id="call_1", turn=1,
    )  # fmt: skip
    store.add_change(run_id=other.id, kind="file", path="x.py", before_sha=None, after_sha=c)
    store.add_change(run_id=run.id, kind="notebook", path="nb.ipynb", before_sha=b, after_sha=c)
    changes = store.list_changes(run_id=run.id)
    assert [(ch.before_sha, ch.after_sha) for ch in changes] == [(a, b), (b, c)]
    assert changes[0] == first
    assert (first.turn, first.tool_call_id, first.kind) == (1, "call_1", "notebook")
    assert [ch.path for ch in store.list_changes(path="x.py")] == ["x.py"]
    assert len(store.list_changes()) == 3


def test_a_change_needs_its_run_and_its_blobs(store: Store) -> None:
    blob = store.put_blob(b"x")
    with pytest.raises(RunNotFound):
        store.add_change(run_id="run_nope", kind="file", path="p", before_sha=None, after_sha=blob)
    with pytest.raises(NotFound) as info:
        store.add_change(run_id=None, kind="file", path="p", before_sha="f" * 64, after_sha=blob)
    assert info.value.code == "BLOB_NOT_FOUND"
    with pytest.raises(UsageError):
        store.add_change(run_id=None, kind="disk", path="p", before_sha=None, after_sha=blob)  # type: ignore[arg-type]


def test_deleting_a_session_drops_its_changes_and_unshared_snapshots(store: Store) -> None:
    doomed, kept = store.create_session(), store.create_session()
    shared, only_doomed = store.put_blob(b"shared"), store.put_blob(b"doomed")
    for session, blob in ((doomed, only_doomed), (kept, shared)):
        run = store.create_run(session.id)
        store.add_change(run_id=run.id, kind="file", path="f", before_sha=shared, after_sha=blob)
    store.delete_session(doomed.id)
    assert len(store.list_changes()) == 1
    assert store.get_blob(shared) == b"shared"
    with pytest.raises(NotFound):
        store.get_blob(only_doomed)


def test_notebook_replies_are_taken_once(store: Store) -> None:
    assert store.take_notebook_reply("req_1") is None
    store.put_notebook_reply("req_1", {"ok": True, "cells": 3})
    store.put_notebook_reply("req_1", {"ok": True, "cells": 4})
    assert store.take_notebook_reply("req_1") == {"ok": True, "cells": 4}
    assert store.take_notebook_reply("req_1") is None
    with pytest.raises(UsageError):
        store.put_notebook_reply("", {})


def _take_at_once(stores: list[Store], request_id: str) -> list[object]:
    taken: list[object] = []
    start = threading.Barrier(len(stores))

    def take(one: Store) -> None:
        start.wait()
        taken.append(one.take_notebook_reply(request_id))

    threads = [threading.Thread(target=take, args=(one,)) for one in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return taken


def test_a_reply_is_taken_by_one_of_several_stores(make_store: OpenStore) -> None:
    """Kernels may poll through several servers (replicas) at once: one of them gets it."""
    stores = [make_store() for _ in range(4)]
    for round in range(5):
        stores[0].put_notebook_reply(f"req_{round}", {"round": round})
        taken = _take_at_once(stores, f"req_{round}")
        assert sorted(taken, key=lambda x: x is None) == [{"round": round}, None, None, None]


def test_changes_written_by_one_store_are_undone_from_another(make_store: OpenStore) -> None:
    writer, reader = make_store(), make_store()
    run = writer.create_run(writer.create_session().id)
    before, after = writer.put_blob(b"before"), writer.put_blob(b"after")
    writer.add_change(run_id=run.id, kind="file", path="f", before_sha=before, after_sha=after)
    [change] = reader.list_changes(run_id=run.id)
    assert change.before_sha is not None
    assert reader.get_blob(change.before_sha) == b"before"
