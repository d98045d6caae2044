"""The notebook as the agent's workspace: cells read and changed with hash preconditions and
receipts, run in the notebook's kernel, snapshotted per run and undone.

    model      source_hash, cell views (outputs summarised, stale), canonical serialisation
    ops        insert / edit / delete / set_outputs / replace, and how they apply to a dict
    backend    the backend protocol (load, apply atomically); file: the nbformat backend
    document   NotebookDocument: reads with hashes, changes with receipts
    access     NotebookAccess (per front door: which backend, how cells run); HeadlessAccess
    execution  one cell through the Jupyter protocol, outputs as nbformat; kernels: private ones
    tools      notebook.read/insert/edit/delete/run/wait/interrupt; record: changes in the store
    detached   the cells notebook.run runs on a task of their own, left running under a handle
    images     a cell's PNG/JPEG outputs for the model; ledger: the agent's executions recorded
    protect    protected cells (metadata agi.protected), toggled by a person
    stale      stale cells from the ledger: changed since they ran, or reading re-bound names
    diff       the cell-level notebook_diff artifact; outline: the system-prompt outline
    changes    a run's changes as records (one per cell, one per file) with unified diffs
    merge      reverting one cell change by a three-way merge; undo: undo and redo by merge
"""

from agi_jupyter.notebook.access import HeadlessAccess, NotebookAccess, NotebookTarget
from agi_jupyter.notebook.changes import ChangeRecord
from agi_jupyter.notebook.context import NotebookContext
from agi_jupyter.notebook.detached import Executions
from agi_jupyter.notebook.document import NotebookDocument, Receipt
from agi_jupyter.notebook.model import source_hash
from agi_jupyter.notebook.ops import NotebookError
from agi_jupyter.notebook.tools import notebook_tools
from agi_jupyter.notebook.undo import UndoResult, run_changeset, undo_run

__all__ = [
    "ChangeRecord",
    "Executions",
    "HeadlessAccess",
    "NotebookAccess",
    "NotebookContext",
    "NotebookDocument",
    "NotebookError",
    "NotebookTarget",
    "Receipt",
    "UndoResult",
    "notebook_tools",
    "run_changeset",
    "source_hash",
    "undo_run",
]
