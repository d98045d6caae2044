"""``NotebookDocument``: cells read with their hashes, changes made with preconditions and
answered with receipts, over whichever backend holds the notebook.

A change is checked twice: here against the ``expected_hash`` the agent passed (a clear
``HASH_MISMATCH`` before anything is sent), and again by the backend against the source it
was computed from, at the moment it applies (someone may type in between). After a change
the notebook is read again, and the *receipt* says what that re-read shows: the cell's id and
its hash, and whether the change landed. A change is never reported done on the backend's
word alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agi_jupyter.notebook.backend import Applied, Loaded, NotebookBackend
from agi_jupyter.notebook.model import (
    CellView,
    History,
    NotebookJSON,
    cell_views,
    find_cell,
    parse,
    source_hash,
    stamped,
)
from agi_jupyter.notebook.ops import (
    Delete,
    Edit,
    Insert,
    Op,
    Replace,
    SetOutputs,
    cell_not_found,
    hash_mismatch,
)


@dataclass(kw_only=True)
class NotebookState:
    path: str
    backend: str
    notebook: NotebookJSON
    content: bytes
    cells: list[CellView]


@dataclass(kw_only=True)
class Receipt:
    """What re-reading the notebook after a change shows."""

    op: str
    cell_id: str | None
    landed: bool
    source_hash: str | None = None
    index: int | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "cell_id": self.cell_id,
            "landed": self.landed,
            "source_hash": self.source_hash,
            "index": self.index,
            "detail": self.detail,
        }


@dataclass(kw_only=True)
class Mutation:
    receipt: Receipt
    before: bytes
    after: bytes
    backend: str
    before_cell_hash: str | None = None


class NotebookDocument:
    def __init__(self, backend: NotebookBackend, path: str) -> None:
        self.backend = backend
        self.path = path

    @property
    def kind(self) -> str:
        return self.backend.kind

    async def read(self, history: History | None = None) -> NotebookState:
        loaded = await self.backend.load()
        return self._state(loaded, history)

    def _state(self, loaded: Loaded, history: History | None = None) -> NotebookState:
        return NotebookState(
            path=self.path,
            backend=self.backend.kind,
            notebook=loaded.notebook,
            content=loaded.content,
            cells=cell_views(loaded.notebook, history),
        )

    # --- changes ---------------------------------------------------------------------------

    async def insert(
        self,
        cell_type: str,
        source: str,
        *,
        after_cell_id: str | None = None,
        index: int | None = None,
        provenance: Mapping[str, Any] | None = None,
    ) -> Mutation:
        """A new cell; ``provenance`` (the agent's ``run_id``, ``changed_at``) goes into its
        metadata's ``agi`` key."""
        metadata = stamped({}, provenance) if provenance else None
        op = Insert(
            cell_type=cell_type,
            source=source,
            after_cell_id=after_cell_id,
            index=index,
            metadata=metadata,
        )
        applied = await self.backend.apply(op)
        return await self._receipt(op, applied, expected=source_hash(source))

    async def edit(
        self,
        cell_id: str,
        expected_hash: str,
        source: str,
        *,
        provenance: Mapping[str, Any] | None = None,
    ) -> Mutation:
        """The cell's new source; with ``provenance``, its metadata as it is with the agent's
        provenance set in ``agi`` (undo puts the metadata back as it was)."""
        cell = await self._checked(cell_id, expected_hash)
        current = str(cell.get("source"))
        metadata = stamped(cell.get("metadata"), provenance) if provenance else None
        op = Edit(cell_id=cell_id, expected_source=current, source=source, metadata=metadata)
        applied = await self.backend.apply(op)
        mutation = await self._receipt(op, applied, expected=source_hash(source))
        mutation.before_cell_hash = expected_hash
        return mutation

    async def delete(self, cell_id: str, expected_hash: str) -> Mutation:
        current = str((await self._checked(cell_id, expected_hash)).get("source"))
        applied = await self.backend.apply(Delete(cell_id=cell_id, expected_source=current))
        mutation = await self._receipt(Delete(cell_id=cell_id, expected_source=current), applied)
        mutation.before_cell_hash = expected_hash
        return mutation

    async def set_outputs(
        self, cell_id: str, outputs: list[dict[str, Any]], execution_count: int | None
    ) -> Mutation:
        op = SetOutputs(cell_id=cell_id, outputs=outputs, execution_count=execution_count)
        return await self._receipt(op, await self.backend.apply(op))

    async def restore(self, content: bytes) -> Mutation:
        """Put the whole notebook back to ``content`` (a snapshot)."""
        op = Replace(content=content, notebook=parse(content))
        return await self._receipt(op, await self.backend.apply(op))

    async def _checked(self, cell_id: str, expected_hash: str) -> dict[str, Any]:
        """The cell as it is now, if its source's hash is the one the agent expects."""
        found = find_cell((await self.backend.load()).notebook, cell_id)
        if found is None:
            raise cell_not_found(cell_id)
        source = str(found[1].get("source"))
        if source_hash(source) != expected_hash:
            raise hash_mismatch(cell_id, source_hash(source))
        return found[1]

    async def _receipt(self, op: Op, applied: Applied, *, expected: str | None = None) -> Mutation:
        reread = (await self.backend.load()).notebook
        receipt = _receipt_of(op, reread, expected)
        return Mutation(
            receipt=receipt, before=applied.before, after=applied.after, backend=self.kind
        )


def _receipt_of(op: Op, notebook: NotebookJSON, expected: str | None) -> Receipt:
    name = type(op).__name__.lower()
    if isinstance(op, Replace):
        return Receipt(op="restore", cell_id=None, landed=True, detail="whole notebook")
    cell_id = op.cell_id
    found = find_cell(notebook, cell_id)
    if isinstance(op, Delete):
        if found is None:
            return Receipt(op=name, cell_id=cell_id, landed=True, detail="cell is gone")
        return Receipt(
            op=name,
            cell_id=cell_id,
            landed=False,
            index=found[0],
            source_hash=source_hash(str(found[1].get("source"))),
            detail="the cell is still in the notebook",
        )
    if found is None:
        return Receipt(op=name, cell_id=cell_id, landed=False, detail="no cell with this id")
    index, cell = found
    current = source_hash(str(cell.get("source")))
    if isinstance(op, SetOutputs):
        landed = cell.get("execution_count") == op.execution_count
        return Receipt(
            op="set_outputs", cell_id=cell_id, landed=landed, source_hash=current, index=index
        )
    landed = current == expected
    detail = "" if landed else f"the cell's source_hash is {current}, not {expected}"
    return Receipt(
        op=name, cell_id=cell_id, landed=landed, source_hash=current, index=index, detail=detail
    )
