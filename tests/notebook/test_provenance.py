"""Cells the agent creates or changes carry its provenance in their metadata (``agi.run_id``,
``agi.changed_at``); undo puts the metadata back as it was (the file backend here; the shared
document in ``tests/server/test_notebook_rtc.py``)."""

from __future__ import annotations

from pathlib import Path

import nbformat

from agi_jupyter.notebook import source_hash
from agi_jupyter.notebook.model import stamped
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.notebook.conftest import MakeAgi


def test_stamped_keeps_every_other_key_and_the_agi_keys_it_does_not_set() -> None:
    metadata = {"tags": ["setup"], "agi": {"note": "kept", "run_id": "run_old"}}
    result = stamped(metadata, {"run_id": "run_new", "changed_at": "2026-11-27T16:00:00Z"})
    assert result == {
        "tags": ["setup"],
        "agi": {"note": "kept", "run_id": "run_new", "changed_at": "2026-11-27T16:00:00Z"},
    }
    assert metadata["agi"] == {"note": "kept", "run_id": "run_old"}, "the original is unchanged"
    assert stamped(None, {"changed_at": "t"}) == {"agi": {"changed_at": "t"}}


def test_inserted_and_edited_cells_carry_the_run_and_undo_restores_their_metadata(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path, backend_env: dict[str, str]
) -> None:
    book = nbformat.read(notebook, as_version=4)
    book.cells[2].metadata.update({"tags": ["result"], "agi": {"note": "the user's"}})
    nbformat.write(book, notebook)
    before = [dict(c.metadata) for c in nbformat.read(notebook, as_version=4).cells]
    agi = make_agi(env=backend_env)
    fake_llm.enqueue(
        Turn(
            tool_calls=[
                FakeToolCall(
                    "notebook.insert",
                    {"source": "y = 1", "after_cell_id": "load"},
                    id="insert",
                ),
                FakeToolCall(
                    "notebook.edit",
                    {"cell_id": "total", "expected_hash": source_hash("x + 1"), "source": "x * 2"},
                    id="edit",
                ),
            ]
        ),
        Turn(text="done"),
    )
    session = agi.new_session(agent="build", notebook_path="analysis.ipynb")
    result = agi.ask("change it", session=session.id)
    assert result.run.status == "succeeded"

    cells = nbformat.read(notebook, as_version=4).cells
    inserted, edited = cells[2], cells[3]
    assert inserted.source == "y = 1"
    assert set(inserted.metadata["agi"]) == {"run_id", "changed_at"}
    assert inserted.metadata["agi"]["run_id"] == result.run_id
    assert edited.metadata["tags"] == ["result"], "the user's keys stay"
    assert edited.metadata["agi"]["note"] == "the user's"
    assert edited.metadata["agi"]["run_id"] == result.run_id
    assert edited.metadata["agi"]["changed_at"] >= inserted.metadata["agi"]["changed_at"]
    assert cells[1].metadata == before[1], "a cell the agent did not change has no provenance"

    undone = agi.undo(result.run_id)
    assert not undone.conflicts
    restored = nbformat.read(notebook, as_version=4).cells
    assert [c.source for c in restored] == [c.source for c in book.cells]
    assert [dict(c.metadata) for c in restored] == before
