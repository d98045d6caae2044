"""Undo a run: every notebook and file it changed goes back to how it was before the run's
first change — or, with ``turn=N``, before its turn N (turns N to the last are undone).

The snapshot before a run's first change to a notebook is restored through the backend that
holds the notebook now (the file byte for byte; the shared document or the open tab as the
same cells). Undo refuses, naming the cells, when a notebook's cells (ids, types, sources)
are no longer what the run left, because someone changed them afterwards, unless ``force``.
Files written by ``fs.write`` / ``apply_patch`` (``changes`` of kind ``file``) are compared
byte for byte with what the run left, and restored (or removed, when the run created them).
A notebook or file already back to its snapshot is left alone (``unchanged``). Everything is
checked before anything is restored, so a refusal changes nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agi_jupyter.errors import Conflict, ErrorCode, UsageError
from agi_jupyter.notebook.access import NotebookAccess
from agi_jupyter.notebook.document import NotebookDocument, NotebookState
from agi_jupyter.notebook.model import fingerprint, normalized, parse
from agi_jupyter.records import Change
from agi_jupyter.store import Store
from agi_jupyter.tools.filerecord import bytes_or_none
from agi_jupyter.tools.paths import delete_in_project, write_bytes_in_project


@dataclass(kw_only=True)
class UndoneNotebook:
    path: str
    status: str  # restored | unchanged
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
    status: str  # restored | removed (the run created it) | unchanged
    forced: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "forced": self.forced}


@dataclass(kw_only=True)
class UndoResult:
    run_id: str
    turn: int | None = None  # undone from this turn on (None: the whole run)
    notebooks: list[UndoneNotebook] = field(default_factory=list)
    files: list[UndoneFile] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "turn": self.turn,
            "notebooks": [n.to_dict() for n in self.notebooks],
            "files": [f.to_dict() for f in self.files],
        }


@dataclass
class _Plan:
    path: str
    doc: NotebookDocument
    state: NotebookState
    before: bytes
    after: bytes
    # What the run left after each of these changes: a notebook holding any of them was left
    # so by the run (or by an undo of its later turns), not changed by someone else.
    lefts: list[bytes] = field(default_factory=list)


def run_changes(
    store: Store, run_id: str, *, kind: str = "notebook", from_turn: int | None = None
) -> dict[str, list[Change]]:
    """Per notebook (or file) the run changed: its changes in order (from turn ``from_turn``
    on); the first one's ``before`` is what undo restores."""
    spans: dict[str, list[Change]] = {}
    for change in store.list_changes(run_id=run_id):
        if change.kind != kind:
            continue
        if from_turn is not None and (change.turn or 0) < from_turn:
            continue
        spans.setdefault(change.path, []).append(change)
    return spans


def _check_turn(store: Store, run_id: str, turn: int | None) -> None:
    if turn is None or turn == 1:
        return
    if turn < 1:
        raise UsageError("turn must be 1 or more")
    if any(c.turn is None for c in store.list_changes(run_id=run_id)):
        raise UsageError(
            f"run {run_id} recorded changes without their turn (its SDK does not say): "
            "only the whole run can be undone"
        )


async def undo_run(
    store: Store,
    access: NotebookAccess,
    project: Path,
    run_id: str,
    *,
    force: bool = False,
    turn: int | None = None,
) -> UndoResult:
    run = await asyncio.to_thread(store.get_run, run_id)
    if not run.is_terminal:
        raise Conflict(
            f"run {run_id} is still {run.status}; cancel it first", code=ErrorCode.RUN_ACTIVE
        )
    await asyncio.to_thread(_check_turn, store, run_id, turn)
    from_turn = None if turn in (None, 1) else turn
    spans = await asyncio.to_thread(run_changes, store, run_id, from_turn=from_turn)
    plans = [await _plan(store, access, project, path, span) for path, span in spans.items()]
    file_spans = await asyncio.to_thread(
        run_changes, store, run_id, kind="file", from_turn=from_turn
    )
    files = [await asyncio.to_thread(_file_plan, store, project, s) for s in file_spans.values()]
    result = UndoResult(run_id=run_id, turn=turn)
    conflicts = [] if force else [(p.path, why) for p in plans if (why := _conflict(p))]
    if not force:
        conflicts += [(f.path, "changed since") for f in files if _file_conflict(f)]
    if conflicts:
        listing = "; ".join(f"{path}: {why}" for path, why in conflicts)
        what = "the run" if from_turn is None else f"turn {from_turn} of the run"
        raise Conflict(
            f"cannot undo {what} {run_id}: the cells or files were changed after it "
            f"({listing}). Nothing was restored; undo with force to restore anyway.",
            code=ErrorCode.UNDO_CONFLICT,
        )
    for file in files:
        result.files.append(await asyncio.to_thread(_restore_file, project, file, force))
    for plan in plans:
        if _already_restored(plan):
            status = "unchanged"
        else:
            await plan.doc.restore(plan.before)
            status = "restored"
        forced = force and status == "restored" and _conflict(plan) is not None
        result.notebooks.append(
            UndoneNotebook(path=plan.path, status=status, backend=plan.doc.kind, forced=forced)
        )
    return result


async def _plan(
    store: Store, access: NotebookAccess, project: Path, path: str, span: list[Change]
) -> _Plan:
    first, last = span[0], span[-1]
    assert first.before_sha is not None
    assert last.after_sha is not None
    before = await asyncio.to_thread(store.get_blob, first.before_sha)
    after = await asyncio.to_thread(store.get_blob, last.after_sha)
    shas = dict.fromkeys(c.after_sha for c in span[:-1] if c.after_sha)
    lefts = [await asyncio.to_thread(store.get_blob, sha) for sha in shas]
    doc = await access.open(access.locate(project, path))
    return _Plan(path, doc, await doc.read(), before, after, lefts)


def _already_restored(plan: _Plan) -> bool:
    if plan.doc.kind == "file":
        return plan.state.content == plan.before
    # Outputs too: a turn that only ran cells changed nothing but them.
    return _with_outputs(plan.state.notebook) == _with_outputs(parse(plan.before))


def _with_outputs(notebook: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The fingerprint, plus each cell's outputs and execution count."""
    cells = normalized(notebook)["cells"]
    return [
        (*fp, json.dumps(c.get("outputs") or [], sort_keys=True), c.get("execution_count"))
        for fp, c in zip(fingerprint(notebook), cells, strict=True)
    ]


def _conflict(plan: _Plan) -> str | None:
    """Why the notebook is not what the run left (None if it is, or is already undone)."""
    if _already_restored(plan):
        return None
    now, left = fingerprint(plan.state.notebook), fingerprint(parse(plan.after))
    if now == left or any(now == fingerprint(parse(earlier)) for earlier in plan.lefts):
        return None
    now_ids, left_ids = {c[0]: c for c in now}, {c[0]: c for c in left}
    reasons = [f"cell {i} added" for i in now_ids if i not in left_ids]
    reasons += [f"cell {i} deleted" for i in left_ids if i not in now_ids]
    reasons += [
        f"cell {i} edited" for i, c in now_ids.items() if i in left_ids and left_ids[i] != c
    ]
    return ", ".join(reasons) or "cells were moved"


# --- files -----------------------------------------------------------------------------------


@dataclass
class _FilePlan:
    path: str
    now: bytes | None  # None: the file does not exist
    before: bytes | None  # None: the run created it
    lefts: set[str | None]  # the sha256 of what each change left (None: deleted)


def _file_plan(store: Store, project: Path, span: list[Change]) -> _FilePlan:
    first = span[0]
    before = None if first.before_sha is None else store.get_blob(first.before_sha)
    now = bytes_or_none(project.resolve(), first.path)
    return _FilePlan(first.path, now, before, {c.after_sha for c in span})


def _file_conflict(plan: _FilePlan) -> bool:
    """The file holds what the run never left there (nor is back to its snapshot): someone
    else changed it. (What an earlier undo of the run's later turns left counts as the run's.)"""
    if plan.now == plan.before:
        return False
    now_sha = None if plan.now is None else hashlib.sha256(plan.now).hexdigest()
    return now_sha not in plan.lefts


def _restore_file(project: Path, plan: _FilePlan, force: bool) -> UndoneFile:
    root = project.resolve()
    if plan.now == plan.before:
        return UndoneFile(path=plan.path, status="unchanged")
    forced = force and _file_conflict(plan)
    if plan.before is None:
        delete_in_project(root, plan.path)
        return UndoneFile(path=plan.path, status="removed", forced=forced)
    write_bytes_in_project(root, plan.path, plan.before)
    return UndoneFile(path=plan.path, status="restored", forced=forced)
