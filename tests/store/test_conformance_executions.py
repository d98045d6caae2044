"""Every backend: the ledger of kernel executions (started, ended, listed per notebook in the
order they started)."""

from __future__ import annotations

import pytest

from agi_jupyter.errors import NotFound
from agi_jupyter.store import Store


def test_executions_are_listed_per_notebook_in_the_order_they_started(store: Store) -> None:
    session = store.create_session()
    run = store.create_run(session.id)
    user = store.start_execution("nb.ipynb", origin="user", cell_id="a", source_hash="h1")
    agent = store.start_execution(
        "nb.ipynb", origin="agent", cell_id="b", source_hash="h2", run_id=run.id,
        tool_call_id="call_1",
    )  # fmt: skip
    store.start_execution("other.ipynb", origin="user", cell_id="z")
    assert agent.status == "running"
    assert agent.ended_at is None
    ended = store.end_execution(
        agent.id, status="ok", execution_count=2, summary="stdout: hi\x00there"
    )
    assert (ended.status, ended.execution_count, ended.run_id) == ("ok", 2, run.id)
    assert ended.ended_at is not None
    assert ended.summary is not None
    assert ended.summary.startswith("stdout: hi")
    store.end_execution(user.id, status="error", execution_count=1, summary="error: boom")
    listed = store.list_executions("nb.ipynb")
    assert [(e.cell_id, e.origin, e.status) for e in listed] == [
        ("a", "user", "error"),
        ("b", "agent", "ok"),
    ]
    assert listed[1].tool_call_id == "call_1"
    assert [e.cell_id for e in store.list_executions("nb.ipynb", limit=1)] == ["b"]
    assert store.list_executions("none.ipynb") == []


def test_ending_an_unknown_execution_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound) as info:
        store.end_execution("exe_nope", status="ok")
    assert info.value.code == "EXECUTION_NOT_FOUND"
