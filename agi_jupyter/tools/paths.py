"""Confine file tools to the project folder, with no window between checking and using a path.

A path that was checked and then re-walked by the kernel can be raced: swap a folder for a
symlink pointing outside between the check and the ``open``, and the write lands outside. So
file tools never hand a checked path back to the kernel. ``locate`` walks the path one
component at a time from a descriptor of the project root, opening every folder relative to
its parent's descriptor with ``O_NOFOLLOW`` (``openat`` semantics); a symlink on the way is
read (``readlinkat``) and resolved inside the same walk, so a link whose target leaves the root
is refused, whenever it appears. The final file is then opened, created, replaced or removed
relative to its parent's descriptor, again without following symlinks.

Public helpers (other tools, e.g. notebook tools, use these):

``locate(root, path)``                 a ``Located`` (parent descriptor + name + relative path)
``read_bytes_in_project(root, path)``  the bytes of a regular file and its relative path
``write_bytes_in_project(root, path, data)``  atomic replace (temporary file + rename)
``delete_in_project(root, path)``      remove a file
``walk_dir_in_project(root, path)``    the entries of a folder tree, opened the same way
``resolve_in_project(root, path)``     the checked absolute path, for display and for things
                                        that need a path (a shell's working folder): not
                                        race-free, never used to open project files

Relative paths start at the project root; absolute ones must lie under it. The store's own
database files are never writable by file tools.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agi_jupyter.errors import PathOutsideProject, ToolError

PROTECTED_PREFIX = ".agi/agi.sqlite"
"""The store database and its ``-wal``/``-shm``/``-journal`` companions."""

MAX_SYMLINKS = 40  # as the kernel's own limit: a loop of links ends with an error
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class MissingPath(ToolError):
    """The file, or a folder on the way to it, does not exist."""


@dataclass
class Located:
    """A path inside the project: the descriptor of its folder, its name in that folder
    (``""`` for the root itself) and its path relative to the root with symlinks resolved.
    Close it (or use it as a context manager) to release the descriptor."""

    parent_fd: int
    name: str
    rel: str

    def close(self) -> None:
        if self.parent_fd >= 0:
            os.close(self.parent_fd)
            self.parent_fd = -1

    def __enter__(self) -> Located:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lstat(self) -> os.stat_result | None:
        """The entry's status (a symlink is not followed); None when it does not exist."""
        try:
            if not self.name:
                return os.stat(self.parent_fd)
            return os.stat(self.name, dir_fd=self.parent_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def open(self, flags: int, mode: int = 0o666) -> int:
        """``openat(parent, name, flags | O_NOFOLLOW)``; the root itself when ``name`` is
        empty. A symlink put in its place since ``locate`` is refused (ELOOP)."""
        if not self.name:
            return os.open(".", flags | os.O_CLOEXEC, dir_fd=self.parent_fd)
        return os.open(self.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.parent_fd)


def locate(
    root: Path | str, path: Path | str, *, for_write: bool = False, create_parents: bool = False
) -> Located:
    """Walk ``path`` (relative to ``root``) to its folder, resolving symlinks inside the root.

    Raises ``PathOutsideProject`` when the path (through ``..`` or a symlink, at any moment of
    the walk) leaves the root, or when ``for_write`` and it names the store database;
    ``ToolError`` when a folder on the way is missing (unless ``create_parents``) or is a file.
    The final component need not exist."""
    text = _checked_text(path)
    root_real = os.path.realpath(root)
    parts = _relative_parts(text, root, root_real)
    walk = _Walk(root_real, text, create_parents=create_parents)
    try:
        located = walk.run(parts)
    finally:
        walk.close()
    try:
        _check_writable(located.rel, text, for_write)
    except PathOutsideProject:
        located.close()
        raise
    return located


def project_relpath(root: Path | str, path: Path | str, *, for_write: bool = False) -> str:
    """The path relative to the root that ``locate`` would reach (symlinks resolved inside the
    root; below a folder that does not exist yet, names taken as they are), for planning
    several changes before making them. Refuses what ``locate`` refuses."""
    text = _checked_text(path)
    root_real = os.path.realpath(root)
    walk = _Walk(root_real, text, create_parents=False, lexical_missing=True)
    try:
        rel = walk.run(_relative_parts(text, root, root_real))
    finally:
        walk.close()
    rel.close()
    _check_writable(rel.rel, text, for_write)
    return rel.rel


def _check_writable(rel: str, text: str, for_write: bool) -> None:
    if for_write and rel.startswith(PROTECTED_PREFIX):
        raise PathOutsideProject(
            f"path {text!r} is the agent store database, which file tools may not write"
        )


def _checked_text(path: Path | str) -> str:
    text = str(path).strip()
    if not text:
        raise ToolError("an empty path was given; use '.' for the project folder")
    if "\x00" in text:
        raise ToolError(f"path {text!r} contains a NUL character")
    return text


def _relative_parts(text: str, root: Path | str, root_real: str) -> list[str]:
    if not os.path.isabs(text):
        return text.split("/")
    for prefix in dict.fromkeys((os.path.abspath(root), root_real)):
        if text == prefix or text.startswith(prefix.rstrip("/") + "/"):
            return text[len(prefix) :].split("/")
    raise _outside(text, via_symlink=False)


def _outside(text: str, *, via_symlink: bool) -> PathOutsideProject:
    via = " (through a symlink)" if via_symlink else ""
    return PathOutsideProject(
        f"path {text!r} is outside the project folder{via}; "
        "file tools only work on paths inside the project"
    )


class _Walk:
    """The state of one ``locate``: the open folders from the root down, their names."""

    def __init__(
        self, root_real: str, text: str, *, create_parents: bool, lexical_missing: bool = False
    ) -> None:
        self.root_real = root_real
        self.text = text
        self.create_parents = create_parents
        self.lexical_missing = lexical_missing  # below a missing folder, names are just names
        self.fds = [os.open(root_real, _DIR_FLAGS)]
        self.names: list[str] = []
        self.hops = 0

    def close(self) -> None:
        for fd in self.fds:
            if fd >= 0:
                os.close(fd)
        self.fds = []

    def run(self, parts: list[str]) -> Located:
        todo = [p for p in parts if p not in ("", ".")]
        todo.reverse()  # a stack: the next component is last
        while todo:
            part = todo.pop()
            if part == "..":
                self._up()
                continue
            if not todo:
                target = self._final_link(part)
                if target is None:
                    return self._result(part)
                self._follow(target, todo)
                continue
            target = self._descend(part)
            if target is not None:
                self._follow(target, todo)
        return self._root_result()

    def _up(self) -> None:
        if len(self.fds) == 1:
            raise _outside(self.text, via_symlink=self.hops > 0)
        fd = self.fds.pop()
        if fd >= 0:
            os.close(fd)
        self.names.pop()

    def _descend(self, part: str) -> str | None:
        """Open folder ``part`` of the current one; its link target if it is a symlink."""
        parent = self.fds[-1]
        try:
            fd = -1 if parent < 0 else os.open(part, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not (self.lexical_missing or self.create_parents):
                shown = self._shown(part)
                raise MissingPath(f"no such folder: {shown} (in {self.text!r})") from None
            if not self.lexical_missing:
                _mkdir_at(parent, part)
                return self._descend(part)
            fd = -1
        except OSError as e:
            if e.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            target = _readlink_at(parent, part)
            if target is None:
                raise ToolError(f"{self._shown(part)} is a file, not a folder") from None
            return target
        self.fds.append(fd)
        self.names.append(part)
        return None

    def _final_link(self, part: str) -> str | None:
        if self.fds[-1] < 0:
            return None
        try:
            info = os.stat(part, dir_fd=self.fds[-1], follow_symlinks=False)
        except FileNotFoundError:
            return None
        return _readlink_at(self.fds[-1], part) if stat.S_ISLNK(info.st_mode) else None

    def _follow(self, target: str, todo: list[str]) -> None:
        self.hops += 1
        if self.hops > MAX_SYMLINKS:
            raise ToolError(f"path {self.text!r}: too many levels of symbolic links")
        if os.path.isabs(target):
            root = self.root_real.rstrip("/") + "/"
            if target != self.root_real and not target.startswith(root):
                raise _outside(self.text, via_symlink=True)
            while len(self.fds) > 1:
                self._up()
            target = target[len(root) :] if target != self.root_real else ""
        todo.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))

    def _shown(self, part: str) -> str:
        return "/".join([*self.names, part])

    def _result(self, name: str) -> Located:
        fd = os.dup(self.fds[-1]) if self.fds[-1] >= 0 else -1
        return Located(parent_fd=fd, name=name, rel="/".join([*self.names, name]))

    def _root_result(self) -> Located:
        fd = os.dup(self.fds[-1]) if self.fds[-1] >= 0 else -1
        return Located(parent_fd=fd, name="", rel="/".join(self.names) or ".")


def _readlink_at(dir_fd: int, name: str) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.EINVAL, errno.ENOENT):
            return None  # not a symlink (any more)
        raise


def _mkdir_at(dir_fd: int, name: str) -> None:
    with contextlib.suppress(FileExistsError):  # made meanwhile: the next open checks it
        os.mkdir(name, 0o777, dir_fd=dir_fd)


# --- reading, writing and removing files ------------------------------------------------------


def read_bytes_in_project(
    root: Path | str, path: Path | str, *, max_bytes: int | None = None
) -> tuple[bytes, str]:
    """The bytes of a regular file of the project and its relative path. ``ToolError`` for a
    folder, a missing file or anything else that is not a regular file; with ``max_bytes``,
    for a larger file."""
    with locate(root, path) as where:
        try:
            fd = where.open(_READ_FLAGS)
        except FileNotFoundError:
            raise MissingPath(f"no such file: {where.rel}") from None
        except OSError as e:
            raise _race_or(e, where.rel) from None
        try:
            info = os.fstat(fd)
            _check_regular(info, where.rel)
            if max_bytes is not None and info.st_size > max_bytes:
                raise ToolError(f"{where.rel} is larger than {max_bytes} bytes")
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as handle:
            return handle.read(), where.rel


def _check_regular(info: os.stat_result, shown: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{shown} is a folder, not a file; use fs.list to see what it holds")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{shown} is not a regular file")


def _race_or(error: OSError, shown: str) -> ToolError:
    if error.errno == errno.ELOOP:
        return ToolError(f"{shown} was replaced by a symlink while it was being opened")
    return ToolError(f"{shown}: {error.strerror}")


def write_bytes_in_project(root: Path | str, path: Path | str, data: bytes) -> str:
    """Write ``data`` to a project file (parent folders are created) and return its relative
    path. The file is replaced through a temporary file and a rename in the same folder
    (keeping an existing file's mode), so a reader never sees it half written."""
    with locate(root, path, for_write=True, create_parents=True) as where:
        if not where.name:
            raise ToolError("the project folder itself is not a file")
        info = where.lstat()
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{where.rel} is a folder, not a file")
        mode = stat.S_IMODE(info.st_mode) if info is not None else None
        _replace_at(where.parent_fd, where.name, data, mode)
        return where.rel


def _replace_at(dir_fd: int, name: str, data: bytes, mode: int | None) -> None:
    tmp = f".agi-write-{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def delete_in_project(root: Path | str, path: Path | str) -> None:
    """Remove a project file (not a folder); a missing file is not an error."""
    with locate(root, path, for_write=True) as where:
        if not where.name:
            raise ToolError("the project folder itself cannot be deleted")
        try:
            os.unlink(where.name, dir_fd=where.parent_fd)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            raise ToolError(f"{where.rel} is a folder, not a file") from None


def stat_in_project(root: Path | str, path: Path | str) -> os.stat_result | None:
    """The status of a project path (the last symlink, if any, resolved inside the root);
    None when it does not exist."""
    try:
        with locate(root, path) as where:
            return where.lstat()
    except MissingPath:
        return None


# --- folders -----------------------------------------------------------------------------------


@dataclass
class DirEntry:
    """One entry met by ``walk_dir_in_project``; ``read`` is valid until the walk moves on."""

    rel: str
    name: str
    is_dir: bool
    is_symlink: bool
    root: str
    dir_fd: int

    def read(self, max_bytes: int) -> bytes | None:
        """The content of a regular file of at most ``max_bytes`` (a symlink is followed
        inside the root); None for anything else."""
        if self.is_symlink:
            try:
                return read_bytes_in_project(self.root, self.rel, max_bytes=max_bytes)[0]
            except ToolError:
                return None
        try:
            fd = os.open(self.name, _READ_FLAGS, dir_fd=self.dir_fd)
        except OSError:
            return None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            os.close(fd)
            return None
        with os.fdopen(fd, "rb") as handle:
            return handle.read()


def walk_dir_in_project(
    root: Path | str,
    path: Path | str,
    *,
    recursive: bool,
    skip: frozenset[str] = frozenset(),
) -> Iterator[DirEntry]:
    """The entries of a project folder in name order (and, with ``recursive``, of its
    sub-folders, depth first), skipping folders named in ``skip``; symlinked folders are
    listed, never descended into. ``ToolError`` when ``path`` is not a folder."""
    root_real = os.path.realpath(root)
    with locate(root, path) as where:
        try:
            fd = where.open(_DIR_FLAGS)
        except FileNotFoundError:
            raise MissingPath(f"no such file or folder: {where.rel}") from None
        except OSError:
            raise ToolError(f"{where.rel} is not a folder") from None
    try:
        base = "" if where.rel == "." else where.rel + "/"
        yield from _walk_fd(fd, base, root_real, recursive=recursive, skip=skip)
    finally:
        os.close(fd)


def _walk_fd(
    fd: int, base: str, root: str, *, recursive: bool, skip: frozenset[str]
) -> Iterator[DirEntry]:
    try:
        with os.scandir(fd) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir()
        except OSError:
            continue
        if is_dir and entry.name in skip:
            continue
        rel = base + entry.name
        yield DirEntry(rel, entry.name, is_dir, is_link, root, fd)
        if not (is_dir and recursive and not is_link):
            continue
        try:
            child = os.open(entry.name, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            continue  # replaced meanwhile (by a symlink, say): not descended into
        try:
            yield from _walk_fd(child, rel + "/", root, recursive=True, skip=skip)
        finally:
            os.close(child)


# --- paths for display and for what needs a path ---------------------------------------------


def resolve_in_project(root: Path | str, path: Path | str, *, for_write: bool = False) -> Path:
    """The absolute path of ``path`` inside ``root`` after ``locate``'s checks (symlinks
    resolved inside the root). Only for display and for what must be given a path (a
    subprocess's working folder): opening it again is not race-free, use the helpers above."""
    base = Path(os.path.realpath(root))
    with locate(root, path, for_write=for_write) as where:
        return base if where.rel == "." else base / where.rel


def relative_posix(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` with forward slashes (``.`` for the root itself)."""
    rel = path.relative_to(root).as_posix()
    return rel or "."


def is_inside(root: Path, path: Path) -> bool:
    """Whether ``path`` (symlinks followed) lies inside the already resolved ``root``."""
    return Path(os.path.realpath(path)).is_relative_to(root)
