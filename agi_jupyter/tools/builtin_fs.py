"""File tools ``fs.read``, ``fs.list``, ``fs.search`` and ``fs.write``, confined to the project.

Every file and folder is opened through ``tools.paths`` (descriptor-relative, no symlink
followed out of the project), never through a path checked first and opened later.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import Field

from agi_jupyter.errors import ToolError
from agi_jupyter.kinds import ToolTrait
from agi_jupyter.tools.base import AnyTool, Tool, ToolArgs, ToolContext, ToolResult
from agi_jupyter.tools.diffs import ChangeOp, FileChange, describe, file_diff_draft
from agi_jupyter.tools.filerecord import write_and_record
from agi_jupyter.tools.paths import (
    DirEntry,
    MissingPath,
    project_relpath,
    read_bytes_in_project,
    stat_in_project,
    walk_dir_in_project,
    write_bytes_in_project,
)

SKIP_DIRS = frozenset(
    {
        ".git",
        ".agi",
        "node_modules",
        "__pycache__",
        ".venv",
        ".ipynb_checkpoints",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)
MAX_READ_BYTES = 48_000
MAX_LINE_CHARS = 4_000
MAX_SEARCH_FILE_BYTES = 4 * 1024 * 1024
SNIFF_BYTES = 8192


def decode_text(data: bytes, shown: str) -> str:
    """UTF-8 text of a file's bytes; a clear ``ToolError`` for binaries and other encodings."""
    if b"\x00" in data[:SNIFF_BYTES]:
        raise ToolError(f"{shown} is a binary file ({len(data)} bytes); fs tools only handle text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(
            f"{shown} is not UTF-8 text ({len(data)} bytes); fs tools only handle text"
        ) from None


def read_text_file(root: Path, path: str) -> tuple[str, str]:
    """The UTF-8 text of a project file and its relative path; a clear ``ToolError`` for
    folders, binaries and missing files."""
    data, shown = read_bytes_in_project(root, path)
    return decode_text(data, shown), shown


def read_text_if_exists(root: Path, path: str) -> str | None:
    """``read_text_file``'s text, or None when there is no such file."""
    try:
        return read_text_file(root, path)[0]
    except MissingPath:
        return None


# --- fs.read ---------------------------------------------------------------------------------


class FsReadArgs(ToolArgs):
    path: str = Field(description="File path, relative to the project folder.")
    offset: int = Field(1, ge=1, description="First line to read, 1-based.")
    limit: int = Field(2000, ge=1, le=10_000, description="Maximum number of lines to read.")


class FsRead(Tool[FsReadArgs]):
    name = "fs.read"
    trait = ToolTrait.READ
    description = (
        "Read a UTF-8 text file of the project. Large files are cut; the note at the end tells "
        "which offset to pass to read on."
    )
    parameters = FsReadArgs
    read_only = True

    async def execute(self, args: FsReadArgs, ctx: ToolContext) -> ToolResult:
        # A page stays under the artifact threshold, so it reaches the model whole.
        budget = min(MAX_READ_BYTES, ctx.config.artifact_threshold - 512)
        return await asyncio.to_thread(self._read, args, ctx.project, budget)

    def _read(self, args: FsReadArgs, root: Path, budget: int) -> ToolResult:
        text, shown = read_text_file(root, args.path)
        lines = text.splitlines(keepends=True)
        start = args.offset - 1
        if start >= len(lines) and lines:
            raise ToolError(f"{shown} has {len(lines)} lines; offset {args.offset} is past its end")
        chosen: list[str] = []
        size = 0
        for line in lines[start : start + args.limit]:
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + " … [line cut]\n"
            size += len(line.encode("utf-8"))
            if size > budget and chosen:
                break
            chosen.append(line)
        end = start + len(chosen)
        text = "".join(chosen) if lines else "(empty file)"
        if end < len(lines):
            text += (
                f"\n[showing lines {start + 1}-{end} of {len(lines)}; "
                f"call fs.read with offset={end + 1} to read on]"
            )
        data = {"path": shown, "start": start + 1, "end": end, "total_lines": len(lines)}
        return ToolResult(output=text, data=data)


# --- fs.list ---------------------------------------------------------------------------------


class FsListArgs(ToolArgs):
    path: str = Field(".", description="Folder to list, relative to the project folder.")
    glob: str | None = Field(
        None, description="Only entries matching this glob (e.g. '*.py'; with '/' on the path)."
    )
    recursive: bool = Field(False, description="Descend into sub-folders.")
    limit: int = Field(500, ge=1, le=5000, description="Maximum number of entries.")


def walk_project(root: Path, top: str, *, recursive: bool) -> Iterator[DirEntry]:
    """The entries under ``top`` in sorted order, skipping SKIP_DIRS and symlinked folders."""
    return walk_dir_in_project(root, top, recursive=recursive, skip=SKIP_DIRS)


def _glob_matches(pattern: str | None, rel: str, name: str) -> bool:
    if pattern is None:
        return True
    target = rel if "/" in pattern else name
    return fnmatch.fnmatch(target, pattern)


class FsList(Tool[FsListArgs]):
    name = "fs.list"
    trait = ToolTrait.READ
    description = (
        "List files and folders of a project folder (folders end with '/'). Skips .git, .agi, "
        "node_modules, __pycache__, .venv and similar."
    )
    parameters = FsListArgs
    read_only = True

    async def execute(self, args: FsListArgs, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._list, args, ctx.project.resolve())

    def _list(self, args: FsListArgs, root: Path) -> ToolResult:
        entries: list[str] = []
        more = 0
        for entry in walk_project(root, args.path, recursive=args.recursive):
            if not _glob_matches(args.glob, entry.rel, entry.name):
                continue
            if len(entries) >= args.limit:
                more += 1
                continue
            entries.append(entry.rel + "/" if entry.is_dir else entry.rel)
        text = "\n".join(entries) if entries else "(no entries)"
        if more:
            text += f"\n[{more} more entries not shown (limit {args.limit})]"
        top = _shown_folder(args.path)
        data = {"path": top, "count": len(entries), "more": more}
        return ToolResult(output=text, data=data)


# --- fs.search -------------------------------------------------------------------------------


class FsSearchArgs(ToolArgs):
    pattern: str = Field(description="Regular expression (or literal text) to look for.")
    path: str = Field(".", description="Folder or file to search, relative to the project.")
    glob: str | None = Field(None, description="Only files matching this glob, e.g. '*.py'.")
    literal: bool = Field(False, description="Treat the pattern as plain text.")
    ignore_case: bool = Field(False, description="Match regardless of case.")
    max_matches: int = Field(100, ge=1, le=1000, description="Stop after this many matches.")


class FsSearch(Tool[FsSearchArgs]):
    name = "fs.search"
    trait = ToolTrait.READ
    description = (
        "Search text files under a project folder for a regular expression (or literal text); "
        "answers with path:line:text lines."
    )
    parameters = FsSearchArgs
    read_only = True

    async def execute(self, args: FsSearchArgs, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._search, args, ctx.project.resolve())

    def _search(self, args: FsSearchArgs, root: Path) -> ToolResult:
        regex = _compile(args)
        info = stat_in_project(root, args.path)
        if info is None:
            raise ToolError(f"no such file or folder: {args.path}")
        files = _files_under(root, args.path) if stat.S_ISDIR(info.st_mode) else [_one(root, args)]
        matches: list[str] = []
        scanned = 0
        for rel, name, read in files:
            if not _glob_matches(args.glob, rel, name):
                continue
            scanned += 1
            for number, line in _text_lines(read):
                if regex.search(line):
                    matches.append(f"{rel}:{number}:{line[:300]}")
                    if len(matches) >= args.max_matches:
                        return _search_result(matches, scanned, truncated=True)
        return _search_result(matches, scanned, truncated=False)


def _compile(args: FsSearchArgs) -> re.Pattern[str]:
    flags = re.IGNORECASE if args.ignore_case else 0
    source = re.escape(args.pattern) if args.literal else args.pattern
    try:
        return re.compile(source, flags)
    except re.error as e:
        raise ToolError(
            f"invalid regular expression {args.pattern!r}: {e}; pass literal=true for plain text"
        ) from None


Reader = tuple[str, str, Callable[[int], bytes | None]]  # rel path, name, read(max_bytes)


def _files_under(root: Path, top: str) -> Iterator[Reader]:
    for entry in walk_project(root, top, recursive=True):
        if not entry.is_dir:
            yield entry.rel, entry.name, entry.read


def _one(root: Path, args: FsSearchArgs) -> Reader:
    def read(max_bytes: int) -> bytes | None:
        try:
            return read_bytes_in_project(root, args.path, max_bytes=max_bytes)[0]
        except ToolError:
            return None

    shown = _shown_folder(args.path)
    return shown, shown.rsplit("/", 1)[-1], read


def _shown_folder(path: str) -> str:
    shown = "/".join(p for p in path.strip().split("/") if p not in ("", "."))
    return shown or "."


def _text_lines(read: Callable[[int], bytes | None]) -> Iterator[tuple[int, str]]:
    data = read(MAX_SEARCH_FILE_BYTES)
    if data is None or b"\x00" in data[:SNIFF_BYTES]:
        return
    text = data.decode("utf-8", errors="replace")
    yield from enumerate(text.splitlines(), start=1)


def _search_result(matches: list[str], scanned: int, *, truncated: bool) -> ToolResult:
    text = "\n".join(matches) if matches else f"no matches ({scanned} files searched)"
    if truncated:
        text += f"\n[stopped after {len(matches)} matches; narrow the search to see more]"
    return ToolResult(
        output=text, data={"matches": len(matches), "files": scanned, "truncated": truncated}
    )


# --- fs.write --------------------------------------------------------------------------------


class FsWriteArgs(ToolArgs):
    path: str = Field(description="File path, relative to the project folder.")
    content: str = Field(description="The whole new content of the file (UTF-8 text).")


class FsWrite(Tool[FsWriteArgs]):
    name = "fs.write"
    trait = ToolTrait.EDIT
    in_order = True
    description = (
        "Create or overwrite a text file of the project with the given content (parent folders "
        "are created). Prefer apply_patch for small edits of existing files."
    )
    parameters = FsWriteArgs

    async def execute(self, args: FsWriteArgs, ctx: ToolContext) -> ToolResult:
        root = ctx.project.resolve()
        rel = project_relpath(root, args.path, for_write=True)
        # Recorded for undo (before/after snapshots in the store, with the run's turn).
        return await asyncio.to_thread(
            write_and_record, ctx, root, [rel], lambda: self._write(args, root)
        )

    async def preview(self, args: FsWriteArgs, ctx: ToolContext) -> str | None:
        root = ctx.project.resolve()
        rel = project_relpath(root, args.path, for_write=True)
        old = await asyncio.to_thread(read_text_if_exists, root, rel)
        op: ChangeOp = "add" if old is None else "update"
        return FileChange(path=rel, op=op, old=old, new=args.content).diff()

    def _write(self, args: FsWriteArgs, root: Path) -> ToolResult:
        old = read_text_if_exists(root, args.path)
        data = args.content.encode("utf-8")
        shown = write_bytes_in_project(root, args.path, data)
        change = FileChange(
            path=shown, op="add" if old is None else "update", old=old, new=args.content
        )
        verb = "created" if old is None else "updated"
        return ToolResult(
            output=f"{verb} {shown}: wrote {len(data)} bytes\n{describe([change])}",
            data={"path": shown, "bytes": len(data), "created": old is None},
            artifact=file_diff_draft([change], input_format="content"),
        )


def fs_tools() -> list[AnyTool]:
    return [FsRead(), FsList(), FsSearch(), FsWrite()]
