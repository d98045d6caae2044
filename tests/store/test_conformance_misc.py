"""Every backend: webhook inbox, tasks, capabilities and statistics."""

from __future__ import annotations

import pytest

from agi_jupyter.errors import NotFound, UsageError
from agi_jupyter.records import Session, TextPart
from agi_jupyter.store import Store

# --- webhook events -----------------------------------------------------------------------------


def test_insert_webhook_event_is_insert_if_absent(store: Store) -> None:
    event, inserted = store.insert_webhook_event(
        provider="openai",
        event_id="evt_abc",
        type="response.completed",
        payload={"data": {"id": "resp_1"}},
        response_id="resp_1",
    )
    assert inserted
    assert event.id.startswith("whk_")
    assert (event.processed_at, event.processing_error) == (None, None)
    again, inserted_again = store.insert_webhook_event(
        provider="openai", event_id="evt_abc", type="response.completed", payload={"other": 1}
    )
    assert not inserted_again
    assert again == event  # the first delivery is kept as it was
    assert store.list_unprocessed_webhook_events() == [event]


def test_a_webhook_redelivery_is_known_by_its_delivery_id_too(store: Store) -> None:
    first, inserted = store.insert_webhook_event(
        provider="openai", event_id="evt_a", type="t", payload={}, delivery_id="msg_a"
    )
    assert inserted
    assert first.delivery_id == "msg_a"
    # The same delivery (webhook-id) with another payload id, then the same payload id again.
    for event_id, delivery_id in [("evt_b", "msg_a"), ("evt_a", "msg_b")]:
        again, inserted = store.insert_webhook_event(
            provider="openai", event_id=event_id, type="t", payload={}, delivery_id=delivery_id
        )
        assert (again, inserted) == (first, False)
    _other, inserted = store.insert_webhook_event(
        provider="openai", event_id="evt_c", type="t", payload={}, delivery_id="msg_c"
    )
    assert inserted
    assert [e.event_id for e in store.list_unprocessed_webhook_events()] == ["evt_a", "evt_c"]


def test_mark_webhook_event_processed_once(store: Store) -> None:
    events = [
        store.insert_webhook_event(provider="openai", event_id=f"e{i}", type="t", payload={})[0]
        for i in range(3)
    ]
    assert store.list_unprocessed_webhook_events(limit=2) == events[:2]
    assert store.mark_webhook_event_processed(events[0].id)
    assert not store.mark_webhook_event_processed(events[0].id)
    assert store.mark_webhook_event_processed(events[1].id, error="bad payload")
    assert store.list_unprocessed_webhook_events() == [events[2]]
    with pytest.raises(NotFound) as info:
        store.mark_webhook_event_processed("whk_nope")
    assert info.value.code == "WEBHOOK_EVENT_NOT_FOUND"


def test_processing_error_is_kept(store: Store) -> None:
    event, _ = store.insert_webhook_event(provider="p", event_id="e", type="t", payload={})
    store.mark_webhook_event_processed(event.id, error="boom")
    stored, inserted = store.insert_webhook_event(provider="p", event_id="e", type="t", payload={})
    assert not inserted
    assert stored.processing_error == "boom"
    assert stored.processed_at is not None


# --- tasks --------------------------------------------------------------------------------------


def test_task_lifecycle(store: Store) -> None:
    task = store.create_task("write report", details="by Friday", due_at="2026-12-01T00:00:00.000Z")
    assert task.id.startswith("tsk_")
    assert task.status == "pending"
    assert store.get_task(task.id) == task
    done = store.update_task(task.id, status="done", details=None)
    assert (done.status, done.details, done.title) == ("done", None, "write report")
    assert store.get_task(task.id) == done
    store.delete_task(task.id)
    assert store.list_tasks() == []


def test_list_and_due_tasks(store: Store) -> None:
    early = store.create_task("a", due_at="2026-01-01T00:00:00.000Z")
    late = store.create_task("b", due_at="2026-06-01T00:00:00.000Z")
    undated = store.create_task("c")
    finished = store.create_task("d", due_at="2025-01-01T00:00:00.000Z")
    store.update_task(finished.id, status="done")
    started = store.update_task(late.id, status="in_progress")
    assert [t.id for t in store.list_tasks()] == [early.id, late.id, undated.id, finished.id]
    assert store.list_tasks(status="in_progress") == [started]
    assert store.due_tasks(before="2026-03-01T00:00:00.000Z") == [early]
    assert store.due_tasks(before="2027-01-01T00:00:00.000Z") == [early, started]
    assert store.due_tasks(before="2026-01-01T00:00:00.000Z") == [early]


def test_task_errors(store: Store) -> None:
    task = store.create_task("t")
    for call in (
        lambda: store.get_task("tsk_nope"),
        lambda: store.update_task("tsk_nope", title="x"),
        lambda: store.delete_task("tsk_nope"),
    ):
        with pytest.raises(NotFound) as info:
            call()
        assert info.value.code == "TASK_NOT_FOUND"
    for changes in ({"status": "someday"}, {"priority": 1}, {"id": "tsk_x"}):
        with pytest.raises(UsageError):
            store.update_task(task.id, **changes)
    with pytest.raises(UsageError):
        store.list_tasks(status="someday")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="NOT NULL"):
        store.create_task(None)  # type: ignore[arg-type]


# --- capabilities -------------------------------------------------------------------------------


def test_capabilities_upsert_get_list_delete(store: Store) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    first = store.upsert_capability(
        "primes",
        description="find primes",
        file_path=".agi/tools/primes/tool.py",
        tool_schema=schema,
    )
    assert first.id.startswith("cap_")
    assert store.get_capability("primes") == first
    second = store.upsert_capability(
        "primes", description="faster", file_path="p.py", tool_schema={"type": "object"}
    )
    assert (second.id, second.created_at) == (first.id, first.created_at)
    assert (second.description, second.file_path, second.tool_schema) == (
        "faster",
        "p.py",
        {"type": "object"},
    )
    other = store.upsert_capability("alpha", description="", file_path="a.py", tool_schema={})
    assert store.list_capabilities() == [other, second]
    assert store.delete_capability("primes")
    assert not store.delete_capability("primes")
    assert store.get_capability("primes") is None


# --- stats --------------------------------------------------------------------------------------


def test_stats(store: Store, session: Session) -> None:
    empty = store.stats()
    assert empty["sessions"] == 1
    assert (empty["runs"], empty["runs_by_status"], empty["tool_calls_by_name"]) == (0, {}, {})
    store.add_message(session.id, "user", [TextPart(text="a")])
    store.add_message(session.id, "assistant", [])
    runs = [store.create_run(session.id) for _ in range(3)]
    store.update_run(runs[0].id, status="succeeded")
    store.update_run(runs[1].id, status="failed")
    # a run whose server sent no usage (runner.add_turn_usage) is counted apart
    unknown = {"input_tokens": None, "output_tokens": None, "unknown_turns": 1}
    store.update_run(runs[1].id, usage=unknown, cost_usd=None)  # ... and its cost unknown
    store.update_run(runs[0].id, usage={"input_tokens": 100, "output_tokens": 20})
    for i, name in enumerate(["fs.read", "fs.read", "shell.run"]):
        store.create_tool_call(runs[0].id, str(i), name, {})
    store.add_session_usage(session.id, input_tokens=100, output_tokens=20, cost_usd=0.5)
    store.add_session_usage(
        store.create_session().id, input_tokens=1, output_tokens=2, cost_usd=0.25
    )
    store.create_task("t")
    # inline completions: counted apart, never as sessions, runs or their tokens
    store.add_completion_usage(
        path="a.ipynb", model="openai:m", input_tokens=30, output_tokens=4, cost_usd=0.01
    )
    store.add_completion_usage(
        path="",
        model="ollama:m",
        input_tokens=None,
        output_tokens=None,
        cost_usd=None,
        cancelled=True,
    )
    assert store.stats() == {
        "sessions": 2,
        "messages": 2,
        "runs": 3,
        "runs_by_status": {"failed": 1, "queued": 1, "succeeded": 1},
        "tool_calls": 3,
        "tool_calls_by_name": {"fs.read": 2, "shell.run": 1},
        "artifacts": 0,
        "tasks": 1,
        "webhook_events": 0,
        "input_tokens": 101,
        "output_tokens": 22,
        "cached_tokens": 0,
        "total_tokens": 123,
        "cost_usd": 0.75,
        "unknown_usage_runs": 1,
        "unknown_cost_runs": 1,
        "completions": {
            "requests": 2,
            "cancelled": 1,
            "input_tokens": 30,
            "output_tokens": 4,
            "cost_usd": 0.01,
            "unpriced": 1,
        },
    }


def test_completion_usage_adds_up_per_notebook_and_model(store: Store) -> None:
    assert store.completion_totals()["requests"] == 0
    for path, model, cost in [
        ("a.ipynb", "openai:m", 0.5),
        ("a.ipynb", "openai:m", 0.25),
        ("a.ipynb", "fake:echo", None),
        ("b.ipynb", "openai:m", 1.0),
    ]:
        store.add_completion_usage(
            path=path, model=model, input_tokens=10, output_tokens=2, cost_usd=cost
        )
    assert store.completion_totals("a.ipynb") == {
        "requests": 3,
        "cancelled": 0,
        "input_tokens": 30,
        "output_tokens": 6,
        "cost_usd": 0.75,
        "unpriced": 1,
    }
    assert store.completion_totals("c.ipynb")["requests"] == 0
    assert store.completion_totals()["requests"] == 4


# --- notebook budgets set from a front door ------------------------------------------------------


def test_notebook_budgets_are_set_replaced_and_removed(store: Store) -> None:
    assert store.notebook_budgets() == {}
    store.set_notebook_budget("work/a.ipynb", {"max_usd": 2.0})
    store.set_notebook_budget("b.ipynb", {"max_tokens": 100})
    store.set_notebook_budget("work/a.ipynb", {"max_tokens": 50, "max_usd": 3.5})
    assert store.notebook_budgets() == {
        "b.ipynb": {"max_tokens": 100},
        "work/a.ipynb": {"max_tokens": 50, "max_usd": 3.5},
    }
    store.set_notebook_budget("b.ipynb", None)
    store.set_notebook_budget("never.ipynb", None)  # removing nothing is no error
    assert list(store.notebook_budgets()) == ["work/a.ipynb"]
