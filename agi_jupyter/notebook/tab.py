"""The tab backend: the notebook as an open JupyterLab tab holds it, through the labextension.

The tab receives ``{"op": "read"}`` or ``{"op": "apply", "change": <op_to_wire(op)>}`` and
answers ``{"ok": true, "notebook": ...}`` / ``{"ok": true, "before": ..., "after": ...}`` (the
notebook's JSON as JupyterLab's model gives it), or ``{"ok": false, "code", "message"}`` when
it refused a change (a source that no longer matches: ``HASH_MISMATCH``). How a request gets
there differs per front door: a comm from the kernel (``kernel.tab``), a stream from the server
(``server.notebooks.bridge``); both hand this backend their ``send``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agi_jupyter.errors import ErrorCode
from agi_jupyter.notebook.backend import Applied, Loaded
from agi_jupyter.notebook.model import canonical_bytes, normalized
from agi_jupyter.notebook.ops import NotebookError, Op, op_to_wire

Send = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class TabBackend:
    kind = "tab"

    def __init__(self, send: Send) -> None:
        self.send = send

    async def _request(self, payload: dict[str, Any]) -> dict[str, Any]:
        return checked(await self.send(payload))

    async def load(self) -> Loaded:
        notebook = normalized((await self._request({"op": "read"}))["notebook"])
        return Loaded(notebook, canonical_bytes(notebook))

    async def apply(self, op: Op) -> Applied:
        reply = await self._request({"op": "apply", "change": op_to_wire(op)})
        before, after = normalized(reply["before"]), normalized(reply["after"])
        return Applied(canonical_bytes(before), canonical_bytes(after))


def checked(reply: dict[str, Any]) -> dict[str, Any]:
    """A tab's answer, or its refusal raised as the ``NotebookError`` it names."""
    if reply.get("ok"):
        return reply
    raise NotebookError(
        str(reply.get("message") or "the tab refused the change"),
        code=str(reply.get("code") or ErrorCode.NOTEBOOK_TAB_ERROR),
    )
