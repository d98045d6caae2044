"""The changes a notebook tool makes, as data, and how they apply to a notebook dict.

Every backend applies the same operations: the file backend with ``apply_op`` below, the
RTC backend on the shared document, the JupyterLab tab in TypeScript (``wire.change_of`` is
the form it receives). Edits and deletes carry the source the agent saw (``expected_source``) and
are refused, changing nothing, when the cell holds anything else by the time they apply.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import Any

from agi_jupyter.errors import ErrorCode, ToolError
from agi_jupyter.notebook.model import CELL_TYPES, CellJSON, NotebookJSON, find_cell, source_hash


class NotebookError(ToolError):
    """A notebook operation that was refused; ``code`` says why (the model can act on it)."""


def new_cell_id() -> str:
    """An nbformat 4.5 cell id (as JupyterLab makes them)."""
    return str(uuid.uuid4())


@dataclass(frozen=True, kw_only=True)
class Insert:
    cell_type: str
    source: str
    cell_id: str = field(default_factory=new_cell_id)
    after_cell_id: str | None = None
    index: int | None = None  # with neither: at the end
    metadata: dict[str, Any] | None = None  # (a cell put back by undo: its metadata)


@dataclass(frozen=True, kw_only=True)
class Edit:
    cell_id: str
    expected_source: str
    source: str
    metadata: dict[str, Any] | None = None  # None: left as it is (undo: as it was)


@dataclass(frozen=True, kw_only=True)
class Delete:
    cell_id: str
    expected_source: str


@dataclass(frozen=True, kw_only=True)
class SetOutputs:
    """The outputs and execution count of a code cell, after the agent ran it."""

    cell_id: str
    outputs: list[dict[str, Any]]
    execution_count: int | None


@dataclass(frozen=True, kw_only=True)
class Replace:
    """The whole notebook (undo): ``content`` is the snapshot, ``notebook`` its parsed form.
    The file backend writes ``content`` byte for byte; the others apply ``notebook``."""

    content: bytes
    notebook: NotebookJSON


Op = Insert | Edit | Delete | SetOutputs | Replace


def apply_op(notebook: NotebookJSON, op: Op) -> None:
    """Apply ``op`` to a normalised notebook dict in place (``NotebookError`` if refused)."""
    if isinstance(op, Replace):
        notebook.clear()
        notebook.update(copy.deepcopy(op.notebook))
        return
    cells: list[CellJSON] = notebook["cells"]
    if isinstance(op, Insert):
        cell = new_cell(op.cell_type, op.source, op.cell_id)
        cell["metadata"] = copy.deepcopy(op.metadata or {})
        cells.insert(insert_position(notebook, op), cell)
        return
    index, cell = locate(notebook, op.cell_id)
    if isinstance(op, SetOutputs):
        if cell.get("cell_type") != "code":
            raise NotebookError(
                f"cell {op.cell_id} is not a code cell", code=ErrorCode.NOT_A_CODE_CELL
            )
        cell["outputs"] = list(op.outputs)
        cell["execution_count"] = op.execution_count
        return
    check_source(cell, op.cell_id, op.expected_source)
    if isinstance(op, Edit):
        cell["source"] = op.source
        if op.metadata is not None:
            cell["metadata"] = copy.deepcopy(op.metadata)
    else:
        del cells[index]


def insert_position(notebook: NotebookJSON, op: Insert) -> int:
    cells = notebook["cells"]
    if op.after_cell_id is not None:
        return locate(notebook, op.after_cell_id)[0] + 1
    if op.index is None:
        return len(cells)
    if not 0 <= op.index <= len(cells):
        raise NotebookError(
            f"index {op.index} is out of range: the notebook has {len(cells)} cells "
            f"(0 inserts at the top, {len(cells)} at the end)",
            code=ErrorCode.INDEX_OUT_OF_RANGE,
        )
    return op.index


def locate(notebook: NotebookJSON, cell_id: str) -> tuple[int, CellJSON]:
    found = find_cell(notebook, cell_id)
    if found is None:
        raise cell_not_found(cell_id)
    return found


def cell_not_found(cell_id: str) -> NotebookError:
    return NotebookError(
        f"no cell with id {cell_id!r} in the notebook (it may have been deleted); "
        "call notebook.read for the current cells",
        code=ErrorCode.CELL_NOT_FOUND,
    )


def check_source(cell: CellJSON, cell_id: str, expected_source: str) -> None:
    if cell.get("source") != expected_source:
        raise hash_mismatch(cell_id, source_hash(str(cell.get("source"))))


def hash_mismatch(cell_id: str, current: str) -> NotebookError:
    return NotebookError(
        f"cell {cell_id} changed since you read it (its source_hash is now {current}); "
        "nothing was written. Call notebook.read and retry with the new hash.",
        code=ErrorCode.HASH_MISMATCH,
    )


def new_cell(cell_type: str, source: str, cell_id: str) -> CellJSON:
    if cell_type not in CELL_TYPES:
        raise NotebookError(f"cell_type must be one of {', '.join(CELL_TYPES)}")
    cell: CellJSON = {"id": cell_id, "cell_type": cell_type, "metadata": {}, "source": source}
    if cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    return cell
