"""``Agi.history``: lazy reads (meta and parts decoded when first read) give the same views."""

from __future__ import annotations

from agi_jupyter.records import (
    PARTS_JSON,
    TEXTS_JSON,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    undecoded,
)
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
