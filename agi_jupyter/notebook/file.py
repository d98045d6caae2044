"""The headless backend: the ``.ipynb`` file, read and written through nbformat.

Used when no JupyterLab tab has the notebook open (``agi`` on the command line, nbclient, a
server run on a closed notebook). An operation reads the file, checks its precondition,
applies it and writes the result atomically; if the file changed on disk while that happened
(another writer), nothing is written and the operation is refused
(``NOTEBOOK_CHANGED_ON_DISK``). Operations on one file in this process are serialised.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from agi_jupyter.notebook.backend import Applied, Loaded
from agi_jupyter.notebook.model import canonical_bytes, nbf, parse, with_cell_ids
from agi_jupyter.notebook.ops import NotebookError, Op, Replace, apply_op
from agi_jupyter.tools.paths import write_bytes_atomic

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(path), threading.Lock())


class FileBackend:
    kind = "file"

    def __init__(self, path: Path, shown: str) -> None:
        self.path = path
        self.shown = shown  # the path as the model and the user know it

    async def load(self) -> Loaded:
        return await asyncio.to_thread(self._load)

    async def apply(self, op: Op) -> Applied:
        return await asyncio.to_thread(self._apply, op)

    def _read(self) -> bytes:
        if self.path.is_dir():
            raise NotebookError(f"{self.shown} is a folder, not a notebook")
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            raise NotebookError(f"no notebook at {self.shown}", code="NOTEBOOK_NOT_FOUND") from None

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
                    code="NOTEBOOK_CHANGED_ON_DISK",
                )
            write_bytes_atomic(self.path, after)
            return Applied(loaded.content, after)


def _validate(notebook: dict[str, object], shown: str) -> None:
    try:
        nbf().validate(nbf().from_dict(notebook))
    except nbf().ValidationError as e:
        raise NotebookError(
            f"the change would make {shown} an invalid notebook: {e.message}",
            code="INVALID_NOTEBOOK",
        ) from None
