"""Reviewing a run's changes after it ended: keep them, find those still to review, and say
whether a run was undone.

*Keep* is the user accepting a change (the per-cell Keep of the notebook tab): a
``changes.kept`` event of the run names the records, so the change is no longer shown for
review, after a reload too. A change still *to review* is one of an ended run that is neither
undone nor kept. No table of its own: the run's log holds both states (``notebook.changes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from agi_jupyter.notebook.changes import KEPT, ChangeRecord, changeset
from agi_jupyter.notebook.undo import choose, run_changeset
from agi_jupyter.store import Store

UndoState = Literal["", "undone", "partly undone"]


def keep_changes(store: Store, run_id: str, chosen: Sequence[str] | None) -> list[ChangeRecord]:
    """Mark the run's ``chosen`` changes (record or stored change ids; None: every one) kept,
    those not undone nor kept already; returns the run's changes as they are now."""
    records = run_changeset(store, run_id)
    fresh = [r.id for r in choose(records, run_id, None, chosen) if not (r.undone or r.kept)]
    if fresh:
        store.append_run_event(run_id, KEPT, {"changes": fresh})
        for record in records:
            record.kept = record.kept or record.id in fresh
    return records


def changes_at(store: Store, path: str, *, to_review: bool = False) -> list[ChangeRecord]:
    """The changes of ended runs to one notebook or file (``path`` as the changes name it,
    relative to the project), in the order they were made; ``to_review``: only those neither
    undone nor kept."""
    rows = store.list_changes(path=path)
    position = {row.id: index for index, row in enumerate(rows)}
    found: list[ChangeRecord] = []
    for run_id in dict.fromkeys(row.run_id for row in rows):
        if not run_id or not store.get_run(run_id).is_terminal:
            continue
        mine = [row for row in rows if row.run_id == run_id]
        records = changeset(mine, store.get_blob, store.list_run_events(run_id))
        found.extend(r for r in records if not to_review or not (r.undone or r.kept))
    found.sort(key=lambda r: position[r.row.id])  # (stable: a row's cells keep their order)
    return found


def undo_state(records: Sequence[ChangeRecord]) -> UndoState:
    """``undone`` when every change of a run is undone, ``partly undone`` when some are."""
    undone = sum(r.undone for r in records)
    if not undone:
        return ""
    return "undone" if undone == len(records) else "partly undone"
