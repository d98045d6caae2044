"""Stale cells, from the ledger of executions (``store/executions.py``) and the notebook as it
is now. A code cell the ledger saw run is stale when

- ``changed``: its source is not the one it last ran (the source hashes differ); or
- ``upstream``: it reads a name that an execution of another cell *after* its own last one
  bound again (that cell's source as it ran: its current source, when its hash is still the one
  the ledger recorded; a cell changed since is itself ``changed``, and its names unknown).

The names are a simple static analysis with ``ast`` (IPython's magics turned into Python
first): a cell *binds* the names its top level assigns, imports, defines (``def``, ``class``)
or deletes; it *reads* the names it loads anywhere (functions read globals when called)
that it does not bind itself. Dynamic access (``globals()``, ``exec``, attributes of
mutable objects) is not seen: the flag is a hint, not a proof.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from agi_jupyter.kinds import StaleReason
from agi_jupyter.notebook.model import NotebookJSON, source_hash
from agi_jupyter.records import KernelExecution


@dataclass(frozen=True, kw_only=True)
class StaleCell:
    """A cell whose outputs may no longer be what running it would show."""

    cell_id: str
    reason: StaleReason
    names: list[str] = field(default_factory=list)  # upstream: the names re-bound
    by_cell_id: str | None = None  # upstream: the cell whose later execution re-bound them


@dataclass(frozen=True)
class Names:
    binds: frozenset[str]
    reads: frozenset[str]


def stale_cells(notebook: NotebookJSON, ledger: Sequence[KernelExecution]) -> list[StaleCell]:
    """The stale code cells of ``notebook``, in notebook order (``ledger``: oldest first)."""
    sources = {
        str(c.get("id")): str(c.get("source") or "")
        for c in notebook.get("cells") or []
        if c.get("cell_type") == "code"
    }
    last: dict[str, int] = {}
    for at, execution in enumerate(ledger):
        if execution.cell_id in sources:
            last[execution.cell_id] = at
    stale = []
    for cell_id, source in sources.items():
        if cell_id not in last:
            continue
        if ledger[last[cell_id]].source_hash != source_hash(source):
            stale.append(StaleCell(cell_id=cell_id, reason=StaleReason.CHANGED))
            continue
        upstream = _rebound(cell_id, names_of(source).reads, ledger[last[cell_id] + 1 :], sources)
        if upstream is not None:
            stale.append(upstream)
    return stale


def _rebound(
    cell_id: str,
    reads: frozenset[str],
    later: Iterable[KernelExecution],
    sources: dict[str, str],
) -> StaleCell | None:
    for execution in later:
        other = execution.cell_id
        if other is None or other == cell_id or other not in sources:
            continue
        if execution.source_hash != source_hash(sources[other]):
            continue  # what it ran is no longer known
        names = reads & names_of(sources[other]).binds
        if names:
            return StaleCell(
                cell_id=cell_id,
                reason=StaleReason.UPSTREAM,
                names=sorted(names),
                by_cell_id=other,
            )
    return None


@lru_cache(maxsize=1024)
def names_of(source: str) -> Names:
    """The names a cell binds at its top level and reads (those it does not bind itself);
    none for a cell that does not parse."""
    try:
        tree = ast.parse(_python(source))
    except (SyntaxError, ValueError):
        return Names(frozenset(), frozenset())
    binds = {name for statement in tree.body for name in _bound(statement)}
    loads = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    return Names(frozenset(binds), frozenset(loads - binds))


def _bound(statement: ast.stmt) -> Iterable[str]:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield statement.name
        return
    if isinstance(statement, ast.Import | ast.ImportFrom):
        for alias in statement.names:
            yield (alias.asname or alias.name).split(".")[0]
        return
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            yield node.id
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name  # defined inside an if / with / try at the top level


def _python(source: str) -> str:
    """The cell as the kernel runs it: IPython's magics and shell escapes turned into Python."""
    from IPython.core.inputtransformer2 import TransformerManager

    text: str = TransformerManager().transform_cell(source)  # type: ignore[no-untyped-call]
    return text
