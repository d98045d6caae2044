"""Parse the two patch formats apply_patch takes into one list of file operations.

The envelope used by OpenAI's apply_patch tool::

    *** Begin Patch
    *** Add File: path        lines follow, each starting with '+'
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path     optional, right after Update File
    @@ def anchor():          optional context line to find first; a bare '@@' starts a hunk
     context / -removed / +added
    *** End of File           optional: the hunk ends at the end of the file
    *** End Patch

and plain unified diffs (``--- a/x`` / ``+++ b/x`` / ``@@ -l,n +l,n @@``, git headers allowed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from agi_jupyter.errors import ErrorCode, ToolError

PatchFormat = Literal["envelope", "unified"]
OpKind = Literal["add", "update", "delete"]

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
EOF_MARK = "*** End of File"
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(ToolError):
    """A patch that cannot be parsed or applied; nothing has been written."""

    code = ErrorCode.PATCH_FAILED


@dataclass
class Hunk:
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    ops: list[tuple[str, str]] = field(default_factory=list)
    """The hunk's lines in order: (``" "``, ``"-"`` or ``"+"``, text)."""
    anchors: list[str] = field(default_factory=list)
    hint: int | None = None
    """0-based line of the original file where ``old`` starts (unified diffs)."""
    at_eof: bool = False
    no_newline_at_end: bool = False
    """The new text has no final newline ("\\ No newline at end of file" after a new line)."""
    old_no_newline_at_end: bool = False
    label: str = ""


@dataclass
class FileOp:
    op: OpKind
    path: str
    move_to: str | None = None
    hunks: list[Hunk] = field(default_factory=list)
    content: str | None = None


@dataclass
class ParsedPatch:
    format: PatchFormat
    ops: list[FileOp]


def parse_patch(text: str) -> ParsedPatch:
    """Parse either format; raises ``PatchError`` naming the line that is wrong."""
    lines = _strip_fences(text.replace("\r\n", "\n")).split("\n")
    first = next((line.strip() for line in lines if line.strip()), "")
    if first == BEGIN:
        ops = _EnvelopeParser(lines).parse()
        fmt: PatchFormat = "envelope"
    elif any(line.startswith(("--- ", "diff --git ")) for line in lines):
        ops = _parse_unified(lines)
        fmt = "unified"
    else:
        raise PatchError(
            "unrecognised patch: start with '*** Begin Patch' (apply_patch envelope) "
            "or give a unified diff ('--- a/file', '+++ b/file', '@@ -l,n +l,n @@')"
        )
    if not ops:
        raise PatchError("the patch contains no file changes")
    return ParsedPatch(fmt, ops)


def _strip_fences(text: str) -> str:
    stripped = text.strip("\n")
    lines = stripped.split("\n")
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1])
    return text


# --- envelope --------------------------------------------------------------------------------


class _EnvelopeParser:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.i = next(n for n, line in enumerate(lines) if line.strip() == BEGIN) + 1

    def error(self, message: str) -> PatchError:
        return PatchError(f"patch line {self.i + 1}: {message}")

    def parse(self) -> list[FileOp]:
        ops: list[FileOp] = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() == END:
                return ops
            if line.startswith(ADD):
                ops.append(self._add(line[len(ADD) :].strip()))
            elif line.startswith(DELETE):
                ops.append(FileOp("delete", line[len(DELETE) :].strip()))
                self.i += 1
            elif line.startswith(UPDATE):
                ops.append(self._update(line[len(UPDATE) :].strip()))
            elif not line.strip():
                self.i += 1
            else:
                raise self.error(
                    f"expected '{ADD.strip()}', '{UPDATE.strip()}', '{DELETE.strip()}' or "
                    f"'{END}', found {line[:80]!r}"
                )
        return ops  # a missing '*** End Patch' is forgiven

    def _at_header(self) -> bool:
        line = self.lines[self.i]
        return line.startswith((ADD, DELETE, UPDATE)) or line.strip() == END

    def _add(self, path: str) -> FileOp:
        self.i += 1
        content: list[str] = []
        while self.i < len(self.lines) and not self._at_header():
            line = self.lines[self.i]
            if line.startswith("+"):
                content.append(line[1:])
            elif line.strip():
                raise self.error(f"lines of '*** Add File: {path}' must start with '+'")
            self.i += 1
        text = "\n".join(content) + "\n" if content else ""
        return FileOp("add", path, content=text)

    def _update(self, path: str) -> FileOp:
        self.i += 1
        op = FileOp("update", path)
        if self.i < len(self.lines) and self.lines[self.i].startswith(MOVE):
            op.move_to = self.lines[self.i][len(MOVE) :].strip()
            self.i += 1
        hunk: Hunk | None = None
        blanks = 0
        while self.i < len(self.lines) and not self._at_header():
            line = self.lines[self.i]
            self.i += 1
            if line.startswith("@@"):
                if hunk is None or hunk.old or hunk.new:
                    hunk = Hunk(label=f"hunk {len(op.hunks) + 1}")
                    op.hunks.append(hunk)
                    blanks = 0
                if line[2:].strip():
                    hunk.anchors.append(line[2:].strip())
                continue
            if hunk is None:
                hunk = Hunk(label="hunk 1")
                op.hunks.append(hunk)
            if line.strip() == EOF_MARK:
                hunk.at_eof = True
            elif line == "":
                blanks += 1  # kept only if more hunk lines follow
            elif line[0] in " +-":
                for _ in range(blanks):
                    _add_line(hunk, " ")
                blanks = 0
                _add_line(hunk, line)
            else:
                self.i -= 1
                raise self.error(
                    f"in '*** Update File: {path}', hunk lines must start with ' ', '+' or '-' "
                    f"(or '@@'), found {line[:80]!r}"
                )
        op.hunks = [h for h in op.hunks if h.old or h.new]
        if not op.hunks and not op.move_to:
            raise self.error(f"'*** Update File: {path}' has no changes")
        return op


def _add_line(hunk: Hunk, line: str) -> None:
    body = line[1:]
    hunk.ops.append((line[0], body))
    if line[0] in " -":
        hunk.old.append(body)
    if line[0] in " +":
        hunk.new.append(body)


# --- unified diff ----------------------------------------------------------------------------


def _parse_unified(lines: list[str]) -> list[FileOp]:
    ops: list[FileOp] = []
    i = 0
    rename: list[str] = []
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            if len(rename) == 2:
                ops.append(FileOp("update", rename[0], move_to=rename[1]))
            rename = []
            i += 1
        elif line.startswith(("rename from ", "rename to ")):
            rename.append(line.split(" ", 2)[2].strip())
            i += 1
        elif line.startswith("Binary files "):
            raise PatchError(f"patch line {i + 1}: binary changes cannot be applied")
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            op, i = _unified_file(lines, i)
            ops.append(op)
            rename = []
        else:
            i += 1
    if len(rename) == 2:
        ops.append(FileOp("update", rename[0], move_to=rename[1]))
    return ops


def _file_name(raw: str, prefix: str) -> str | None:
    name = raw.split("\t", 1)[0].strip()
    if len(name) >= 2 and name[0] == name[-1] == '"':
        name = name[1:-1]
    if name == "/dev/null":
        return None
    return name.removeprefix(prefix)


def _unified_file(lines: list[str], i: int) -> tuple[FileOp, int]:
    old_path = _file_name(lines[i][4:], "a/")
    new_path = _file_name(lines[i + 1][4:], "b/")
    i += 2
    hunks: list[Hunk] = []
    while i < len(lines) and lines[i].startswith("@@"):
        hunk, i = _unified_hunk(lines, i, len(hunks) + 1)
        hunks.append(hunk)
    if old_path is None and new_path is None:
        raise PatchError(f"patch line {i}: both file names are /dev/null")
    if old_path is None:
        assert new_path is not None
        new_lines = [line for h in hunks for line in h.new]
        eol = "" if any(h.no_newline_at_end for h in hunks) else "\n"
        return FileOp("add", new_path, content="\n".join(new_lines) + eol if new_lines else ""), i
    if new_path is None:
        return FileOp("delete", old_path), i
    move_to = new_path if new_path != old_path else None
    if not hunks and move_to is None:
        raise PatchError(f"patch line {i}: the diff of {old_path} has no hunks")
    return FileOp("update", old_path, move_to=move_to, hunks=hunks), i


def _unified_hunk(lines: list[str], i: int, number: int) -> tuple[Hunk, int]:
    header = lines[i]
    match = _HUNK_HEADER.match(header)
    if match is None:
        raise PatchError(f"patch line {i + 1}: malformed hunk header {header[:80]!r}")
    old_start, old_count = int(match[1]), int(match[2] if match[2] is not None else 1)
    new_count = int(match[4] if match[4] is not None else 1)
    hint = old_start - 1 if old_count > 0 else old_start
    hunk = Hunk(hint=max(hint, 0), label=f"hunk {number} ({header.split(' @@')[0]} @@)")
    i += 1
    old_seen = new_seen = 0
    last = " "
    while i < len(lines) and (old_seen < old_count or new_seen < new_count):
        line = lines[i]
        if line.startswith("\\"):
            _mark_no_newline(hunk, last)
            i += 1
            continue
        line = line or " "  # some tools strip the space of empty context lines
        if line[0] not in " +-":
            raise PatchError(f"patch line {i + 1}: unexpected line in {hunk.label}: {line[:80]!r}")
        _add_line(hunk, line)
        old_seen += line[0] in " -"
        new_seen += line[0] in " +"
        last = line[0]
        i += 1
    if i < len(lines) and lines[i].startswith("\\"):
        _mark_no_newline(hunk, last)
        i += 1
    if old_seen != old_count or new_seen != new_count:
        raise PatchError(
            f"{hunk.label} is truncated: expected {old_count} old and {new_count} new lines"
        )
    return hunk, i


def _mark_no_newline(hunk: Hunk, last: str) -> None:
    if last in " +":
        hunk.no_newline_at_end = True
    if last in " -":
        hunk.old_no_newline_at_end = True
