"""A run's changes and an undo's result as lines of text, for the command line and the magic.

Both work on the JSON forms (``ChangeRecord.to_dict``, ``UndoResult.to_dict``), which is also
what the REST API answers, so ``agi diff --server`` and ``agi undo --server`` print the same;
it imports nothing of the package (``agi --help`` stays fast). Diff lines come with a style
name (``bold``, ``green``, ``red``, ``cyan``, ``dim`` or None) that the CLI gives to rich and
the magic turns into ANSI colours.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

ANSI = {"bold": "1", "green": "32", "red": "31", "cyan": "36", "dim": "2"}


def where(change: Mapping[str, Any]) -> str:
    """``nb.ipynb cell total`` or ``notes.txt``."""
    cell = change.get("cell_id")
    return f"{change['path']} cell {cell}" if cell else str(change["path"])


def diff_lines(changes: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, str | None]]:
    """Each change: a header (id, what, where, turn, whether undone or kept), then its diff."""
    if not changes:
        yield "the run changed no notebook cell or file", "dim"
        return
    for change in changes:
        turn = f" turn {change['turn']}" if change.get("turn") is not None else ""
        state = " (undone)" if change.get("undone") else " (kept)" if change.get("kept") else ""
        header = f"{change['id']}  {change['action']} {where(change)}{turn}{state}"
        yield header, "bold"
        for line in str(change.get("diff") or "").splitlines():
            yield line, diff_style(line, bool(change.get("undone")))


def diff_style(line: str, undone: bool = False) -> str | None:
    if undone:
        return "dim"
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "cyan"
    return None


def ansi(line: str, style: str | None) -> str:
    return line if style is None else f"\x1b[{ANSI[style]}m{line}\x1b[0m"


def undo_lines(result: Mapping[str, Any]) -> list[str]:
    """One line per change: ``reverted nb.ipynb cell total (edited)``, with the reason of a
    conflict or a skip."""
    changes = result.get("changes") or []
    if not changes:
        return [f"run {result['run_id']} changed no notebook or file: nothing to undo"]
    lines = []
    for change in changes:
        forced = " (forced)" if change.get("forced") else ""
        reason = f": {change['reason']}" if change.get("reason") else ""
        lines.append(f"{change['status']} {where(change)} ({change['action']}){forced}{reason}")
    return lines


def conflict_summary(result: Mapping[str, Any]) -> str | None:
    """What to say when some changes were left as they are (None: none was)."""
    conflicts = result.get("conflicts") or []
    if not conflicts:
        return None
    named = ", ".join(where(c) for c in conflicts)
    return (
        f"{len(conflicts)} change(s) not {'redone' if result.get('redo') else 'undone'}: "
        f"{named} changed since, left as they are (--force puts them back anyway)"
    )
