"""The RTC backend: the server's shared notebook document (jupyter-collaboration).

With jupyter-collaboration installed, a notebook open in JupyterLab is a shared Y document in
the server, reachable through its documented Python API
(``settings["jupyter_server_ydoc"].get_document(path=..., content_type="notebook",
file_format="json", copy=False)``). Changes made to it reach every open tab live and are saved
by the collaboration extension; nothing is written behind anyone's back. The document is only
touched on the server's event loop, and each operation checks and applies in one synchronous
step (no other update can come in between).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from agi_jupyter.errors import ErrorCode
from agi_jupyter.notebook.backend import Applied, Loaded
from agi_jupyter.notebook.model import canonical_bytes, normalized, source_hash
from agi_jupyter.notebook.ops import (
    Delete,
    Edit,
    Insert,
    NotebookError,
    Op,
    Replace,
    SetOutputs,
    cell_not_found,
    hash_mismatch,
    new_cell,
)

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

T = TypeVar("T")
YDOC_SETTING = "jupyter_server_ydoc"


async def on_loop(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on ``loop`` (the server's) and wait for it from any loop; cancelling the
    wait cancels it there."""
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        future.cancel()
        raise


async def shared_document(serverapp: ServerApp, api_path: str) -> Any:
    """The live shared notebook of ``api_path`` when a collaborative session has it open, else
    None (no jupyter-collaboration, or nobody has the notebook open). On the server loop."""
    extension = serverapp.web_app.settings.get(YDOC_SETTING)
    if extension is None or getattr(extension, "disable_rtc", False):
        return None
    return await extension.get_document(
        path=api_path, content_type="notebook", file_format="json", copy=False
    )


class RtcBackend:
    kind = "rtc"

    def __init__(self, ydoc: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.ydoc = ydoc
        self.loop = loop

    async def load(self) -> Loaded:
        return await on_loop(self.loop, self._load())

    async def apply(self, op: Op) -> Applied:
        return await on_loop(self.loop, self._apply(op))

    async def _load(self) -> Loaded:
        notebook = normalized(self.ydoc.get())
        return Loaded(notebook, canonical_bytes(notebook))

    async def _apply(self, op: Op) -> Applied:
        before = canonical_bytes(normalized(self.ydoc.get()))
        if isinstance(op, Replace):
            self.ydoc.set(op.notebook)
        else:
            with self.ydoc.ydoc.transaction():
                apply_to_ydoc(self.ydoc, op)
        return Applied(before, canonical_bytes(normalized(self.ydoc.get())))


def _find(ydoc: Any, cell_id: str) -> tuple[int, Any]:
    for index, ycell in enumerate(ydoc.ycells):
        if ycell.get("id") == cell_id:
            return index, ycell
    raise cell_not_found(cell_id)


def apply_to_ydoc(ydoc: Any, op: Op) -> None:
    """One operation on the shared document's cells (inside a transaction)."""
    if isinstance(op, Insert):
        cell = new_cell(op.cell_type, op.source, op.cell_id)
        cell["metadata"] = dict(op.metadata or {})
        ydoc.ycells.insert(_position(ydoc, op), ydoc.create_ycell(cell))
        return
    index, ycell = _find(ydoc, op.cell_id)  # type: ignore[union-attr]
    if isinstance(op, SetOutputs):
        _set_outputs(ydoc, ycell, op)
        return
    assert isinstance(op, Edit | Delete)
    current = str(ycell["source"])
    if current != op.expected_source:
        raise hash_mismatch(op.cell_id, source_hash(current))
    if isinstance(op, Edit):
        text = ycell["source"]
        text.clear()
        text += op.source
        if op.metadata is not None:
            from pycrdt import Map

            ycell["metadata"] = Map(op.metadata)
    else:
        del ydoc.ycells[index]


def _position(ydoc: Any, op: Insert) -> int:
    count = len(ydoc.ycells)
    if op.after_cell_id is not None:
        return _find(ydoc, op.after_cell_id)[0] + 1
    if op.index is None:
        return count
    if not 0 <= op.index <= count:
        raise NotebookError(f"index {op.index} is out of range: the notebook has {count} cells",
                            code=ErrorCode.INDEX_OUT_OF_RANGE)  # fmt: skip
    return op.index


def _set_outputs(ydoc: Any, ycell: Any, op: SetOutputs) -> None:
    if ycell.get("cell_type") != "code":
        raise NotebookError(f"cell {op.cell_id} is not a code cell", code=ErrorCode.NOT_A_CODE_CELL)
    from pycrdt import Array, Map, Text  # jupyter-collaboration's CRDT library

    outputs = ycell.get("outputs")
    if not isinstance(outputs, Array):
        ycell["outputs"] = outputs = Array()
    outputs.clear()
    for output in op.outputs:
        item = dict(output)
        if item.get("output_type") == "stream":  # stream text is shared text, as JupyterLab has it
            item["text"] = Text(str(item.get("text", "")))
        outputs.append(Map(item))
    ycell["execution_count"] = op.execution_count
