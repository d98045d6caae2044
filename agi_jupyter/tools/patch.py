"""``apply_patch``: apply an apply_patch envelope or a unified diff, all or nothing.

Every hunk of every file is applied in memory first; only when all of them fit is anything
written, and a write that fails half-way restores the files already written. A hunk is looked
for near its line number (unified) or after its ``@@`` anchor (envelope), first exactly, then
ignoring trailing whitespace, then surrounding whitespace, then typographic punctuation.
"""

from __future__ import annotations

import asyncio
import contextlib
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import AliasChoices, Field

from agi_jupyter.errors import ToolError
from agi_jupyter.kinds import ToolTrait
from agi_jupyter.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from agi_jupyter.tools.builtin_fs import read_text_if_exists
from agi_jupyter.tools.diffs import FileChange, describe, file_diff_draft, summarize
from agi_jupyter.tools.filerecord import write_and_record
from agi_jupyter.tools.patch_parse import FileOp, Hunk, ParsedPatch, PatchError, parse_patch
from agi_jupyter.tools.paths import (
    MissingPath,
    delete_in_project,
    project_relpath,
    read_bytes_in_project,
    stat_in_project,
    write_bytes_in_project,
)

_PUNCTUATION = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u00a0": " ",
    }
)
_NORMALIZERS: tuple[Callable[[str], str], ...] = (
    lambda s: s,
    str.rstrip,
    str.strip,
    lambda s: s.strip().translate(_PUNCTUATION),
)


# --- applying hunks to one text --------------------------------------------------------------


def apply_hunks(text: str, hunks: list[Hunk], shown: str) -> str:
    """``text`` with ``hunks`` applied in order; ``PatchError`` names the hunk that did not fit."""
    eol = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(eol)
    final_newline = lines[-1] == "" and text != ""
    if lines[-1] == "":
        lines.pop()
    cursor = delta = 0
    for index, hunk in enumerate(hunks, start=1):
        pos = _locate(lines, hunk, cursor, delta, shown, index, len(hunks))
        lines[pos : pos + len(hunk.old)] = _replacement(lines, pos, hunk)
        cursor = pos + len(hunk.new)
        delta += len(hunk.new) - len(hunk.old)
    if any(h.no_newline_at_end for h in hunks):
        final_newline = False
    elif any(h.old_no_newline_at_end for h in hunks) or (text == "" and lines):
        final_newline = True
    return eol.join(lines) + (eol if final_newline and lines else "")


def _replacement(lines: list[str], pos: int, hunk: Hunk) -> list[str]:
    """The hunk's new lines, keeping the file's own text for context lines (which may differ
    from the patch in whitespace or punctuation)."""
    out: list[str] = []
    for kind, text in hunk.ops:
        if kind == " ":
            out.append(lines[pos])
        if kind == "+":
            out.append(text)
        else:
            pos += 1
    return out


def _locate(
    lines: list[str], hunk: Hunk, cursor: int, delta: int, shown: str, index: int, total: int
) -> int:
    start = cursor
    for anchor in hunk.anchors:
        found = _find_line(lines, anchor, start)
        if found is None:
            raise PatchError(
                f"{shown}: {hunk.label} of {total} did not apply: the context line "
                f"'@@ {anchor}' was not found{_after(start)}. {_NOTHING_CHANGED}"
            )
        start = found + 1
    hint = None if hunk.hint is None else max(start, hunk.hint + delta)
    if not hunk.old:
        if hint is not None:
            return min(hint, len(lines))
        return start if hunk.anchors else len(lines)
    for normalize in _NORMALIZERS:
        pos = _find_block(lines, hunk, start, hint, normalize)
        if pos is not None:
            return pos
    expected = "\n".join(f"    {line}" for line in hunk.old[:8])
    more = "\n    ..." if len(hunk.old) > 8 else ""
    raise PatchError(
        f"{shown}: {hunk.label} of {total} did not apply: these lines were not found"
        f"{_after(start)}:\n{expected}{more}\n{_NOTHING_CHANGED}"
    )


_NOTHING_CHANGED = (
    "Nothing was changed (the patch is all or nothing); read the file again and resend the "
    "whole patch with exact context lines."
)


def _after(start: int) -> str:
    return f" after line {start}" if start else ""


def _find_line(lines: list[str], wanted: str, start: int) -> int | None:
    for normalize in _NORMALIZERS[1:]:
        target = normalize(wanted)
        for index in range(start, len(lines)):
            if normalize(lines[index]) == target:
                return index
    return None


def _find_block(
    lines: list[str], hunk: Hunk, start: int, hint: int | None, normalize: Callable[[str], str]
) -> int | None:
    old = [normalize(line) for line in hunk.old]
    size = len(old)

    def fits(pos: int) -> bool:
        return all(normalize(lines[pos + k]) == old[k] for k in range(size))

    last = len(lines) - size
    if hunk.at_eof and last >= start and fits(last):
        return last
    candidates = [pos for pos in range(start, last + 1) if fits(pos)]
    if not candidates:
        return None
    if hint is None:
        return candidates[0]
    return min(candidates, key=lambda pos: abs(pos - hint))


# --- planning and writing a whole patch ------------------------------------------------------


@dataclass
class _Plan:
    """The files a patch touches, by path relative to the root (symlinks resolved), and what
    each will hold (None: deleted). Files are read and written through ``tools.paths``."""

    root: Path
    state: dict[str, str | None] = field(default_factory=dict)
    changes: list[FileChange] = field(default_factory=list)

    def current(self, rel: str) -> str | None:
        if rel in self.state:
            return self.state[rel]
        return read_text_if_exists(self.root, rel)

    def resolve(self, raw: str) -> str:
        return project_relpath(self.root, raw, for_write=True)

    def is_dir(self, rel: str) -> bool:
        info = stat_in_project(self.root, rel)
        return info is not None and stat.S_ISDIR(info.st_mode)

    def apply(self, op: FileOp) -> None:
        shown = self.resolve(op.path)
        old = None if self.is_dir(shown) else self.current(shown)
        if op.op == "add":
            if old is not None or self.is_dir(shown):
                raise PatchError(f"cannot add {shown}: it already exists; use '*** Update File'")
            self.state[shown] = op.content or ""
            self.changes.append(FileChange(path=shown, op="add", old=None, new=op.content or ""))
            return
        if old is None:
            raise PatchError(f"cannot {op.op} {shown}: no such file")
        if op.op == "delete":
            self.state[shown] = None
            self.changes.append(FileChange(path=shown, op="delete", old=old, new=None))
            return
        new = apply_hunks(old, op.hunks, shown)
        target = shown if op.move_to is None else self.resolve(op.move_to)
        if target != shown:
            if self.current(target) is not None or self.is_dir(target):
                raise PatchError(f"cannot move {shown} to {target}: it already exists")
            self.state[shown] = None
        self.state[target] = new
        moved = target if target != shown else None
        self.changes.append(FileChange(path=shown, op="update", old=old, new=new, move_to=moved))


def plan_patch(root: Path, parsed: ParsedPatch) -> tuple[dict[str, str | None], list[FileChange]]:
    """What every touched file will contain (None: deleted) and the changes, or PatchError."""
    plan = _Plan(root.resolve())
    for op in parsed.ops:
        plan.apply(op)
    return plan.state, plan.changes


def write_plan(root: Path, state: dict[str, str | None]) -> None:
    """Write every file of the plan; on an OS error, put back those already written."""
    originals = {rel: _bytes_or_none(root, rel) for rel in state}
    done: list[str] = []
    try:
        for rel, content in state.items():
            done.append(rel)
            if content is None:
                delete_in_project(root, rel)
            else:
                write_bytes_in_project(root, rel, content.encode("utf-8"))
    except (OSError, ToolError) as e:
        for rel in done:
            _restore(root, rel, originals[rel])
        raise PatchError(f"writing the patch failed ({e}); the files were restored") from None


def _bytes_or_none(root: Path, rel: str) -> bytes | None:
    try:
        return read_bytes_in_project(root, rel)[0]
    except MissingPath:
        return None


def _restore(root: Path, rel: str, before: bytes | None) -> None:
    with contextlib.suppress(OSError, ToolError):
        if before is None:
            delete_in_project(root, rel)
        else:
            write_bytes_in_project(root, rel, before)


# --- the tool --------------------------------------------------------------------------------


class ApplyPatchArgs(ToolArgs):
    patch: str = Field(
        validation_alias=AliasChoices("patch", "input"),
        description=(
            "The patch: an apply_patch envelope ('*** Begin Patch' ... '*** End Patch' with "
            "'*** Add File:', '*** Update File:', '*** Delete File:', '*** Move to:' and '@@' "
            "hunks) or a unified diff. Several files may be changed at once."
        ),
    )


class ApplyPatch(Tool[ApplyPatchArgs]):
    name = "apply_patch"
    trait = ToolTrait.EDIT
    in_order = True
    description = (
        "Edit project files with a patch (apply_patch envelope or unified diff). The patch is "
        "applied all or nothing: if a hunk does not fit, no file is changed."
    )
    parameters = ApplyPatchArgs

    async def preview(self, args: ApplyPatchArgs, ctx: ToolContext) -> str | None:
        _state, changes = await asyncio.to_thread(
            plan_patch, ctx.project.resolve(), parse_patch(args.patch)
        )
        return "".join(change.diff() for change in changes)

    async def execute(self, args: ApplyPatchArgs, ctx: ToolContext) -> ToolResult:
        parsed = parse_patch(args.patch)
        root = ctx.project.resolve()
        state, changes = await asyncio.to_thread(plan_patch, root, parsed)
        # Recorded for undo (before/after snapshots in the store, with the run's turn).
        await asyncio.to_thread(
            write_and_record, ctx, root, list(state), lambda: write_plan(root, state)
        )
        for change in changes:
            ctx.emit("patch", change.diff())
        summary = summarize(changes)
        header = (
            f"applied the patch: {summary['files']} file(s), "
            f"+{summary['additions']} -{summary['deletions']}"
        )
        return ToolResult(
            output=f"{header}\n{describe(changes)}",
            data={**summary, "changes": [change.to_dict() for change in changes]},
            artifact=file_diff_draft(changes, input_format=parsed.format),
        )
