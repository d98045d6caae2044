"""The kernel's line to the JupyterLab tab of its notebook: requests over a comm, answers
through the server.

While a ``%%agi`` cell runs, the kernel's shell channel is busy with that cell, so messages
from the front end to the kernel (comm messages included) wait until the cell ends. Requests
therefore go out over a comm (kernel -> front end travels on the iopub channel, which is never
blocked), and the labextension answers by ``POST /agi/v1/notebook/replies``: the server puts
the answer into the project's store (``notebook_replies``) and the kernel takes it from there.

A comm is opened when a ``%%agi`` run (or the chat widget) starts; a tab with the extension
answers its opening with a hello through the same route. No hello within ``HELLO_WAIT``
seconds of the opening: no tab is listening (nbclient, VS Code, JupyterLab without the
extension or the server extension), and the notebook is used through its file; the kernel
then stops waiting for hellos (it still takes one that came).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any, Protocol

from agi_jupyter.errors import ErrorCode
from agi_jupyter.notebook.ops import NotebookError
from agi_jupyter.notebook.tab import TabBackend
from agi_jupyter.notebook.wire import TabRequest
from agi_jupyter.records import JSON, new_id


class Replies(Protocol):
    """Where the tabs' answers wait for the kernel (``Agi.take_notebook_reply``)."""

    def take_notebook_reply(self, request_id: str) -> JSON | None: ...


COMM_TARGET = "agi-jupyter:notebook"
HELLO_WAIT = 3.0
REPLY_TIMEOUT = 30.0
POLL = 0.05


class TabLink:
    def __init__(self) -> None:
        self.comm: Any = None
        self.opened_at = 0.0
        self.hello: dict[str, Any] | None = None
        # No tab answered an earlier comm of this kernel (nbclient, a console, JupyterLab
        # without the extension): later runs look for a hello without waiting for one.
        self.silent = False

    def open(self, shell: Any, project: Path, notebook: Path | None) -> None:
        """Open a fresh comm to the front end (main thread; only inside a real kernel)."""
        if getattr(shell, "kernel", None) is None or notebook is None:
            return
        try:
            from comm import create_comm
        except ImportError:
            return
        if self.comm is not None:
            with contextlib.suppress(Exception):
                self.comm.close()
        data = {"version": 1, "project": str(project), "notebook": str(notebook)}
        self.comm = create_comm(target_name=COMM_TARGET, data=data)
        self.opened_at, self.hello = time.monotonic(), None

    async def attached(self, replies: Replies, *, wait: bool = True) -> bool:
        """Whether a tab answered this comm's opening (waits up to ``HELLO_WAIT`` after it,
        unless ``wait`` is False)."""
        if self.comm is None:
            return False
        if self.hello is not None:
            return True
        key = f"hello:{self.comm.comm_id}"
        while True:
            reply = await asyncio.to_thread(replies.take_notebook_reply, key)
            if reply is not None:
                self.hello, self.silent = reply, False
                return True
            if self.silent or time.monotonic() - self.opened_at > HELLO_WAIT:
                self.silent = True
                return False
            if not wait:
                return False
            await asyncio.sleep(POLL)

    def backend(self, replies: Replies) -> TabBackend:
        """The tab backend over this comm (answers taken from ``replies``)."""
        return TabBackend(lambda payload: self.request(replies, payload))

    async def request(self, replies: Replies, payload: dict[str, Any]) -> dict[str, Any]:
        request_id = new_id("nbr")
        request = TabRequest.model_validate({"request_id": request_id, **payload})
        self.comm.send(request.model_dump(mode="json"))
        deadline = time.monotonic() + REPLY_TIMEOUT
        while time.monotonic() < deadline:
            reply = await asyncio.to_thread(replies.take_notebook_reply, request_id)
            if reply is not None:
                return reply
            await asyncio.sleep(POLL)
        self.hello = None  # ask for a new hello before trusting the tab again
        raise NotebookError(
            f"the notebook's JupyterLab tab did not answer within {REPLY_TIMEOUT:g} s "
            "(was it closed or reloaded?); nothing is known to have changed",
            code=ErrorCode.NOTEBOOK_TAB_TIMEOUT,
        )
