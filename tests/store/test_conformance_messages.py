"""Every backend: messages and their parts (add, update, get, list in order)."""

from __future__ import annotations

import copy
import pickle
from dataclasses import asdict, replace

import pytest

from agi_jupyter.errors import NotFound, SessionNotFound, UsageError
from agi_jupyter.records import (
    PARTS_JSON,
    TEXTS_JSON,
    ArtifactRefPart,
    ErrorPart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    Session,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    undecoded,
)
from agi_jupyter.runtime.history import history_view
from agi_jupyter.store import Store
from agi_jupyter.store.rows import MESSAGES
from tests.store.conftest import count, slots_set

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


# --- meta and parts decoded on first read (records.Message.__getattr__) ------------------------


def test_lazy_listing_decodes_meta_and_parts_when_first_read(
    store: Store, session: Session
) -> None:
    written = [
        store.add_message(session.id, "user", [TextPart(text="q")]),
        store.add_message(session.id, "assistant", ALL_PARTS, meta={"model": "m", "n": [1]}),
    ]
    eager = store.list_messages(session.id)
    assert not any(undecoded(m, PARTS_JSON) for m in eager)
    listed = store.list_messages(session.id, lazy=True)
    assert [(m.id, m.role, m.text) for m in listed] == [(m.id, m.role, m.text) for m in written]
    for m in listed:  # reading the other fields decoded nothing
        assert undecoded(m, PARTS_JSON)
    assert listed[1].parts == ALL_PARTS  # decodes both fields of the message
    assert not undecoded(listed[1], PARTS_JSON)
    assert slots_set(listed[1]) == slots_set(written[1])  # as __init__ makes it
    assert listed[1].parts is listed[1].parts  # decoded once, then an ordinary field
    assert listed[1].meta == {"model": "m", "n": [1]}
    assert undecoded(listed[0], PARTS_JSON)
    assert listed[0].meta == {}
    assert not undecoded(listed[0], PARTS_JSON)
    assert listed == written


def test_undecoded_messages_copy_compare_and_convert_as_decoded_ones(
    store: Store, session: Session
) -> None:
    """Everything that reads a record's fields sees the decoded values: equality, repr,
    ``asdict``, ``replace``, pickling and copying (which hold the decoded values)."""
    m = store.add_message(session.id, "assistant", ALL_PARTS, meta={"model": "m"})

    def fresh(session_id: str) -> list[Message]:  # each call gives undecoded records
        return store.list_messages(session_id, lazy=True)

    assert fresh(session.id)[0] == m
    assert m == fresh(session.id)[0]
    assert repr(fresh(session.id)[0]) == repr(m)
    assert asdict(fresh(session.id)[0]) == asdict(m)
    assert replace(fresh(session.id)[0], status="error") == replace(m, status="error")
    for copied in (
        pickle.loads(pickle.dumps(fresh(session.id)[0])),
        copy.copy(fresh(session.id)[0]),
        copy.deepcopy(fresh(session.id)[0]),
    ):
        assert copied == m
        assert not undecoded(copied, PARTS_JSON)
    assert "_parts_json" not in pickle.dumps(fresh(session.id)[0]).decode("latin-1")
    assigned = fresh(session.id)[0]
    assigned.parts = [TextPart(text="new")]  # an assignment replaces the undecoded value
    assert assigned.parts == [TextPart(text="new")]
    assert assigned.meta == {"model": "m"}  # decoding the meta keeps what was assigned
    assert assigned.parts == [TextPart(text="new")]
    assert slots_set(assigned) == slots_set(m)
    with pytest.raises(AttributeError):  # a record takes no attributes besides its fields
        assigned.note = "set by a caller"  # type: ignore[attr-defined]
    meta_set = fresh(session.id)[0]
    meta_set.meta = {"set": True}
    assert meta_set.parts == ALL_PARTS
    assert meta_set.meta == {"set": True}
    with pytest.raises(AttributeError):
        object.__new__(Message).parts  # noqa: B018 (neither a value nor an undecoded one)


def test_text_only_parts_decode_to_the_non_empty_texts(store: Store, session: Session) -> None:
    parts: list[Part] = [TextPart(text=""), *ALL_PARTS, TextPart(text="")]
    store.add_message(session.id, "user", parts)
    store.add_message(session.id, "assistant", [ToolCallPart(tool_call_id="c", name="n")])
    store.add_message(session.id, "assistant", [TextPart(text="")])
    texts_only = store.list_messages(session.id, text_only=True, lazy=True)
    assert all(undecoded(m, TEXTS_JSON) for m in texts_only)
    full = store.list_messages(session.id)
    assert texts_only == store.list_messages(session.id, text_only=True)  # as read eagerly
    assert [m.parts for m in texts_only] == [
        [p for p in m.parts if isinstance(p, TextPart) and p.text] for m in full
    ]
    assert [m.parts for m in texts_only] == [
        [TextPart(text="Hello "), TextPart(text="world ✓")],
        [],
        [],
    ]


def test_simple_view_of_undecoded_texts_keeps_them_undecoded(
    store: Store, session: Session
) -> None:
    """``history_view`` keeps a text-only message, undecoded, when its text is not empty (it
    then has a non-empty text part); the same messages as from decoded records."""
    store.add_message(session.id, "system", [TextPart(text="sys")])
    store.add_message(session.id, "user", [TextPart(text="q"), TextPart(text="")])
    store.add_message(session.id, "assistant", [ToolCallPart(tool_call_id="c", name="n")])
    store.add_message(session.id, "tool", [TextPart(text="out")])
    store.add_message(session.id, "assistant", [TextPart(text="")])
    store.add_message(session.id, "assistant", ALL_PARTS)
    simple = history_view(store.list_messages(session.id, text_only=True, lazy=True), "simple")
    assert all(undecoded(m, TEXTS_JSON) for m in simple)
    assert simple == history_view(store.list_messages(session.id), "simple")
    assert [m.parts for m in simple] == [
        [TextPart(text="q")],
        [TextPart(text="Hello "), TextPart(text="world ✓")],
    ]


def test_odd_json_values_round_trip(store: Store, session: Session) -> None:
    meta = {"nan": float("nan"), "big": 10**30, "nested": [{"é": "\u0000 ✓"}], "f": 1.5}
    m = store.add_message(session.id, "assistant", [TextPart(text="x")], meta=meta)
    lazy = store.list_messages(session.id, lazy=True)[0].meta  # decoded by json, not orjson
    assert lazy["nan"] != lazy["nan"]
    assert (lazy["big"], lazy["nested"], lazy["f"]) == (10**30, [{"é": "\u0000 ✓"}], 1.5)
    loaded = store.get_message(m.id).meta
    assert loaded["nan"] != loaded["nan"]  # NaN
    assert {k: v for k, v in loaded.items() if k != "nan"} == {
        k: v for k, v in meta.items() if k != "nan"
    }
