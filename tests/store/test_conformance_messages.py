"""Every backend: messages and their parts (add, update, get, list in order)."""

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
from agi_jupyter.store import Store
from agi_jupyter.store.rows import MESSAGES
from tests.store.conftest import count

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


def part_count(store: Store) -> int:
    return count(store, "SELECT COUNT(*) FROM message_parts")


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


def test_add_message_round_trips_every_part_type(store: Store, session: Session) -> None:
    m = store.add_message(session.id, "assistant", ALL_PARTS, meta={"model": "m", "usage": {}})
    assert m.id.startswith("msg_")
    assert m.text == "Hello world ✓"
    assert (m.role, m.status, m.run_id) == ("assistant", "complete", None)
    loaded = store.get_message(m.id)
    assert loaded == m
    assert loaded.parts == ALL_PARTS
    assert part_count(store) == len(ALL_PARTS)


def test_add_message_counts_and_touches_the_session(store: Store, session: Session) -> None:
    store.add_message(session.id, "user", [TextPart(text="a")])
    m = store.add_message(session.id, "user", [], status="pending", run_id="run_x")
    s = store.get_session(session.id)
    assert s.message_count == 2
    assert s.updated_at == m.created_at
    assert (m.parts, m.text, m.status, m.run_id) == ([], "", "pending", "run_x")


def test_add_message_to_unknown_session_writes_nothing(store: Store, session: Session) -> None:
    with pytest.raises(SessionNotFound):
        store.add_message("ses_nope", "user", [TextPart(text="a")])
    assert part_count(store) == 0


@pytest.mark.parametrize(("role", "status"), [("robot", "complete"), ("user", "done")])
def test_add_message_validates_role_and_status(
    store: Store, session: Session, role: str, status: str
) -> None:
    with pytest.raises(UsageError):
        store.add_message(session.id, role, [], status=status)  # type: ignore[arg-type]


def test_update_message_replaces_parts_and_keeps_the_rest(store: Store, session: Session) -> None:
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


def test_update_or_get_unknown_message(store: Store, session: Session) -> None:
    with pytest.raises(NotFound) as info:
        store.update_message("msg_nope", status="error")
    assert info.value.code == "MESSAGE_NOT_FOUND"
    with pytest.raises(NotFound):
        store.get_message("msg_nope")
    m = store.add_message(session.id, "user", [])
    with pytest.raises(UsageError):
        store.update_message(m.id, status="weird")  # type: ignore[arg-type]


def test_list_messages_in_creation_order_with_parts(store: Store, session: Session) -> None:
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


def test_text_only_lists_user_and_assistant_text(store: Store, session: Session) -> None:
    store.add_message(session.id, "system", [TextPart(text="sys")])
    user = store.add_message(session.id, "user", [TextPart(text="q"), TextPart(text="")])
    answer = store.add_message(session.id, "assistant", ALL_PARTS)
    store.add_message(session.id, "tool", [TextPart(text="out")])
    listed = store.list_messages(session.id, text_only=True)
    assert [m.id for m in listed] == [user.id, answer.id]
    assert listed[0].parts == [TextPart(text="q")]
    assert listed[1].parts == [TextPart(text="Hello "), TextPart(text="world ✓")]
    assert store.list_messages(session.id, text_only=True, after_id=user.id) == [listed[1]]


def test_odd_json_values_round_trip(store: Store, session: Session) -> None:
    meta = {"nan": float("nan"), "big": 10**30, "nested": [{"é": "\u0000 ✓"}], "f": 1.5}
    m = store.add_message(session.id, "assistant", [TextPart(text="x")], meta=meta)
    loaded = store.get_message(m.id).meta
    assert loaded["nan"] != loaded["nan"]  # NaN
    assert {k: v for k, v in loaded.items() if k != "nan"} == {
        k: v for k, v in meta.items() if k != "nan"
    }
