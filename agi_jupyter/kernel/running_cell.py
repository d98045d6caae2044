"""The id of the running cell, read from the notebook file when the front end sends none.

JupyterLab sends each cell's id with its execute request; nbclient and papermill do not. Every
cell of an nbformat 4.5+ notebook has an ``id`` in the file, so the running cell is found by
its source: the cell whose source is the code being executed. When several cells have that
source, the first one after the cell found last is taken (a notebook runs top to bottom). The
file is parsed again only when it changed on disk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class NotebookCellIds:
    def __init__(self) -> None:
        self._path: Path | None = None
        self._stamp: tuple[int, int] = (0, 0)
        self._cells: list[tuple[str, str]] = []  # (id, source)
        self._last = -1

    def find(self, path: Path, source: str) -> str | None:
        """The id of the cell of ``path`` whose source is ``source``, or None."""
        cells = self._load(path)
        matches = [i for i, (_, text) in enumerate(cells) if text == source]
        if not matches:
            matches = [i for i, (_, text) in enumerate(cells) if text.strip() == source.strip()]
        if not matches:
            return None
        index = next((i for i in matches if i > self._last), matches[0])
        self._last = index
        return cells[index][0]

    def _load(self, path: Path) -> list[tuple[str, str]]:
        try:
            stat = path.stat()
        except OSError:
            return []
        stamp = (stat.st_mtime_ns, stat.st_size)
        if path != self._path or stamp != self._stamp:
            self._path, self._stamp, self._last = path, stamp, -1
            self._cells = read_cells(path)
        return self._cells


def read_cells(path: Path) -> list[tuple[str, str]]:
    """``(id, source)`` of the cells of a notebook file that have an id ([] if unreadable)."""
    try:
        notebook: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    found = []
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict) or not isinstance(cell.get("id"), str):
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        found.append((cell["id"], text))
    return found
