"""Protected cells: cell metadata ``agi.protected`` marks a cell agents may not run, edit or
delete (``notebook.tools`` refuses them with ``CELL_PROTECTED``); a person toggles it
(``%agi protect CELL`` / ``unprotect``, ``Agi.protect_cell``).

The toggle puts the whole notebook back with the cell's metadata changed, through the backend
that holds it now (the open tab or shared document, else the file), as undo does; it is the
user's change, not a run's, so it is not recorded as one.
"""

from __future__ import annotations

import copy
from pathlib import Path

from agi_jupyter.notebook.access import NotebookAccess
from agi_jupyter.notebook.model import canonical_bytes, find_cell, is_protected
from agi_jupyter.notebook.ops import cell_not_found


async def set_protected(
    access: NotebookAccess, project: Path, path: str, cell_id: str, protected: bool
) -> bool:
    """Mark (or unmark) the cell protected; whether it changed."""
    doc = await access.open(access.locate(project, path))
    notebook = copy.deepcopy((await doc.read()).notebook)
    found = find_cell(notebook, cell_id)
    if found is None:
        raise cell_not_found(cell_id)
    cell = found[1]
    if is_protected(cell) == protected:
        return False
    metadata = cell.setdefault("metadata", {})
    agi = dict(metadata.get("agi") or {})
    if protected:
        agi["protected"] = True
    else:
        agi.pop("protected", None)
    if agi:
        metadata["agi"] = agi
    else:
        metadata.pop("agi", None)
    await doc.restore(canonical_bytes(notebook))
    return True
