"""Messages and their parts: add, update, get, list in order with one query for parts."""

from __future__ import annotations

import pytest

from agi_jupyter.errors import NotFound, SessionNotFound, UsageError
from agi_jupyter.records import (
    ArtifactRefPart,
    ErrorPart,
    ImagePart,
    Part,
    ReasoningPart,
    Session,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from agi_jupyter.store import SqliteStore
from agi_jupyter.store.rows import MESSAGES

ALL_PARTS: list[Part] = [
    ReasoningPart(text="think", signature="sig", provider_data={"id": "rs_1"}),
    TextPart(text="Hello "),
    ToolCallPart(tool_call_id="call_1", name="fs.read", arguments={"path": "a.txt"}),
    ToolResultPart(tool_call_id="call_1", name="fs.read", output="data", is_error=True),
    ImagePart(mime="image/png", data_base64="iVBOR"),
    ErrorPart(code="E", message="boom"),
    ArtifactRefPart(artifact_id="art_1", kind="file", title="t"),
    TextPart(text="world ✓"),
]


def part_count(store: SqliteStore) -> int:
    with store._read() as conn:
        assert conn is not None
        return int(conn.execute("SELECT COUNT(*) FROM message_parts").fetchone()[0])


def test_message_columns_match_the_fast_row_reader() -> None:
    assert MESSAGES.columns == (
        "id",
        "session_id",
        "role",
        "run_id",
        "status",
        "text",
        "meta",
        "created_at",
        "updated_at",
    )


def test_add_message_round_trips_every_part_type(store: SqliteStore, session: Session) -> None:
    m = store.add_message(session.id, "assistant", ALL_PARTS, meta={"model": "m", "usage": {}})
    assert m.id.startswith("msg_")
    assert m.text == "Hello world ✓"
    assert (m.role, m.status, m.run_id) == ("assistant", "complete", None)
    loaded = store.get_message(m.id)
    assert loaded == m
    assert loaded.parts == ALL_PARTS
    assert part_count(store) == len(ALL_PARTS)


def test_add_message_counts_and_touches_the_session(store: SqliteStore, session: Session) -> None:
    store.add_message(session.id, "user", [TextPart(text="a")])
    m = store.add_message(session.id, "user", [], status="pending", run_id="run_x")
    s = store.get_session(session.id)
    assert s.message_count == 2
    assert s.updated_at == m.created_at
    assert (m.parts, m.text, m.status, m.run_id) == ([], "", "pending", "run_x")


def test_add_message_to_unknown_session_writes_nothing(
    store: SqliteStore, session: Session
) -> None:
    with pytest.raises(SessionNotFound):
        store.add_message("ses_nope", "user", [TextPart(text="a")])
    assert part_count(store) == 0


@pytest.mark.parametrize(("role", "status"), [("robot", "complete"), ("user", "done")])
def test_add_message_validates_role_and_status(
    store: SqliteStore, session: Session, role: str, status: str
) -> None:
    with pytest.raises(UsageError):
        store.add_message(session.id, role, [], status=status)  # type: ignore[arg-type]


def test_update_message_replaces_parts_and_keeps_the_rest(
    store: SqliteStore, session: Session
) -> None:
    m = store.add_message(session.id, "assistant", ALL_PARTS, status="pending", meta={"a": 1})
    updated = store.update_message(m.id, parts=[TextPart(text="final")], status="complete")
    assert updated.parts == [TextPart(text="final")]
    assert (updated.text, updated.status, updated.meta) == ("final", "complete", {"a": 1})
    assert updated.created_at == m.created_at
    assert updated.updated_at >= m.updated_at
    assert part_count(store) == 1
    assert store.get_message(m.id) == updated
    again = store.update_message(m.id, meta={"b": 2})
    assert (again.meta, again.parts, again.status) == ({"b": 2}, updated.parts, "complete")
    assert store.get_session(session.id).updated_at == again.updated_at


def test_update_or_get_unknown_message(store: SqliteStore, session: Session) -> None:
    with pytest.raises(NotFound) as info:
        store.update_message("msg_nope", status="error")
    assert info.value.code == "MESSAGE_NOT_FOUND"
    with pytest.raises(NotFound):
        store.get_message("msg_nope")
    m = store.add_message(session.id, "user", [])
    with pytest.raises(UsageError):
        store.update_message(m.id, status="weird")  # type: ignore[arg-type]


def test_list_messages_in_creation_order_with_parts(store: SqliteStore, session: Session) -> None:
    other = store.create_session()
    made = []
    for i in range(30):
        parts: list[Part] = [TextPart(text=f"m{i}"), ToolCallPart(tool_call_id=str(i), name="x")]
        made.append(store.add_message(session.id, "user", parts[: 1 + i % 2]))
        store.add_message(other.id, "user", [TextPart(text="other")])
    listed = store.list_messages(session.id)
    assert listed == made
    assert store.list_messages(session.id, limit=7) == made[:7]
    assert store.list_messages(session.id, after_id=made[9].id) == made[10:]
    assert store.list_messages(session.id, after_id=made[9].id, limit=3) == made[10:13]
    assert store.list_messages(session.id, after_id=made[-1].id) == []
    assert store.list_messages("ses_nope") == []
    with pytest.raises(NotFound):
        store.list_messages(session.id, after_id="msg_nope")
    with pytest.raises(NotFound):  # a message of another session is no anchor
        store.list_messages(session.id, after_id=store.list_messages(other.id)[0].id)
    with pytest.raises(UsageError):
        store.list_messages(session.id, limit=0)


def test_list_messages_is_one_query_without_message_parts(
    store: SqliteStore, session: Session
) -> None:
    for i in range(20):
        store.add_message(session.id, "user", [TextPart(text=str(i)), TextPart(text="!")])
    statements: list[str] = []
    with store._read() as conn:
        assert conn is not None
        conn.set_trace_callback(statements.append)
    try:
        assert len(store.list_messages(session.id)) == 20
    finally:
        with store._read() as conn:
            assert conn is not None
            conn.set_trace_callback(None)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 1
    assert "message_parts" not in selects[0]


def test_parts_written_by_another_version_still_load(store: SqliteStore, session: Session) -> None:
    m = store.add_message(session.id, "user", [TextPart(text="x")])
    with store._write() as conn:
        conn.execute(
            "UPDATE message_parts SET content = ? WHERE message_id = ?",
            ['{"text": "x", "added_later": 1}', m.id],
        )
    assert store.get_message(m.id).parts == [TextPart(text="x")]
