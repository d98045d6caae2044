"""The tab backend: the notebook as an open JupyterLab tab holds it, through the labextension.

The tab is sent a ``TabRequest``'s fields (``op`` read, or apply with a ``change``: see
``notebook.wire``, the bridge protocol) and answers with a ``TabReply``: the notebook's JSON as
JupyterLab's model gives it, the notebook before and after the change, or a refusal with its
code (a source that no longer matches: ``HASH_MISMATCH``). How a request gets there differs per
front door: a comm from the kernel (``kernel.tab``), a stream from the server
(``server.notebooks.bridge``); both hand this backend their ``send``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from agi_jupyter.errors import ErrorCode
from agi_jupyter.notebook.backend import Applied, Loaded
from agi_jupyter.notebook.model import NotebookJSON, canonical_bytes, normalized
from agi_jupyter.notebook.ops import NotebookError, Op
from agi_jupyter.notebook.wire import TabReply, change_of

Send = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""``send(fields)``: a request's ``op`` and ``change`` to the tab, its reply's JSON back."""


class TabBackend:
    kind = "tab"

    def __init__(self, send: Send) -> None:
        self.send = send

    async def load(self) -> Loaded:
        reply = checked(await self.send({"op": "read"}))
        notebook = normalized(_notebook(reply.notebook))
        return Loaded(notebook, canonical_bytes(notebook))

    async def apply(self, op: Op) -> Applied:
        change = change_of(op).model_dump(mode="json")
        reply = checked(await self.send({"op": "apply", "change": change}))
        before, after = normalized(_notebook(reply.before)), normalized(_notebook(reply.after))
        return Applied(canonical_bytes(before), canonical_bytes(after))


def checked(raw: dict[str, Any]) -> TabReply:
    """A tab's answer, or its refusal raised as the ``NotebookError`` it names."""
    try:
        reply = TabReply.model_validate(raw)
    except ValidationError as e:
        raise NotebookError(
            f"the tab's answer is not one of the bridge protocol's: {e.errors()[0]['msg']}",
            code=ErrorCode.NOTEBOOK_TAB_ERROR,
        ) from None
    if reply.ok:
        return reply
    raise NotebookError(
        reply.message or "the tab refused the change",
        code=reply.code or ErrorCode.NOTEBOOK_TAB_ERROR,
    )


def _notebook(value: NotebookJSON | None) -> NotebookJSON:
    if value is None:
        raise NotebookError("the tab's answer holds no notebook", code=ErrorCode.NOTEBOOK_TAB_ERROR)
    return value
