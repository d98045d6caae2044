"""Every backend: sessions (create, get, cursor pages, update, usage, cascading delete)."""

from __future__ import annotations

from typing import Any

import pytest

from agi_jupyter.errors import SessionNotFound, UsageError
from agi_jupyter.records import Session, TextPart
from agi_jupyter.store import SqliteStore, Store
from tests.store.conftest import count


def test_create_session_defaults(store: Store) -> None:
    s = store.create_session()
    assert s.id.startswith("ses_")
    assert (s.agent, s.sdk, s.queue_mode) == ("general", "native", "queue")
    assert (s.tool_config, s.metadata, s.message_count, s.cost_usd) == ({}, {}, 0, 0.0)
    assert s.budget is None
    assert s.created_at == s.updated_at
    assert s.created_at.endswith("Z")
    assert store.get_session(s.id) == s


def test_create_session_with_everything_round_trips(store: Store) -> None:
    s = store.create_session(
        title="T",
        agent="build",
        sdk="claude",
        provider="openai",
        model="gpt-5-mini",
        system_prompt="be brief",
        thinking_level="high",
        queue_mode="interrupt",
        tool_config={"allow": ["fs.read"], "nested": {"a": [1, 2]}},
        metadata={"unicode": "ünï ✓"},
        notebook_path="nb/analysis.ipynb",
        budget={"max_tokens": 1000, "max_usd": 0.25},
    )
    assert store.get_session(s.id) == s
    assert s.budget == {"max_tokens": 1000, "max_usd": 0.25}
    assert s.tool_config["nested"] == {"a": [1, 2]}


def test_invalid_queue_mode_is_a_usage_error(store: Store) -> None:
    with pytest.raises(UsageError, match="queue_mode"):
        store.create_session(queue_mode="later")  # type: ignore[arg-type]
    assert store.list_sessions().items == []


def test_get_unknown_session(store: Store, session: Session) -> None:
    with pytest.raises(SessionNotFound) as info:
        store.get_session("ses_nope")
    assert info.value.code == "SESSION_NOT_FOUND"


def collect(store: Store, size: int, **kwargs: Any) -> list[str]:
    ids: list[str] = []
    page = store.list_sessions(limit=size, **kwargs)
    for _ in range(100):  # bounded
        ids.extend(s.id for s in page.items)
        if page.next_cursor is None:
            return ids
        page = store.list_sessions(limit=size, cursor=page.next_cursor, **kwargs)
    raise AssertionError("too many pages")


def test_pages_cover_every_session_once_newest_first(store: Store) -> None:
    created = [store.create_session(title=str(i)) for i in range(23)]
    ids = collect(store, 5)
    assert sorted(ids) == sorted(s.id for s in created)
    assert len(ids) == len(set(ids))
    assert ids == [s.id for s in reversed(created)]
    assert collect(store, 100) == ids
    assert collect(store, 1) == ids


def test_pages_are_stable_when_sessions_are_added_between_pages(store: Store) -> None:
    original = {store.create_session().id for _ in range(12)}
    seen: list[str] = []
    page = store.list_sessions(limit=4)
    for _ in range(10):
        seen.extend(s.id for s in page.items)
        store.create_session(title="inserted meanwhile")
        if page.next_cursor is None:
            break
        page = store.list_sessions(limit=4, cursor=page.next_cursor)
    assert len(seen) == len(set(seen))
    assert original <= set(seen)
    assert len(seen) == 12


def test_list_sessions_of_a_notebook(store: Store) -> None:
    a = [store.create_session(notebook_path="a.ipynb") for _ in range(3)]
    store.create_session(notebook_path="b.ipynb")
    store.create_session()
    ids = collect(store, 2, notebook_path="a.ipynb")
    assert ids == [s.id for s in reversed(a)]


@pytest.mark.parametrize("cursor", ["", "not-base64!", "W10", "WzEsMl0"])
def test_bad_cursor_is_a_usage_error(store: Store, session: Session, cursor: str) -> None:
    with pytest.raises(UsageError, match="cursor"):
        store.list_sessions(cursor=cursor)


@pytest.mark.parametrize("limit", [0, -3])
def test_bad_limit_is_a_usage_error(store: Store, limit: int) -> None:
    with pytest.raises(UsageError, match="limit"):
        store.list_sessions(limit=limit)


def test_a_session_budget_can_be_changed_and_removed(store: Store, session: Session) -> None:
    assert store.update_session(session.id, budget={"max_tokens": 5}).budget == {"max_tokens": 5}
    assert store.get_session(session.id).budget == {"max_tokens": 5}
    assert store.update_session(session.id, budget=None).budget is None
    assert store.get_session(session.id).budget is None


def test_update_session(store: Store, session: Session) -> None:
    updated = store.update_session(
        session.id, title="new", model="m", tool_config={"x": 1}, queue_mode="interrupt"
    )
    assert (updated.title, updated.model, updated.tool_config) == ("new", "m", {"x": 1})
    assert updated.queue_mode == "interrupt"
    assert updated.updated_at >= session.updated_at
    assert updated.created_at == session.created_at
    assert store.get_session(session.id) == updated


@pytest.mark.parametrize(
    "changes",
    [{"colour": "red"}, {"id": "ses_other"}, {"message_count": 9}, {"created_at": "x"}],
)
def test_update_session_rejects_unknown_or_managed_fields(
    store: Store, session: Session, changes: dict[str, Any]
) -> None:
    with pytest.raises(UsageError):
        store.update_session(session.id, **changes)
    assert store.get_session(session.id) == session


def test_update_unknown_session(store: Store, session: Session) -> None:
    with pytest.raises(SessionNotFound):
        store.update_session("ses_nope", title="x")


def test_add_session_usage_increments(store: Store, session: Session) -> None:
    store.add_session_usage(session.id, input_tokens=10, output_tokens=5, cost_usd=0.25)
    store.add_session_usage(session.id, input_tokens=1, output_tokens=2, cost_usd=0.5)
    s = store.get_session(session.id)
    assert (s.input_tokens, s.output_tokens, s.cost_usd) == (11, 7, 0.75)
    with pytest.raises(SessionNotFound):
        store.add_session_usage("ses_nope", input_tokens=1, output_tokens=1, cost_usd=0)


def populate(store: Store, session: Session) -> list[str]:
    """Messages, a run with events and a tool call, and artifacts (inline and files)."""
    message = store.add_message(session.id, "user", [TextPart(text="hi"), TextPart(text="!")])
    run = store.create_run(session.id, input_message_id=message.id)
    store.append_run_events(run.id, [("run.meta", {}), ("run.status", {"status": "running"})])
    store.create_tool_call(run.id, "call_1", "fs.read", {"path": "a"}, message_id=message.id)
    part_id = store.query("SELECT id FROM message_parts WHERE message_id = ?", [message.id])
    big = b"x" * 65537  # over the default threshold (a file on SQLite)
    artifacts = [
        store.create_artifact("file", session_id=session.id, content=big),
        store.create_artifact("file", run_id=run.id, content=big, filename="out.bin"),
        store.create_artifact("note", message_part_id=part_id.rows[0][0], text="small"),
        store.create_artifact("report", message_part_id=part_id.rows[0][0], content=big),
    ]
    return [a.id for a in artifacts]


def test_delete_session_cascades_to_everything_under_it(store: Store) -> None:
    doomed, kept = store.create_session(), store.create_session()
    doomed_artifacts = populate(store, doomed)
    kept_artifacts = populate(store, kept)
    files = isinstance(store, SqliteStore)  # large payloads are files on SQLite only
    folders = [store.artifacts_dir / a for a in doomed_artifacts] if files else []
    assert sum(f.is_dir() for f in folders) == (3 if files else 0)

    store.delete_session(doomed.id)

    with pytest.raises(SessionNotFound):
        store.get_session(doomed.id)
    assert not any(f.exists() for f in folders)
    assert {a.id for a in store.list_artifacts()} == set(kept_artifacts)
    for table in ["messages", "message_parts", "runs", "run_events", "tool_calls"]:
        assert count(store, f"SELECT COUNT(*) FROM {table}") > 0
    assert count(store, "SELECT COUNT(*) FROM messages WHERE session_id = ?", doomed.id) == 0
    assert count(store, "SELECT COUNT(*) FROM runs WHERE session_id = ?", doomed.id) == 0
    assert count(store, "SELECT COUNT(*) FROM message_parts") == 2
    assert count(store, "SELECT COUNT(*) FROM run_events") == 2
    assert count(store, "SELECT COUNT(*) FROM tool_calls") == 1
    assert len(store.list_messages(kept.id)) == 1
    assert all(store.read_artifact(a) for a in kept_artifacts)


def test_delete_unknown_session(store: Store, session: Session) -> None:
    with pytest.raises(SessionNotFound):
        store.delete_session("ses_nope")
    store.delete_session(session.id)
    with pytest.raises(SessionNotFound):
        store.delete_session(session.id)
