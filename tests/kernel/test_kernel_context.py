"""``%agi compact``, the compaction mark of ``%agi history``, the context gauge in ``%agi
stats`` and in the ``%%agi`` and widget footers."""

from __future__ import annotations

from typing import Any

from agi_jupyter.amounts import context_gauge
from agi_jupyter.kernel.render import RunView
from agi_jupyter.testing import FakeLLMServer, Turn
from tests.kernel.conftest import RunCell


def test_compact_history_mark_and_stats(cell: RunCell, ctx: Any, fake_llm: FakeLLMServer) -> None:
    for i in range(2):
        fake_llm.enqueue(Turn(text=f"answer {i}"))
        cell(f"%%agi\nquestion {i}")
    fake_llm.enqueue(Turn(text="Summary: two questions.", usage=(25, 4)))

    compacted = cell("%agi compact")
    nothing = cell("%agi compact")
    history = cell("%agi history").value
    stats = dict(cell("%agi stats").value.rows)

    assert "2 messages folded into a summary (25 in / 4 out tokens" in compacted.stdout
    assert "nothing to compact" in nothing.stdout
    assert [row[0] for row in history.rows] == ["user", "assistant", "—", "user", "assistant"]
    assert "2 messages above compacted" in history.rows[2][1]
    assert stats["session compactions"] == "1"  # (a table holds text)
    assert str(stats["context"]).startswith("context ")
    assert "/ 1,000,000 tokens" in str(stats["context"])


def test_the_footer_shows_cached_tokens_and_the_gauge() -> None:
    view = RunView(run_id="run_1", provider="openai", model="gpt-5-mini", agent="build")
    for event in (
        {"type": "usage", "input_tokens": 1000, "output_tokens": 10, "cost_usd": 0.001,
         "context_tokens": 1100, "context_window": 6000, "compacts_at": 4500},
        {"type": "usage", "input_tokens": 1200, "output_tokens": 20, "cost_usd": 0.001,
         "cached_input_tokens": 900, "context_tokens": 4210, "context_window": 6000,
         "compacts_at": 4500},
    ):  # fmt: skip
        view.apply({"run_id": "run_1", "seq": 1, **event})
    footer = view.footer()
    assert "2200 in (900 cached) / 30 out tokens" in footer
    assert footer.endswith("context 4,210 / 6,000 tokens (70%), compacts past 4,500")


def test_the_gauge_text() -> None:
    assert context_gauge(None) is None
    assert context_gauge({"tokens": 10, "window": None}) == "context 10 tokens (window unknown)"
    assert context_gauge({"tokens": 1500, "window": 6000, "compacts_at": None}) == (
        "context 1,500 / 6,000 tokens (25%)"
    )
