"""How notebook tool results read for the model: cells, receipts, executions."""

from __future__ import annotations

from agi_jupyter.notebook.document import NotebookState, Receipt
from agi_jupyter.notebook.execution import Execution
from agi_jupyter.notebook.model import CellView, clip, summarize_outputs

MAX_READ_CHARS = 40_000
MAX_ERROR_CHARS = 3_000


def render_cells(state: NotebookState, cells: list[CellView], *, include_outputs: bool) -> str:
    """Each cell with its id, type, hash, execution count, stale flag, source and outputs;
    cells past ``MAX_READ_CHARS`` are listed by id only."""
    where = {"file": "the file", "rtc": "the shared (RTC) document", "tab": "the open tab"}
    lines = [
        f"notebook {state.path}: {len(state.cells)} cells (read from "
        f"{where.get(state.backend, state.backend)})"
    ]
    size = len(lines[0])
    skipped: list[str] = []
    for cell in cells:
        block = _cell_block(cell, include_outputs)
        if size + len(block) > MAX_READ_CHARS and not skipped and len(lines) > 1:
            skipped.append(cell.id)
            continue
        if skipped:
            skipped.append(cell.id)
            continue
        lines.append(block)
        size += len(block)
    if skipped:
        lines.append(
            f"[{len(skipped)} more cells not shown (too long): {', '.join(skipped)}; "
            "read them with cell_ids]"
        )
    return "\n\n".join(lines)


def _cell_block(cell: CellView, include_outputs: bool) -> str:
    head = (
        f"### cell {cell.index} · id {cell.id} · {cell.cell_type} · source_hash {cell.source_hash}"
    )
    if cell.cell_type == "code":
        count = "never run" if cell.execution_count is None else f"[{cell.execution_count}]"
        stale = {True: " · stale", False: "", None: " · stale: unknown"}[cell.stale]
        head += f" · {count}{stale if cell.execution_count is not None else ''}"
    fence = "```"
    while fence in cell.source:
        fence += "`"
    lang = "python" if cell.cell_type == "code" else cell.cell_type
    parts = [head, f"{fence}{lang}\n{cell.source}\n{fence}"]
    if include_outputs and cell.cell_type == "code" and cell.outputs:
        parts.append("outputs:\n" + "\n".join(f"- {line}" for line in cell.outputs))
    return "\n".join(parts)


def render_receipt(verb: str, receipt: Receipt, path: str) -> str:
    if not receipt.landed:
        return (
            f"the change did NOT land: re-reading {path} after the {verb} shows "
            f"{receipt.detail or 'something else'} (cell {receipt.cell_id})"
        )
    if receipt.op == "delete":
        return f"deleted cell {receipt.cell_id} from {path}; receipt: re-read, the cell is gone"
    return (
        f"{verb} cell {receipt.cell_id} in {path} (index {receipt.index}); receipt: re-read "
        f"cell {receipt.cell_id}, source_hash {receipt.source_hash}"
    )


def render_execution(cell_id: str, execution: Execution, interrupt_after: float | None) -> str:
    count = execution.execution_count
    head = f"cell {cell_id}: " + (f"ran as [{count}]" if count is not None else "ran")
    if execution.interrupted and count is None and not execution.outputs:
        return f"cell {cell_id}: not run (interrupted before the kernel started it)"
    if execution.interrupted:
        after = f" after {interrupt_after:g} s" if interrupt_after is not None else ""
        head += f"; interrupted{after} (kernel interrupt)"
    elif execution.error:
        head += "; raised an error"
    lines = [head]
    lines += [f"- {line}" for line in summarize_outputs(execution.outputs)]
    if execution.error and not execution.interrupted:
        lines.append("traceback:\n" + clip(execution.error, MAX_ERROR_CHARS))
    if len(lines) == 1:
        lines.append("- (no output)")
    return "\n".join(lines)
