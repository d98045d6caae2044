"""What a notebook backend does: load the notebook, apply one operation atomically.

Three implement it: the file through nbformat (``notebook.file``), the server's shared RTC
document (``server.notebooks.rtc``) and an open JupyterLab tab (``server.notebooks.bridge``
for server runs, ``kernel.tab`` for kernel runs). ``apply`` checks an operation's
precondition and applies it in one step with nothing else changing the notebook in between,
and reports the content just before and just after it (the snapshots undo restores).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from agi_jupyter.notebook.model import NotebookJSON
from agi_jupyter.notebook.ops import Op


@dataclass(frozen=True)
class Loaded:
    """The notebook (normalised) and its content as bytes: the file's own bytes for the file
    backend, ``model.canonical_bytes`` for the others."""

    notebook: NotebookJSON
    content: bytes


@dataclass(frozen=True)
class Applied:
    before: bytes
    after: bytes


class NotebookBackend(Protocol):
    kind: str
    """``file``, ``rtc`` or ``tab``: where the notebook was read and changed."""

    async def load(self) -> Loaded: ...

    async def apply(self, op: Op) -> Applied:
        """Apply ``op`` or refuse it (``NotebookError``) without changing anything."""
        ...
