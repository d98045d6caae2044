"""Tables for ``%agi``: HTML in a notebook, aligned text in a terminal IPython (``text/plain``)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

MAX_CELL = 80


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    text = " ".join(text.split())
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


class Table:
    """Rows under a header; shown as HTML by notebooks and as text everywhere else."""

    def __init__(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        *,
        title: str = "",
        note: str = "",
    ) -> None:
        self.columns = list(columns)
        self.rows = [[_cell(v) for v in row] for row in rows]
        self.title, self.note = title, note

    def __len__(self) -> int:
        return len(self.rows)

    def to_text(self) -> str:
        widths = [len(c) for c in self.columns]
        for row in self.rows:
            widths = [max(w, len(v)) for w, v in zip(widths, row, strict=True)]

        def line(values: Sequence[str]) -> str:
            return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

        lines = [self.title] if self.title else []
        lines.append(line(self.columns))
        lines.append(line(["-" * w for w in widths]))
        lines.extend(line(row) for row in self.rows)
        if not self.rows:
            lines.append("(none)")
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th style='text-align:left'>{escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td style='text-align:left'>{escape(v)}</td>" for v in row) + "</tr>"
            for row in self.rows
        )
        if not self.rows:
            body = f"<tr><td colspan='{len(self.columns)}'><i>(none)</i></td></tr>"
        title = f"<b>{escape(self.title)}</b>" if self.title else ""
        note = f"<div><small>{escape(self.note)}</small></div>" if self.note else ""
        return f"{title}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.to_text())

    def __repr__(self) -> str:
        return self.to_text()


class Text:
    """Plain text (help, config) that notebooks show preformatted."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.text)

    def __repr__(self) -> str:
        return self.text
