"""A cell-level diff of two versions of a notebook: the ``notebook_diff`` artifact.

Each changed cell is one unified diff of its source, with a header naming the notebook and the
cell (``a/nb.ipynb [cell 1f2e… code]``); changed outputs are a diff of their one-line
summaries. The magic output, the widget and the side panel show ``data.patch`` like the
``file_diff`` of ``apply_patch``.
"""

from __future__ import annotations

import difflib
from typing import Any

from agi_jupyter.notebook.model import NotebookJSON, joined, summarize_outputs
from agi_jupyter.tools.base import ArtifactDraft


def cell_diff(before: NotebookJSON, after: NotebookJSON, path: str) -> tuple[str, dict[str, int]]:
    """The patch text and counts (cells added, edited, deleted; outputs changed)."""
    old = {str(c.get("id")): c for c in before.get("cells") or []}
    new = {str(c.get("id")): c for c in after.get("cells") or []}
    counts = {"cells_added": 0, "cells_edited": 0, "cells_deleted": 0, "outputs_changed": 0}
    chunks: list[str] = []
    for cell_id in [*new, *(i for i in old if i not in new)]:
        a, b = old.get(cell_id), new.get(cell_id)
        name = label(path, cell_id, b or a or {})
        source_a = None if a is None else joined(a.get("source"))
        source_b = None if b is None else joined(b.get("source"))
        if source_a != source_b:
            key = "cells_added" if a is None else "cells_deleted" if b is None else "cells_edited"
            counts[key] += 1
            chunks.append(unified(source_a, source_b, name))
        if a is not None and b is not None and output_lines(a) != output_lines(b):
            counts["outputs_changed"] += 1
            chunks.append(
                unified("\n".join(output_lines(a)), "\n".join(output_lines(b)), name + " outputs")
            )
    return "".join(chunks), counts


def label(path: str, cell_id: str, cell: dict[str, Any]) -> str:
    return f"{path} [cell {cell_id} {cell.get('cell_type', '')}]".replace("  ", " ")


def output_lines(cell: dict[str, Any]) -> list[str]:
    return summarize_outputs(cell.get("outputs") or []) + (
        [f"execution_count: {cell.get('execution_count')}"]
        if cell.get("cell_type") == "code"
        else []
    )


def unified(old: str | None, new: str | None, label: str) -> str:
    lines = difflib.unified_diff(
        [] if old is None else old.splitlines(keepends=True),
        [] if new is None else new.splitlines(keepends=True),
        fromfile="/dev/null" if old is None else f"a/{label}",
        tofile="/dev/null" if new is None else f"b/{label}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def diff_draft(before: NotebookJSON, after: NotebookJSON, path: str, backend: str) -> ArtifactDraft:
    patch, counts = cell_diff(before, after, path)
    return ArtifactDraft(
        kind="notebook_diff",
        title=f"Changes to {path}",
        mime="text/x-diff",
        data={
            "patch_format": "unified",
            "patch": patch,
            "path": path,
            "backend": backend,
            "summary": counts,
        },
    )


def describe(counts: dict[str, int]) -> str:
    """``1 cell edited, 2 outputs changed``."""
    parts = []
    for name, n in counts.items():
        if n:
            noun, verb = name.split("_")
            parts.append(f"{n} {noun if n > 1 else noun.rstrip('s')} {verb}")
    return ", ".join(parts) or "no cell changed"
