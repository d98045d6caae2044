"""What a notebook looks like to the agent: cells with ids and ``source_hash``, outputs
summarised, a ``stale`` flag; and the one canonical serialisation of a notebook dict.

A notebook here is the nbformat v4 dict (``NotebookJSON``) with each cell's ``source`` a
string. ``source_hash`` is defined once, here, and used by every backend, tool and test: the
first 16 hex digits of the sha256 of the cell's source in UTF-8.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

NotebookJSON = dict[str, Any]
CellJSON = dict[str, Any]
History = Mapping[int, str]
"""The kernel's input history: execution count -> the source it ran (``In[n]``)."""

HASH_DIGITS = 16
MAX_OUTPUT_TEXT = 1_000
CELL_TYPES = ("code", "markdown", "raw")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TEXT_MIMES = ("text/plain",)


def nbf() -> Any:
    """nbformat, imported on first use (it is slow to import and has no type hints)."""
    import nbformat

    return nbformat


def source_hash(source: str) -> str:
    """The hash a cell's source is addressed by in preconditions and receipts."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:HASH_DIGITS]


def joined(value: Any) -> str:
    """nbformat's multiline strings (a string or a list of lines) as one string."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return "" if value is None else str(value)


def normalized(notebook: Mapping[str, Any]) -> NotebookJSON:
    """A deep copy with every cell's source (and stream texts) as one string, and every cell
    with an id (``cell-<index>`` for notebooks older than nbformat 4.5, which have none)."""
    nb: NotebookJSON = copy.deepcopy(dict(notebook))
    cells = nb.setdefault("cells", [])
    for index, cell in enumerate(cells):
        cell["source"] = joined(cell.get("source"))
        if not cell.get("id"):
            cell["id"] = f"cell-{index}"
        for output in cell.get("outputs") or []:
            if output.get("output_type") == "stream":
                output["text"] = joined(output.get("text"))
    return nb


def with_cell_ids(notebook: NotebookJSON) -> NotebookJSON:
    """Mark a notebook whose cells have ids as nbformat 4.5+ (ids came with 4.5)."""
    if any("id" in cell for cell in notebook.get("cells", [])):
        notebook["nbformat_minor"] = max(int(notebook.get("nbformat_minor") or 0), 5)
    return notebook


def canonical_bytes(notebook: Mapping[str, Any]) -> bytes:
    """The notebook as Jupyter writes it (nbformat's JSON: sorted keys, indent 1)."""
    nb = nbf().from_dict(with_cell_ids(copy.deepcopy(dict(notebook))))
    text: str = nbf().writes(nb)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


def parse(data: bytes) -> NotebookJSON:
    """A notebook file's bytes as a normalised dict; ``ValueError`` if it is not a notebook."""
    raw = json.loads(data.decode("utf-8"))
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise ValueError("not a Jupyter notebook (no cell list)")
    if raw.get("nbformat") != 4:
        raise ValueError(f"nbformat {raw.get('nbformat')} notebooks are not supported (only 4)")
    return normalized(raw)


def fingerprint(notebook: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """What undo compares: each cell's id, type and source hash, in order."""
    return [
        (str(c.get("id")), str(c.get("cell_type")), source_hash(joined(c.get("source"))))
        for c in normalized(notebook)["cells"]
    ]


@dataclass(kw_only=True)
class CellView:
    """One cell as ``notebook.read`` shows it."""

    id: str
    index: int
    cell_type: str
    source: str
    source_hash: str
    execution_count: int | None = None
    outputs: list[str] = field(default_factory=list)
    stale: bool | None = None

    def to_dict(self, *, include_outputs: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "index": self.index,
            "cell_type": self.cell_type,
            "source": self.source,
            "source_hash": self.source_hash,
        }
        if self.cell_type == "code":
            data["execution_count"] = self.execution_count
            data["stale"] = self.stale
            if include_outputs:
                data["outputs"] = self.outputs
        return data


def cell_views(notebook: Mapping[str, Any], history: History | None = None) -> list[CellView]:
    """The cells of a normalised notebook, in order."""
    views = []
    for index, cell in enumerate(notebook.get("cells") or []):
        source = joined(cell.get("source"))
        code = cell.get("cell_type") == "code"
        count = cell.get("execution_count") if code else None
        views.append(
            CellView(
                id=str(cell.get("id") or f"cell-{index}"),
                index=index,
                cell_type=str(cell.get("cell_type")),
                source=source,
                source_hash=source_hash(source),
                execution_count=int(count) if isinstance(count, int | float) else None,
                outputs=summarize_outputs(cell.get("outputs") or []) if code else [],
                stale=is_stale(source, count, history) if code else None,
            )
        )
    return views


def is_stale(source: str, count: Any, history: History | None) -> bool | None:
    """Whether the cell's source differs from what the kernel ran under its execution count:
    None when the kernel's history is unknown, False for a cell never run."""
    if not isinstance(count, int | float):
        return False
    if history is None:
        return None
    ran = history.get(int(count))
    return ran is None or ran.rstrip("\n") != source.rstrip("\n")


def summarize_outputs(outputs: list[dict[str, Any]]) -> list[str]:
    """Outputs as short lines: text cut to ``MAX_OUTPUT_TEXT``, images and rich outputs named."""
    return [line for output in outputs if (line := summarize_output(output))]


def summarize_output(output: Mapping[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return f"{output.get('name', 'stdout')}: {clip(joined(output.get('text')))}"
    if kind == "error":
        return f"error: {output.get('ename')}: {clip(strip_ansi(str(output.get('evalue'))))}"
    if kind in ("execute_result", "display_data", "update_display_data"):
        data = output.get("data") or {}
        label = "result" if kind == "execute_result" else "display"
        rich = [mime for mime in data if mime not in _TEXT_MIMES]
        text = clip(joined(data.get("text/plain"))) if "text/plain" in data else ""
        named = f"[{', '.join(rich)}]" if rich else ""
        return f"{label}: {' '.join(p for p in (named, text) if p)}".rstrip()
    return ""


def clip(text: str, limit: int = MAX_OUTPUT_TEXT) -> str:
    text = text.rstrip("\n")
    return text if len(text) <= limit else text[:limit] + f" … [{len(text) - limit} more chars]"


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def is_protected(cell: Mapping[str, Any]) -> bool:
    """Whether the cell's metadata marks it protected (``agi.protected``): agents may not run,
    edit or delete it."""
    agi = (cell.get("metadata") or {}).get("agi")
    return isinstance(agi, Mapping) and bool(agi.get("protected"))


def stamped(metadata: Mapping[str, Any] | None, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """A cell's metadata with the agent's provenance (``agi.run_id``, ``agi.changed_at``) set
    in its ``agi`` key, every other key as it was."""
    result = copy.deepcopy(dict(metadata or {}))
    agi = result.get("agi")
    result["agi"] = {**(agi if isinstance(agi, Mapping) else {}), **provenance}
    return result


def find_cell(notebook: Mapping[str, Any], cell_id: str) -> tuple[int, CellJSON] | None:
    for index, cell in enumerate(notebook.get("cells") or []):
        if cell.get("id") == cell_id:
            return index, cell
    return None
