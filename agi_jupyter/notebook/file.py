"""The headless backend: the ``.ipynb`` file, read and written through nbformat.

Used when no JupyterLab tab has the notebook open (``agi`` on the command line, nbclient, a
server run on a closed notebook). An operation reads the file, checks its precondition,
applies it and writes the result atomically; if the file changed on disk while that happened
(another writer), nothing is written and the operation is refused
(``NOTEBOOK_CHANGED_ON_DISK``). Operations on one file in this process are serialised.

The file is read and written like the file tools do (``tools.paths``): through folder
descriptors from its confinement root (the project, or the server root for the notebook the
user has open), without following a symlink out, so swapping a folder for a symlink while
a change is made cannot read or write a file outside.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from agi_jupyter.errors import ErrorCode
from agi_jupyter.notebook.backend import Applied, Loaded
from agi_jupyter.notebook.model import canonical_bytes, nbf, parse, with_cell_ids
from agi_jupyter.notebook.ops import NotebookError, Op, Replace, apply_op
from agi_jupyter.tools.paths import MissingPath, read_bytes_in_project, write_bytes_in_project

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(path), threading.Lock())


class FileBackend:
    kind = "file"

    def __init__(self, root: Path, path: Path, shown: str) -> None:
        self.root = root  # what the file is confined to (already resolved)
        self.path = path
        self.rel = path.relative_to(root).as_posix()
        self.shown = shown  # the path as the model and the user know it

    async def load(self) -> Loaded:
        return await asyncio.to_thread(self._load)

    async def apply(self, op: Op) -> Applied:
        return await asyncio.to_thread(self._apply, op)

    def _read(self) -> bytes:
        try:
            return read_bytes_in_project(self.root, self.rel)[0]
        except MissingPath:
            raise NotebookError(
                f"no notebook at {self.shown}", code=ErrorCode.NOTEBOOK_NOT_FOUND
            ) from None

    def _load(self) -> Loaded:
        data = self._read()
        try:
            return Loaded(parse(data), data)
        except (ValueError, UnicodeDecodeError) as e:
            raise NotebookError(f"{self.shown} is not a readable notebook: {e}") from None

    def _apply(self, op: Op) -> Applied:
        with _lock_for(self.path):
            loaded = self._load()
            if isinstance(op, Replace):
                after = op.content
            else:
                notebook = with_cell_ids(loaded.notebook)
                apply_op(notebook, op)
                _validate(notebook, self.shown)
                after = canonical_bytes(notebook)
            if self._read() != loaded.content:
                raise NotebookError(
                    f"{self.shown} changed on disk while the change was being made; nothing "
                    "was written. Read the notebook again and retry.",
                    code=ErrorCode.NOTEBOOK_CHANGED_ON_DISK,
                )
            write_bytes_in_project(self.root, self.rel, after)
            return Applied(loaded.content, after)


def _validate(notebook: dict[str, object], shown: str) -> None:
    try:
        nbf().validate(nbf().from_dict(notebook))
    except nbf().ValidationError as e:
        raise NotebookError(
            f"the change would make {shown} an invalid notebook: {e.message}",
            code=ErrorCode.INVALID_NOTEBOOK,
        ) from None
