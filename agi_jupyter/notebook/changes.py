"""A run's changes as data: one record per cell a notebook change touched, one per file change.

The store keeps one ``changes`` row per tool call that changed a notebook or a file, naming
the whole content before and after it (content-addressed blobs, ``notebook/record.py``,
``tools/filerecord.py``). The records here are derived from those rows, on every read:

- a notebook row gives one record per cell whose state differs between its two snapshots:
  ``inserted``, ``edited`` (the source), ``deleted``, ``moved`` (its place among the cells
  both snapshots hold) or ``outputs`` (outputs and execution count replaced, as by
  ``notebook.run``). Its id is ``<row id>/<cell id>``: stable across reads, since the
  snapshots never change;
- a file row is one record, with the row's id: ``created``, ``written`` or ``removed``.

Each record carries the content before and after (a cell's source, its outputs as summary
lines, a file's text) and a rendered unified ``diff``. Whether a record is undone is the
run's own log: undo and redo append a ``changes.undone`` / ``changes.redone`` event naming
the records (``events.ChangesUndone``), and the last event naming a record wins. A record the
user accepted (*Keep* in the notebook) is named by a ``changes.kept`` event: it is no longer
shown for review, and stays kept (undo and redo still work on it).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agi_jupyter.notebook.diff import label, output_lines, unified
from agi_jupyter.notebook.model import CellJSON, NotebookJSON, joined, parse
from agi_jupyter.records import Change, ChangeKind, RunEvent
from agi_jupyter.tools.diffs import ChangeOp, FileChange

Action = Literal[
    "inserted", "edited", "deleted", "moved", "outputs", "created", "written", "removed"
]
UNDONE, REDONE, KEPT = "changes.undone", "changes.redone", "changes.kept"
MAX_TEXT = 1_000_000  # a file larger than this is not shown (nor diffed) as text


@dataclass(kw_only=True)
class ChangeRecord:
    """One change of a run to one cell of a notebook, or to one file.

    ``cell_before`` / ``cell_after`` are the cell in the row's snapshots (None where it did
    not exist); ``order_before`` / ``order_after`` the cell ids of the snapshots, in order
    (where a deleted cell goes back, a moved one returns). For a file, ``data_before`` /
    ``data_after`` are its bytes (None: it did not exist)."""

    id: str
    row: Change
    action: Action
    cell_id: str | None = None
    before: str | None = None
    after: str | None = None
    diff: str = ""
    undone: bool = False
    kept: bool = False
    cell_before: CellJSON | None = None
    cell_after: CellJSON | None = None
    order_before: tuple[str, ...] = ()
    order_after: tuple[str, ...] = ()
    data_before: bytes | None = None
    data_after: bytes | None = None

    @property
    def kind(self) -> ChangeKind:
        return self.row.kind

    @property
    def path(self) -> str:
        return self.row.path

    @property
    def turn(self) -> int | None:
        return self.row.turn

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "change_id": self.row.id,
            "run_id": self.row.run_id,
            "turn": self.row.turn,
            "tool_call_id": self.row.tool_call_id,
            "kind": self.row.kind,
            "action": self.action,
            "path": self.row.path,
            "cell_id": self.cell_id,
            "before": self.before,
            "after": self.after,
            "diff": self.diff,
            "undone": self.undone,
            "kept": self.kept,
            "before_sha": self.row.before_sha,
            "after_sha": self.row.after_sha,
            "created_at": self.row.created_at,
        }


# --- notebooks -------------------------------------------------------------------------------


def cell_changes(row: Change, before: NotebookJSON, after: NotebookJSON) -> list[ChangeRecord]:
    """The records of one notebook row: every cell whose state differs between the row's
    snapshots (normalised notebooks), in the order of the cells after (deleted ones last)."""
    old = {str(c.get("id")): c for c in before.get("cells") or []}
    new = {str(c.get("id")): c for c in after.get("cells") or []}
    order_before, order_after = tuple(old), tuple(new)
    moved = _moved(order_before, order_after)
    records = []
    for cell_id in [*order_after, *(i for i in order_before if i not in new)]:
        a, b = old.get(cell_id), new.get(cell_id)
        action = _action(a, b, cell_id in moved)
        if action is None:
            continue
        shown = _shown(action, row.path, cell_id, a, b, (order_before, order_after))
        shown_before, shown_after, diff = shown
        records.append(
            ChangeRecord(
                id=f"{row.id}/{cell_id}",
                row=row,
                action=action,
                cell_id=cell_id,
                before=shown_before,
                after=shown_after,
                diff=diff,
                cell_before=a,
                cell_after=b,
                order_before=order_before,
                order_after=order_after,
            )
        )
    return records


def _action(a: CellJSON | None, b: CellJSON | None, moved: bool) -> Action | None:
    if a is None:
        return "inserted"
    if b is None:
        return "deleted"
    if a.get("source") != b.get("source") or a.get("cell_type") != b.get("cell_type"):
        return "edited"
    if moved:
        return "moved"
    if outputs_of(a) != outputs_of(b):
        return "outputs"
    return None


def outputs_of(cell: CellJSON | None) -> str | None:
    """A cell's outputs and execution count, comparable across backends (None: no such cell):
    what each output says (type, stream name, text, data by MIME type, error name and value),
    multiline strings joined, without the metadata a backend or JupyterLab may rewrite."""
    if cell is None:
        return None
    said = [
        [
            output.get("output_type"),
            output.get("name"),
            joined(output.get("text")),
            {mime: joined(value) for mime, value in (output.get("data") or {}).items()},
            output.get("ename"),
            output.get("evalue"),
        ]
        for output in cell.get("outputs") or []
    ]
    return json.dumps([said, cell.get("execution_count")], sort_keys=True, default=str)


def _moved(before: Sequence[str], after: Sequence[str]) -> set[str]:
    """Cells both snapshots hold whose order among them changed: those off a longest common
    subsequence of the two orders."""
    common = set(before) & set(after)
    a = [i for i in before if i in common]
    b = [i for i in after if i in common]
    if a == b:
        return set()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    kept = {a[m.a + k] for m in matcher.get_matching_blocks() for k in range(m.size)}
    return common - kept


def _shown(
    action: Action,
    path: str,
    cell_id: str,
    a: CellJSON | None,
    b: CellJSON | None,
    orders: tuple[Sequence[str], Sequence[str]],
) -> tuple[str | None, str | None, str]:
    """The content before and after as shown, and the unified diff."""
    name = label(path, cell_id, b or a or {})
    if action == "outputs":
        old, new = "\n".join(output_lines(a or {})), "\n".join(output_lines(b or {}))
        return old, new, unified(old, new, name + " outputs")
    if action == "moved":
        old, new = place(cell_id, orders[0]), place(cell_id, orders[1])
        return old, new, f"# {name} moved: was {old}, now {new}\n"
    source_a = None if a is None else str(a.get("source"))
    source_b = None if b is None else str(b.get("source"))
    return source_a, source_b, unified(source_a, source_b, name)


def place(cell_id: str, order: Sequence[str]) -> str:
    """Where a cell is among ``order``: ``after cell X`` or ``at the top``."""
    index = list(order).index(cell_id) if cell_id in order else 0
    return f"after cell {order[index - 1]}" if index > 0 else "at the top"


# --- files -----------------------------------------------------------------------------------


def file_change(row: Change, before: bytes | None, after: bytes | None) -> ChangeRecord:
    action: Action = "created" if before is None else "removed" if after is None else "written"
    old, new = _text(before), _text(after)
    binary = (before is not None and old is None) or (after is not None and new is None)
    if binary:
        diff = f"Binary or large file {row.path} differs\n"
    else:
        op: ChangeOp = "add" if before is None else "delete" if after is None else "update"
        diff = FileChange(path=row.path, op=op, old=old, new=new).diff()
    return ChangeRecord(
        id=row.id,
        row=row,
        action=action,
        before=old,
        after=new,
        diff=diff,
        data_before=before,
        data_after=after,
    )


def _text(data: bytes | None) -> str | None:
    if data is None or len(data) > MAX_TEXT:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


# --- a run's changeset -----------------------------------------------------------------------


@dataclass
class Blobs:
    """Blobs read from the store once per changeset (a run's rows share snapshots)."""

    get: Callable[[str], bytes]
    _bytes: dict[str, bytes] = field(default_factory=dict)
    _notebooks: dict[str, NotebookJSON] = field(default_factory=dict)

    def data(self, sha: str | None) -> bytes | None:
        if sha is None:
            return None
        if sha not in self._bytes:
            self._bytes[sha] = self.get(sha)
        return self._bytes[sha]

    def notebook(self, sha: str | None) -> NotebookJSON:
        if sha is None:
            return {"cells": []}
        if sha not in self._notebooks:
            self._notebooks[sha] = parse(self.get(sha))
        return self._notebooks[sha]


def changeset(
    rows: Iterable[Change], get_blob: Callable[[str], bytes], events: Iterable[RunEvent] = ()
) -> list[ChangeRecord]:
    """Every record of a run's change rows, in the order they were made, each marked undone
    as the run's ``changes.undone`` / ``changes.redone`` events say."""
    blobs = Blobs(get_blob)
    records: list[ChangeRecord] = []
    for row in rows:
        if row.kind == "file":
            records.append(file_change(row, blobs.data(row.before_sha), blobs.data(row.after_sha)))
        else:
            before, after = blobs.notebook(row.before_sha), blobs.notebook(row.after_sha)
            records.extend(cell_changes(row, before, after))
    events = list(events)
    undone, kept = undone_ids(events), kept_ids(events)
    for record in records:
        record.undone = record.id in undone
        record.kept = record.id in kept
    return records


def undone_ids(events: Iterable[RunEvent]) -> set[str]:
    """The records a run's log says are undone now (the last undo or redo naming each wins)."""
    undone: set[str] = set()
    for event in events:
        ids = [str(i) for i in event.payload.get("changes") or []]
        if event.type == UNDONE:
            undone.update(ids)
        elif event.type == REDONE:
            undone.difference_update(ids)
    return undone


def kept_ids(events: Iterable[RunEvent]) -> set[str]:
    """The records the user kept (accepted after review), as the run's log says."""
    return {
        str(i) for event in events if event.type == KEPT for i in event.payload.get("changes") or []
    }
