"""``agi compact``, the compaction mark of ``agi show`` and the gauge of ``agi stats``."""

from __future__ import annotations

import json

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, Turn
from tests.cli.conftest import RunCli


def test_compact_marks_the_simple_view_and_keeps_the_full_one(
    run_cli: RunCli, agi: Agi, fake_llm: FakeLLMServer
) -> None:
    ses = agi.new_session(title="Long")
    for i in range(3):
        fake_llm.enqueue(Turn(text=f"answer {i}"))
        agi.ask(f"question {i}", session=ses.id)
    fake_llm.enqueue(Turn(text="Summary: three questions.", usage=(40, 5)))

    compacted = run_cli("compact", ses.id)
    again = run_cli("compact", ses.id, "--json")
    simple = run_cli("show", ses.id).stdout
    full = run_cli("show", ses.id, "--full").stdout
    stats = run_cli("stats", "--session", ses.id)
    data = json.loads(run_cli("stats", "--session", ses.id, "--json").stdout)

    assert compacted.exit_code == 0, compacted.stderr
    assert "4 messages folded into a summary (40/5 tokens, $0.0000)" in compacted.stdout
    assert json.loads(again.stdout) == {"compaction": None}  # only the last turn is left
    assert "4 messages above compacted into a summary" in simple
    assert simple.index("answer 1") < simple.index("compacted") < simple.index("question 2")
    assert "compacted" not in full
    assert all(f"question {i}" in full for i in range(3))
    assert stats.exit_code == 0
    assert f"{ses.id} context " in stats.stdout
    assert "1 compactions" in stats.stdout
    assert data["context"]["compactions"] == 1
    assert data["context"]["gauge"]["window"] == 1_000_000  # fake:echo's, from the catalog
