"""File changes as unified diffs, and the ``file_diff`` artifact of fs.write and apply_patch."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from agi_jupyter.records import JSON
from agi_jupyter.tools.base import ArtifactDraft

ChangeOp = Literal["add", "update", "delete"]
DIFF_KINDS = ("file_diff", "notebook_diff")
"""Artifacts whose ``data.patch`` is a unified diff shown in tool blocks (files; notebook cells)."""


@dataclass(kw_only=True)
class FileChange:
    """One file's change: ``old``/``new`` text (None when the file does not exist)."""

    path: str
    op: ChangeOp
    old: str | None
    new: str | None
    move_to: str | None = None

    def diff(self) -> str:
        old_name = "/dev/null" if self.old is None else f"a/{self.path}"
        target = self.move_to or self.path
        new_name = "/dev/null" if self.new is None else f"b/{target}"
        lines = difflib.unified_diff(
            _lines(self.old), _lines(self.new), fromfile=old_name, tofile=new_name
        )
        text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        if not text and self.move_to:
            text = f"--- {old_name}\n+++ {new_name}\n"
        return text

    def counts(self) -> tuple[int, int]:
        additions = deletions = 0
        for line in self.diff().splitlines():
            if line.startswith("+") and not line.startswith("+++"):
                additions += 1
            elif line.startswith("-") and not line.startswith("---"):
                deletions += 1
        return additions, deletions

    def to_dict(self) -> JSON:
        additions, deletions = self.counts()
        data: JSON = {
            "path": self.path,
            "op": self.op,
            "additions": additions,
            "deletions": deletions,
        }
        if self.move_to:
            data["move_to"] = self.move_to
        return data


def _lines(text: str | None) -> list[str]:
    return [] if text is None else text.splitlines(keepends=True)


def summarize(changes: list[FileChange]) -> JSON:
    files = [change.to_dict() for change in changes]
    return {
        "files": len(files),
        "additions": sum(f["additions"] for f in files),
        "deletions": sum(f["deletions"] for f in files),
    }


def file_diff_draft(changes: list[FileChange], *, input_format: str) -> ArtifactDraft:
    """The ``file_diff`` artifact of a set of changes (seed 000's tool_result artifact).

    ``patch`` is always a unified diff of what changed (``patch_format: "unified"``);
    ``input_format`` says what the tool was given (``envelope``, ``unified``, ``content``).
    """
    summary = summarize(changes)
    patch = "".join(change.diff() for change in changes)
    names = ", ".join(c.move_to or c.path for c in changes[:3])
    more = f" and {len(changes) - 3} more" if len(changes) > 3 else ""
    return ArtifactDraft(
        kind="file_diff",
        title=f"Changes to {names}{more}",
        mime="text/x-diff",
        data={
            "patch_format": "unified",
            "input_format": input_format,
            "patch": patch,
            "summary": summary,
            "files": [change.to_dict() for change in changes],
        },
    )


def describe(changes: list[FileChange]) -> str:
    """One line per file: ``M path (+3 -1)``."""
    marks = {"add": "A", "update": "M", "delete": "D"}
    lines = []
    for change in changes:
        additions, deletions = change.counts()
        target = f"{change.path} -> {change.move_to}" if change.move_to else change.path
        lines.append(f"{marks[change.op]} {target} (+{additions} -{deletions})")
    return "\n".join(lines)
