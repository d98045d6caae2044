"""Undo (and redo) a run's changes by merge, never by overwrite.

What is undone: the whole run, its turns from ``turn`` on (rewind to before turn N), or the
chosen ``changes`` (record ids of ``notebook.changes``, or a stored change's id for every
cell it touched). Those records are reverted one by one, last first, each on the one cell or
file it touched, by a three-way merge (``notebook.merge``): a cell as the run left it is
put back; a cell someone changed since is a *conflict* for that cell only, named in the
result and left as it is; every other cell — the user's edits, cells added since, the cell
``%agi undo`` is typed in — is never touched. Files the same, byte for byte: a file as the
run left it is restored (or removed, when the run created it); one changed since is a
conflict.

``force`` puts back conflicted cells and files anyway: ``True`` every one of the chosen
changes, or a list naming cell ids, file paths or record ids (only those are forced).

Each cell change goes through the backend that holds the notebook now (the file, the shared
document, the open tab) as the same operations the notebook tools use, each with its
precondition, so typing into the cell while it is reverted makes it a conflict instead of
being overwritten. The records reverted (or found already reverted) are marked undone in the
run's log (a ``changes.undone`` event); undoing them again does nothing (``skipped``).
``redo`` is the same merge the other way (base = the record's before, ours = its after), for
records that are undone, first to last, marked by a ``changes.redone`` event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agi_jupyter.errors import Conflict, ErrorCode, NotFound, UsageError
from agi_jupyter.notebook.access import NotebookAccess
from agi_jupyter.notebook.changes import REDONE, UNDONE, ChangeRecord, changeset
from agi_jupyter.notebook.document import NotebookDocument
from agi_jupyter.notebook.merge import blocked_by, revert
from agi_jupyter.notebook.ops import NotebookError
from agi_jupyter.notebook.record import one_change_at_a_time
from agi_jupyter.store import Store
from agi_jupyter.tools.filerecord import bytes_or_none, one_write_at_a_time
from agi_jupyter.tools.paths import delete_in_project, write_bytes_in_project

Outcome = Literal["reverted", "unchanged", "skipped", "conflict"]
Force = bool | Sequence[str]


@dataclass(kw_only=True)
class ChangeResult:
    """What undo (or redo) did to one change: ``reverted`` (put back now), ``unchanged``
    (already as it should be), ``skipped`` (already undone; for redo: not undone) or
    ``conflict`` (changed since: left as it is, ``reason`` says how)."""

    id: str
    path: str
    cell_id: str | None
    action: str
    status: Outcome
    reason: str = ""
    forced: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "cell_id": self.cell_id,
            "action": self.action,
            "status": self.status,
            "reason": self.reason,
            "forced": self.forced,
        }


@dataclass(kw_only=True)
class UndoneNotebook:
    path: str
    status: str  # restored (some cell put back) | unchanged | conflict (only conflicts)
    backend: str
    forced: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "backend": self.backend,
            "forced": self.forced,
        }


@dataclass(kw_only=True)
class UndoneFile:
    path: str
    status: str  # restored | removed (the run created it) | unchanged | conflict
    forced: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "forced": self.forced}


@dataclass(kw_only=True)
class UndoResult:
    run_id: str
    turn: int | None = None  # undone from this turn on (None: the whole run, or the chosen)
    redo: bool = False
    notebooks: list[UndoneNotebook] = field(default_factory=list)
    files: list[UndoneFile] = field(default_factory=list)
    changes: list[ChangeResult] = field(default_factory=list)

    @property
    def conflicts(self) -> list[ChangeResult]:
        return [c for c in self.changes if c.status == "conflict"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "turn": self.turn,
            "redo": self.redo,
            "notebooks": [n.to_dict() for n in self.notebooks],
            "files": [f.to_dict() for f in self.files],
            "changes": [c.to_dict() for c in self.changes],
            "conflicts": [c.to_dict() for c in self.conflicts],
        }


def run_changeset(store: Store, run_id: str) -> list[ChangeRecord]:
    """Every change record of the run, in order, marked undone as its log says."""
    return changeset(
        store.list_changes(run_id=run_id), store.get_blob, store.list_run_events(run_id)
    )


def choose(
    records: list[ChangeRecord], run_id: str, turn: int | None, chosen: Sequence[str] | None
) -> list[ChangeRecord]:
    """The records undo works on: those of turns ``turn`` on (else all), and of those only the
    ``chosen`` ones (record or stored change ids) when given; a chosen id that names none of
    them is ``CHANGE_NOT_FOUND``."""
    records = _from_turn(records, run_id, turn)
    if chosen is None:
        return records
    known = {r.id for r in records} | {r.row.id for r in records}
    missing = [i for i in chosen if i not in known]
    if missing:
        since = "" if turn is None or turn == 1 else f" from turn {turn} on"
        raise NotFound(
            f"run {run_id} made no change {', '.join(missing)}{since}",
            code=ErrorCode.CHANGE_NOT_FOUND,
        )
    wanted = set(chosen)
    return [r for r in records if r.id in wanted or r.row.id in wanted]


def _from_turn(records: list[ChangeRecord], run_id: str, turn: int | None) -> list[ChangeRecord]:
    if turn is None or turn == 1:
        return records
    if turn < 1:
        raise UsageError("turn must be 1 or more")
    if any(r.turn is None for r in records):
        raise UsageError(
            f"run {run_id} recorded changes without their turn (its SDK does not say): "
            "only the whole run can be undone"
        )
    return [r for r in records if (r.turn or 0) >= turn]


async def undo_run(
    store: Store,
    access: NotebookAccess,
    project: Path,
    run_id: str,
    *,
    force: Force = False,
    turn: int | None = None,
    changes: Sequence[str] | None = None,
    redo: bool = False,
) -> UndoResult:
    """Undo (``redo``: make again) the run's chosen changes by merge; see the module."""
    run = await asyncio.to_thread(store.get_run, run_id)
    if not run.is_terminal:
        raise Conflict(
            f"run {run_id} is still {run.status}; cancel it first", code=ErrorCode.RUN_ACTIVE
        )
    records = await asyncio.to_thread(run_changeset, store, run_id)
    chosen = choose(records, run_id, turn, changes)
    undo = _Undo(access, project, redo=redo, force=force, records=records)
    result = UndoResult(run_id=run_id, turn=turn, redo=redo)
    for record in chosen if redo else reversed(chosen):
        result.changes.append(await undo.one(record))
    if not redo:
        result.changes.reverse()  # (reported in the order the changes were made)
    marked = [c.id for c in result.changes if c.status in ("reverted", "unchanged")]
    if marked:
        await asyncio.to_thread(
            store.append_run_event, run_id, REDONE if redo else UNDONE, {"changes": marked}
        )
    _summarise(result, chosen, undo.docs)
    return result


class _Undo:
    def __init__(
        self,
        access: NotebookAccess,
        project: Path,
        *,
        redo: bool,
        force: Force,
        records: list[ChangeRecord],
    ) -> None:
        self.access = access
        self.project = project
        self.root = project.resolve()
        self.redo = redo
        self.force = force
        self.records = records
        self.docs: dict[str, NotebookDocument] = {}

    def forced(self, record: ChangeRecord) -> bool:
        if isinstance(self.force, bool):
            return self.force
        return bool({record.id, record.path, record.cell_id} & set(self.force))

    async def one(self, record: ChangeRecord) -> ChangeResult:
        result = ChangeResult(
            id=record.id,
            path=record.path,
            cell_id=record.cell_id,
            action=record.action,
            status="skipped",
        )
        if record.undone != self.redo:
            result.reason = "not undone" if self.redo else "already undone"
            return result
        blocker = blocked_by(record, self.records, redo=self.redo)
        if blocker is not None:
            result.status = "conflict"
            result.reason = (
                f"redo the run's earlier change {blocker.id} of it first"
                if self.redo
                else f"the run's later change {blocker.id} changed it too: undo that first"
            )
            return result
        if record.kind == "file":
            await asyncio.to_thread(self._file, record, result)
        else:
            await self._cell(record, result)
        if result.status != "conflict":
            record.undone = not self.redo
        return result

    async def _cell(self, record: ChangeRecord, result: ChangeResult) -> None:
        doc = self.docs.get(record.path)
        if doc is None:
            doc = await self.access.open(self.access.locate(self.project, record.path))
            self.docs[record.path] = doc
        async with one_change_at_a_time(doc.path):
            notebook = (await doc.backend.load()).notebook
            decision = revert(notebook, record, redo=self.redo, force=self.forced(record))
            result.status, result.reason, result.forced = (
                decision.status,
                decision.reason,
                decision.forced,
            )
            try:
                for op in decision.ops:
                    await doc.backend.apply(op)
            except NotebookError as e:  # typed into meanwhile: the precondition refused it
                result.status, result.forced = "conflict", False
                result.reason = f"cell {record.cell_id} changed while it was put back ({e})"

    def _file(self, record: ChangeRecord, result: ChangeResult) -> None:
        ours, base = (
            (record.data_after, record.data_before)
            if self.redo
            else (record.data_before, record.data_after)
        )
        with one_write_at_a_time():
            now = bytes_or_none(self.root, record.path)
            if now == ours:
                result.status = "unchanged"
                return
            result.forced = now != base
            if result.forced and not self.forced(record):
                result.status, result.forced = "conflict", False
                result.reason = f"{record.path} was changed since"
                return
            if ours is None:
                delete_in_project(self.root, record.path)
            else:
                write_bytes_in_project(self.root, record.path, ours)
            result.status = "reverted"


def _summarise(
    result: UndoResult, chosen: list[ChangeRecord], docs: dict[str, NotebookDocument]
) -> None:
    """Per notebook and per file: whether anything was put back (as undo answered before
    it worked per cell)."""
    by_path: dict[str, list[ChangeResult]] = {}
    for change in result.changes:
        by_path.setdefault(change.path, []).append(change)
    kinds = {r.path: r.kind for r in chosen}
    for path, changes in by_path.items():
        reverted = [c for c in changes if c.status == "reverted"]
        forced = any(c.forced for c in reverted)
        conflict = not reverted and any(c.status == "conflict" for c in changes)
        if kinds[path] == "notebook":
            status = "restored" if reverted else "conflict" if conflict else "unchanged"
            backend = docs[path].kind if path in docs else "file"
            result.notebooks.append(
                UndoneNotebook(path=path, status=status, backend=backend, forced=forced)
            )
            continue
        status = "conflict" if conflict else "unchanged"
        if reverted:
            record = next(r for r in chosen if r.id == reverted[-1 if result.redo else 0].id)
            gone = record.data_after if result.redo else record.data_before
            status = "removed" if gone is None else "restored"
        result.files.append(UndoneFile(path=path, status=status, forced=forced))
