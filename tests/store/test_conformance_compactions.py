"""Every backend: compactions and the cached input tokens of sessions."""

from __future__ import annotations

from agi_jupyter.records import TextPart
from agi_jupyter.store import Store


def test_compactions_are_stored_once_newest_in_use_and_go_with_their_session(
    store: Store,
) -> None:
    session = store.create_session(agent="general")
    other = store.create_session(agent="general")
    first, second, third = (
        store.add_message(session.id, "user", [TextPart(text=f"m{i}")]) for i in range(3)
    )
    assert store.latest_compaction(session.id) is None
    older = store.add_compaction(
        session.id,
        first_message_id=first.id,
        through_message_id=second.id,
        message_count=2,
        summary="two messages summarized",
        provider="openai",
        model="gpt-5-mini",
        input_tokens=120,
        output_tokens=12,
        cost_usd=0.0001,
    )
    newer = store.add_compaction(
        session.id,
        first_message_id=first.id,
        through_message_id=third.id,
        message_count=3,
        summary="three",
        run_id=None,
    )
    assert older.id.startswith("cmp_")
    assert store.list_compactions(session.id) == [older, newer]
    assert store.latest_compaction(session.id) == newer
    assert (newer.input_tokens, newer.cost_usd) == (None, None)  # unknown, not zero
    assert store.list_compactions(other.id) == []
    assert [m.text for m in store.list_messages(session.id)] == ["m0", "m1", "m2"]
    store.delete_session(session.id)
    assert store.list_compactions(session.id) == []


def test_cached_input_tokens_add_up_per_session_and_in_stats(store: Store) -> None:
    session = store.create_session(agent="general")
    assert session.cached_input_tokens == 0
    store.add_session_usage(
        session.id, input_tokens=100, output_tokens=5, cost_usd=0.01, cached_input_tokens=60
    )
    store.add_session_usage(session.id, input_tokens=50, output_tokens=5, cost_usd=0.01)
    current = store.get_session(session.id)
    assert (current.input_tokens, current.cached_input_tokens) == (150, 60)
    assert store.stats()["cached_tokens"] == 60
