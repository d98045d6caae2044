"""Reverting (or re-applying) one cell change by a three-way merge, never by overwrite.

For a record (``notebook.changes.ChangeRecord``) and the notebook as it is now, ``revert``
decides what to do to that one cell. Undo: base = the record's after, theirs = the cell now,
ours = the record's before (redo swaps before and after):

- the cell is as the record left it (theirs == base): it is put back (ours) with the
  operations every backend applies (``notebook.ops``), each with its precondition;
- it already is as the record found it (theirs == ours): nothing to do (``unchanged``);
- anything else means someone changed it since: a ``conflict`` for this cell only, which is
  left as it is, unless ``force`` (then it is put back from whatever it holds now).

What is compared depends on the record: an ``inserted``/``edited``/``deleted`` record the
cell's presence, type and source; ``outputs`` its outputs and execution count; ``moved`` the
cell before it among the cells of the record's snapshot. Other cells never move, so the
user's cells, their edits and cells added since (the one ``%agi undo`` is typed in too) stay.

A change is undone after the run's later changes of the same cell (or file), and redone
after its earlier ones (``blocked_by``): undoing an insertion while the run's later edit of
that cell stands is a conflict naming that edit.

A cell put back into the notebook (an undone deletion or move, a redone insertion) goes
after the nearest cell that preceded it in the snapshot and still exists, else before the
nearest one that followed it, keeping its id; its outputs and metadata come back with it.

A cell's metadata comes back with its source, by the same rule key by key: a key as the
record left it is put back as the record found it (or removed); a key someone changed since
(tags added in JupyterLab, say) is left as it is. Metadata alone never makes a conflict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agi_jupyter.notebook.changes import ChangeRecord, outputs_of
from agi_jupyter.notebook.model import CellJSON, NotebookJSON, find_cell
from agi_jupyter.notebook.ops import Delete, Edit, Insert, Op, SetOutputs

Status = Literal["reverted", "unchanged", "conflict"]


@dataclass(kw_only=True)
class Decision:
    status: Status
    ops: list[Op] = field(default_factory=list)
    reason: str = ""
    forced: bool = False


def revert(
    notebook: NotebookJSON, record: ChangeRecord, *, redo: bool = False, force: bool = False
) -> Decision:
    """What to do to ``record``'s cell in ``notebook`` (normalised) to undo it (``redo``:
    to make it again)."""
    assert record.cell_id is not None
    cell_id = record.cell_id
    ours, base = (
        (record.cell_after, record.cell_before) if redo else (record.cell_before, record.cell_after)
    )
    order = record.order_after if redo else record.order_before
    found = find_cell(notebook, cell_id)
    now = None if found is None else found[1]
    if record.action == "outputs":
        return _outputs(now, ours, base, cell_id, force)
    if record.action == "moved":
        return _move(notebook, now, record, redo, force)
    theirs, target, was = _content(now), _content(ours), _content(base)
    metadata = None if now is None or ours is None else merged_metadata(now, ours, base)
    if theirs == target and metadata is None:
        return Decision(status="unchanged")
    if theirs != was and theirs != target and not force:
        return Decision(status="conflict", reason=_why(cell_id, now, base))
    forced = theirs not in (was, target)
    if now is not None and ours is not None and now.get("cell_type") == ours.get("cell_type"):
        source = str(ours["source"])
        edit = Edit(
            cell_id=cell_id, expected_source=str(now["source"]), source=source, metadata=metadata
        )
        return Decision(status="reverted", ops=[edit], forced=forced)
    ops: list[Op] = []
    if now is not None:
        ops.append(Delete(cell_id=cell_id, expected_source=str(now["source"])))
    if ours is not None:
        if metadata is not None:
            ours = {**ours, "metadata": metadata}
        ops += put_back(_without(notebook, cell_id), ours, order, cell_id)
    return Decision(status="reverted", ops=ops, forced=forced)


_ABSENT = object()


def merged_metadata(now: CellJSON, ours: CellJSON, base: CellJSON | None) -> dict[str, Any] | None:
    """The cell's metadata after putting ``ours`` back over ``base``, key by key: a key as
    ``base`` has it takes ``ours``' value (or goes); one changed since keeps ``now``'s.
    None when that is the metadata ``now`` has."""
    mine: dict[str, Any] = now.get("metadata") or {}
    target: dict[str, Any] = ours.get("metadata") or {}
    was: dict[str, Any] = (base or {}).get("metadata") or {}
    merged: dict[str, Any] = {}
    for key in dict.fromkeys([*mine, *target, *was]):
        mine_value = mine.get(key, _ABSENT)
        value = target.get(key, _ABSENT) if mine_value == was.get(key, _ABSENT) else mine_value
        if value is not _ABSENT:
            merged[key] = value
    return None if merged == mine else merged


def _without(notebook: NotebookJSON, cell_id: str) -> NotebookJSON:
    return {**notebook, "cells": [c for c in notebook["cells"] if c.get("id") != cell_id]}


def blocked_by(
    record: ChangeRecord, records: Sequence[ChangeRecord], *, redo: bool = False
) -> ChangeRecord | None:
    """The run's own change that keeps ``record`` from being undone alone: a later change of
    the same cell (or file) still in effect — undo that first; for redo, an earlier change
    of it still undone — redo that first. None when nothing does."""
    key = (record.path, record.cell_id)
    at = records.index(record)
    if redo:
        earlier = [r for r in records[:at] if (r.path, r.cell_id) == key and r.undone]
        return earlier[0] if earlier else None
    later = [r for r in records[at + 1 :] if (r.path, r.cell_id) == key and not r.undone]
    return later[-1] if later else None


def _content(cell: CellJSON | None) -> tuple[str, str] | None:
    return None if cell is None else (str(cell.get("cell_type")), str(cell.get("source")))


def _why(cell_id: str, now: CellJSON | None, base: CellJSON | None) -> str:
    if now is None:
        return f"cell {cell_id} was deleted since"
    if base is None:
        return f"a cell {cell_id} was added since"
    return f"cell {cell_id} was edited since"


def _outputs(
    now: CellJSON | None, ours: CellJSON | None, base: CellJSON | None, cell_id: str, force: bool
) -> Decision:
    if now is None:
        return Decision(status="conflict", reason=f"cell {cell_id} was deleted since")
    theirs = outputs_of(now)
    if theirs == outputs_of(ours):
        return Decision(status="unchanged")
    forced = theirs != outputs_of(base)
    if forced and not force:
        return Decision(status="conflict", reason=f"cell {cell_id} has new outputs since")
    if now.get("cell_type") != "code" or ours is None:
        return Decision(status="conflict", reason=f"cell {cell_id} is no longer a code cell")
    op = SetOutputs(
        cell_id=cell_id,
        outputs=list(ours.get("outputs") or []),
        execution_count=ours.get("execution_count"),
    )
    return Decision(status="reverted", ops=[op], forced=forced)


def _move(
    notebook: NotebookJSON, now: CellJSON | None, record: ChangeRecord, redo: bool, force: bool
) -> Decision:
    cell_id = str(record.cell_id)
    if now is None:
        return Decision(status="conflict", reason=f"cell {cell_id} was deleted since")
    order_ours, order_base = (
        (record.order_after, record.order_before)
        if redo
        else (record.order_before, record.order_after)
    )
    current = [str(c.get("id")) for c in notebook["cells"]]
    among = set(current) & set(order_ours) & set(order_base)
    theirs = _previous(cell_id, current, among)
    if theirs == _previous(cell_id, order_ours, among):
        return Decision(status="unchanged")
    forced = theirs != _previous(cell_id, order_base, among)
    if forced and not force:
        return Decision(status="conflict", reason=f"cell {cell_id} was moved since")
    ops: list[Op] = [Delete(cell_id=cell_id, expected_source=str(now["source"]))]
    ops += put_back(_without(notebook, cell_id), now, order_ours, cell_id)
    return Decision(status="reverted", ops=ops, forced=forced)


def _previous(cell_id: str, order: Sequence[str], among: set[str]) -> str | None:
    """The cell before ``cell_id`` in ``order``, counting only cells in ``among``."""
    kept = [i for i in order if i in among or i == cell_id]
    index = kept.index(cell_id) if cell_id in kept else 0
    return kept[index - 1] if index > 0 else None


def put_back(
    notebook: NotebookJSON, cell: CellJSON, order: Sequence[str], cell_id: str
) -> list[Op]:
    """Insert ``cell`` (with its id, then its outputs) where ``order`` had it, relative to the
    cells of ``notebook`` that ``order`` also holds."""
    ids = [str(c.get("id")) for c in notebook["cells"]]
    at = list(order).index(cell_id) if cell_id in order else len(order)
    after = next((i for i in reversed(order[:at]) if i in ids), None)
    before = next((i for i in order[at + 1 :] if i in ids), None)
    cell_type, source = str(cell.get("cell_type")), str(cell.get("source"))
    metadata = dict(cell.get("metadata") or {})
    where: dict[str, Any]
    if after is not None:
        where = {"after_cell_id": after}
    elif before is not None:
        where = {"index": ids.index(before)}
    else:  # none of its neighbours is left: at the top if it was first, else at the end
        where = {"index": 0 if at == 0 else len(ids)}
    insert = Insert(cell_type=cell_type, source=source, cell_id=cell_id, metadata=metadata, **where)
    ops: list[Op] = [insert]
    outputs, count = cell.get("outputs") or [], cell.get("execution_count")
    if cell_type == "code" and (outputs or count is not None):
        ops.append(SetOutputs(cell_id=cell_id, outputs=list(outputs), execution_count=count))
    return ops
