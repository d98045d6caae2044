"""``Agi.history``: lazy reads (meta and parts decoded when first read) give the same views."""

from __future__ import annotations

import pytest

from agi_jupyter.errors import SessionNotFound
from agi_jupyter.records import (
    PARTS_JSON,
    TEXTS_JSON,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    undecoded,
)
from agi_jupyter.runtime.history import history_view
from tests.runtime.conftest import MakeAgi


def test_lazy_and_eager_history_views_are_the_same(make_agi: MakeAgi) -> None:
    agi = make_agi()
    session = agi.new_session(model="fake:echo")
    store = agi.store
    store.add_message(session.id, "user", [TextPart(text="read a.txt")])
    store.add_message(
        session.id,
        "assistant",
        [
            ReasoningPart(text="plan"),
            TextPart(text="reading"),
            ToolCallPart(tool_call_id="c1", name="fs.read", arguments={"path": "a.txt"}),
        ],
        meta={"model": "echo"},
    )
    store.add_message(
        session.id, "tool", [ToolResultPart(tool_call_id="c1", name="fs.read", output="A")]
    )
    store.add_message(session.id, "assistant", [ToolCallPart(tool_call_id="c2", name="x")])
    store.add_message(session.id, "assistant", [TextPart(text="it says A")])

    simple = agi.history(session.id)
    assert all(undecoded(m, TEXTS_JSON) for m in simple)
    full = agi.history(session.id, view="full")
    assert all(undecoded(m, PARTS_JSON) for m in full)

    eager_simple = agi.history(session.id, lazy=False)
    eager_full = agi.history(session.id, view="full", lazy=False)
    assert not any(undecoded(m, PARTS_JSON) for m in eager_full)
    assert [(m.role, m.text) for m in simple] == [
        ("user", "read a.txt"),
        ("assistant", "reading"),
        ("assistant", "it says A"),
    ]
    assert simple == eager_simple
    assert [m.parts for m in simple] == [
        [TextPart(text="read a.txt")],
        [TextPart(text="reading")],
        [TextPart(text="it says A")],
    ]
    assert full == eager_full
    assert full[1].meta == {"model": "echo"}
    assert [m.role for m in full] == ["user", "assistant", "tool", "assistant", "assistant"]


def test_simple_view_of_mixed_lists_is_the_same(make_agi: MakeAgi) -> None:
    """``history_view`` asks whether each message is undecoded only when the first one is; a
    list mixing decoded and undecoded messages, in either order, gives the same view."""
    agi = make_agi()
    session = agi.new_session(model="fake:echo")
    store = agi.store
    store.add_message(session.id, "user", [TextPart(text="q"), TextPart(text="")])
    store.add_message(session.id, "assistant", [ReasoningPart(text="r"), TextPart(text="a")])
    store.add_message(session.id, "assistant", [ToolCallPart(tool_call_id="c", name="x")])
    store.add_message(session.id, "user", [TextPart(text="q2")])
    eager = store.list_messages(session.id, text_only=True)
    lazy = store.list_messages(session.id, text_only=True, lazy=True)
    want = history_view(eager, "simple")
    assert [m.text for m in want] == ["q", "a", "q2"]
    undecoded_first = [lazy[0], eager[1], lazy[2], eager[3]]
    decoded_first = [eager[0], lazy[1], eager[2], lazy[3]]
    view = history_view(undecoded_first, "simple")
    assert view[0] is lazy[0]  # kept as it is,
    assert undecoded(view[0], TEXTS_JSON)  # undecoded
    assert view == want
    assert history_view(decoded_first, "simple") == want  # the undecoded ones decoded


def test_messages_are_slotted_records(make_agi: MakeAgi) -> None:
    """No instance dict (what keeps a long history cheap, benchmarks/history_floor.py): a
    message takes no attributes besides its fields, decoded or not."""
    agi = make_agi()
    session = agi.new_session(model="fake:echo")
    agi.store.add_message(session.id, "user", [TextPart(text="q")])
    (lazy,) = agi.history(session.id, view="full")
    (eager,) = agi.history(session.id, view="full", lazy=False)
    for m in (lazy, eager):
        assert not hasattr(m, "__dict__")
        with pytest.raises(AttributeError):
            m.note = "x"  # type: ignore[attr-defined]
    assert lazy == eager


def test_the_history_of_an_unknown_session_is_not_found(make_agi: MakeAgi) -> None:
    """Not an empty list: a session without messages yet has one, an unknown id has none."""
    agi = make_agi()
    empty = agi.new_session(model="fake:echo")
    assert agi.history(empty.id) == []
    for view in ("simple", "full"):
        with pytest.raises(SessionNotFound, match="ses_nope"):
            agi.history("ses_nope", view=view)  # type: ignore[arg-type]
