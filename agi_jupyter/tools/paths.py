"""Confine file tools to the project folder.

Every path a model passes goes through ``resolve_in_project``: relative paths are taken from the
project root, symlinks are followed, and whatever ends up outside the root is refused with
``PathOutsideProject``. The store's own database files are never writable by file tools.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from agi_jupyter.errors import PathOutsideProject, ToolError

PROTECTED_PREFIX = ".agi/agi.sqlite"
"""The store database and its ``-wal``/``-shm``/``-journal`` companions."""


def resolve_in_project(root: Path | str, path: Path | str, *, for_write: bool = False) -> Path:
    """The resolved absolute form of ``path`` (relative to ``root``), confined to ``root``.

    Raises ``PathOutsideProject`` when the path (after ``..`` and symlinks) leaves the root, or
    when ``for_write`` and it names the store database.
    """
    base = Path(root).resolve()
    text = str(path).strip()
    if not text:
        raise ToolError("an empty path was given; use '.' for the project folder")
    if "\x00" in text:
        raise ToolError(f"path {text!r} contains a NUL character")
    candidate = Path(text)
    if not candidate.is_absolute():
        candidate = base / candidate
    resolved = Path(os.path.realpath(candidate))
    if not resolved.is_relative_to(base):
        via = " (through a symlink)" if _lexically_inside(base, candidate) else ""
        raise PathOutsideProject(
            f"path {text!r} is outside the project folder{via}; "
            "file tools only work on paths inside the project"
        )
    if for_write and relative_posix(base, resolved).startswith(PROTECTED_PREFIX):
        raise PathOutsideProject(
            f"path {text!r} is the agent store database, which file tools may not write"
        )
    return resolved


def _lexically_inside(base: Path, candidate: Path) -> bool:
    return Path(os.path.normpath(candidate)).is_relative_to(base)


def relative_posix(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` with forward slashes (``.`` for the root itself)."""
    rel = path.relative_to(root).as_posix()
    return rel or "."


def is_inside(root: Path, path: Path) -> bool:
    """Whether ``path`` (symlinks followed) lies inside the already resolved ``root``."""
    return Path(os.path.realpath(path)).is_relative_to(root)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``; an existing file is replaced through a temporary file and a
    rename (keeping its mode), so a reader never sees it half written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_bytes(data)
        return
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
