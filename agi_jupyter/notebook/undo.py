"""Undo a run: every notebook it changed goes back to how it was before the run's first change.

The snapshot before a run's first change to a notebook is restored through the backend that
holds the notebook now (the file byte for byte; the shared document or the open tab as the
same cells). Undo refuses, naming the cells, when a notebook's cells (ids, types, sources)
are no longer what the run left, because someone changed them afterwards, unless ``force``.
A notebook already back to its snapshot is left alone (``unchanged``). Every notebook is
checked before any is restored, so a refusal changes nothing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agi_jupyter.errors import Conflict
from agi_jupyter.notebook.access import NotebookAccess
from agi_jupyter.notebook.document import NotebookDocument, NotebookState
from agi_jupyter.notebook.model import fingerprint, parse
from agi_jupyter.records import Change
from agi_jupyter.store import Store


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
class UndoResult:
    run_id: str
    notebooks: list[UndoneNotebook] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "notebooks": [n.to_dict() for n in self.notebooks]}


@dataclass
class _Plan:
    path: str
    doc: NotebookDocument
    state: NotebookState
    before: bytes
    after: bytes


def run_changes(store: Store, run_id: str) -> dict[str, tuple[Change, Change]]:
    """Per notebook the run changed: its first and its last change."""
    spans: dict[str, tuple[Change, Change]] = {}
    for change in store.list_changes(run_id=run_id):
        if change.kind == "notebook":
            first = spans.get(change.path, (change, change))[0]
            spans[change.path] = (first, change)
    return spans


async def undo_run(
    store: Store, access: NotebookAccess, project: Path, run_id: str, *, force: bool = False
) -> UndoResult:
    run = await asyncio.to_thread(store.get_run, run_id)
    if not run.is_terminal:
        raise Conflict(f"run {run_id} is still {run.status}; cancel it first", code="RUN_ACTIVE")
    spans = await asyncio.to_thread(run_changes, store, run_id)
    plans = [await _plan(store, access, project, path, span) for path, span in spans.items()]
    result = UndoResult(run_id=run_id)
    conflicts = [] if force else [(p.path, why) for p in plans if (why := _conflict(p))]
    if conflicts:
        listing = "; ".join(f"{path}: {why}" for path, why in conflicts)
        raise Conflict(
            f"cannot undo run {run_id}: the cells were changed after the run ({listing}). "
            "Nothing was restored; undo with force to restore anyway.",
            code="UNDO_CONFLICT",
        )
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
    store: Store, access: NotebookAccess, project: Path, path: str, span: tuple[Change, Change]
) -> _Plan:
    first, last = span
    assert first.before_sha is not None
    assert last.after_sha is not None
    before = await asyncio.to_thread(store.get_blob, first.before_sha)
    after = await asyncio.to_thread(store.get_blob, last.after_sha)
    doc = await access.open(access.locate(project, path))
    return _Plan(path, doc, await doc.read(), before, after)


def _already_restored(plan: _Plan) -> bool:
    if plan.doc.kind == "file":
        return plan.state.content == plan.before
    return fingerprint(plan.state.notebook) == fingerprint(parse(plan.before))


def _conflict(plan: _Plan) -> str | None:
    """Why the notebook is not what the run left (None if it is, or is already undone)."""
    if _already_restored(plan):
        return None
    now, left = fingerprint(plan.state.notebook), fingerprint(parse(plan.after))
    if now == left:
        return None
    now_ids, left_ids = {c[0]: c for c in now}, {c[0]: c for c in left}
    reasons = [f"cell {i} added" for i in now_ids if i not in left_ids]
    reasons += [f"cell {i} deleted" for i in left_ids if i not in now_ids]
    reasons += [
        f"cell {i} edited" for i, c in now_ids.items() if i in left_ids and left_ids[i] != c
    ]
    return ", ".join(reasons) or "cells were moved"
