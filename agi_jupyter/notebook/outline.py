"""The compact outline of a notebook that ``%%agi`` and the side panel put in the system prompt.

One line per cell (index, id, type, first line of its source, ``[n]`` execution count,
``stale``, the active cell marked), bounded in size: with more cells than fit, the cells
around the active one are kept and the rest counted. The full cells come through
``notebook.read``.
"""

from __future__ import annotations

from agi_jupyter.notebook.model import CellView

MAX_CHARS = 3_000  # ~750 tokens
MAX_LINE = 90


def outline(path: str, cells: list[CellView], active_cell_id: str | None = None) -> str:
    lines = [_line(cell, cell.id == active_cell_id) for cell in cells]
    active = next((i for i, c in enumerate(cells) if c.id == active_cell_id), len(cells) - 1)
    shown = _window(lines, active)
    head = (
        f"## The notebook {path}\n"
        f"{len(cells)} cells (index, id, type, first line; [n] = execution count). "
        "Read cells with notebook.read before changing them; edits and deletes need the "
        "cell's source_hash."
    )
    return head + "\n" + "\n".join(shown)


def _line(cell: CellView, active: bool) -> str:
    first = next((ln.strip() for ln in cell.source.splitlines() if ln.strip()), "(empty)")
    if len(first) > MAX_LINE:
        first = first[: MAX_LINE - 1] + "…"
    marks = []
    if cell.cell_type == "code":
        marks.append(f"[{cell.execution_count}]" if cell.execution_count is not None else "[ ]")
        if cell.stale:
            marks.append("stale")
    if active:
        marks.append("<- active cell")
    return f"{cell.index} {cell.id} {cell.cell_type}: {first} {' '.join(marks)}".rstrip()


def _window(lines: list[str], active: int) -> list[str]:
    """The lines that fit in ``MAX_CHARS``, growing outwards from the active cell."""
    if sum(len(line) + 1 for line in lines) <= MAX_CHARS:
        return lines
    low = high = max(0, min(active, len(lines) - 1))
    size = len(lines[low]) + 1 if lines else 0
    while True:
        grown = False
        for candidate in (high + 1, low - 1):
            if 0 <= candidate < len(lines) and size + len(lines[candidate]) + 1 <= MAX_CHARS:
                size += len(lines[candidate]) + 1
                low, high = min(low, candidate), max(high, candidate)
                grown = True
        if not grown:
            break
    kept = lines[low : high + 1]
    if low:
        kept.insert(0, f"… {low} cells above not shown")
    if high < len(lines) - 1:
        kept.append(f"… {len(lines) - 1 - high} cells below not shown")
    return kept
