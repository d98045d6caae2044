"""The tab backend of server runs: notebooks open in JupyterLab, reached through the
labextension, when real-time collaboration is off.

Without RTC the notebook model in the open tab is the truth (the user's unsaved edits and
undo history live there), and writing the file behind it would raise "file changed on disk".
The labextension therefore keeps one stream per browser window open while notebooks are open
(``GET /agi/v1/notebook/bridge``, SSE) and says which notebooks it has open
(``POST /agi/v1/notebook/bridge``); a request for one of them goes down that stream, the tab
applies it to the notebook model and answers with ``POST /agi/v1/notebook/replies``.
Everything here runs on the server's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from agi_jupyter.errors import ErrorCode
from agi_jupyter.notebook.ops import NotebookError
from agi_jupyter.notebook.tab import TabBackend
from agi_jupyter.notebook.wire import NotebookRequest
from agi_jupyter.records import new_id
from agi_jupyter.server.notebooks.rtc import on_loop

REPLY_TIMEOUT = 30.0
KEEPALIVE = 15.0
MAX_CLIENTS = 100


@dataclass
class BridgeClient:
    client_id: str
    paths: set[str] = field(default_factory=set)
    queue: asyncio.Queue[dict[str, Any]] | None = None
    pending: set[str] = field(default_factory=set)


class TabBridge:
    def __init__(self) -> None:
        self.clients: dict[str, BridgeClient] = {}
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}

    def _client(self, client_id: str) -> BridgeClient:
        client = self.clients.get(client_id)
        if client is None:
            if len(self.clients) >= MAX_CLIENTS:  # forget the oldest silent one
                stale = next((c for c in self.clients.values() if c.queue is None), None)
                self.clients.pop((stale or next(iter(self.clients.values()))).client_id)
            client = self.clients[client_id] = BridgeClient(client_id)
        return client

    def announce(self, client_id: str, paths: list[str]) -> None:
        """The notebooks (paths relative to the server root) a window has open."""
        self._client(client_id).paths = {p.strip("/") for p in paths}

    def client_for(self, api_path: str) -> str | None:
        """A connected window with ``api_path`` open (the one that said so last)."""
        for client in reversed(self.clients.values()):
            if client.queue is not None and api_path in client.paths:
                return client.client_id
        return None

    async def stream(self, client_id: str) -> AsyncGenerator[dict[str, Any], None]:
        """The requests for one window, as long as it listens (an empty dict: keep-alive; the
        first one sends the response headers at once)."""
        client = self._client(client_id)
        old = client.queue
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        client.queue = queue
        if old is not None:
            old.put_nowait({})  # an earlier stream of the same window stops
        try:
            yield {}
            while client.queue is queue:
                try:
                    yield await asyncio.wait_for(queue.get(), KEEPALIVE)
                except TimeoutError:
                    yield {}
        finally:
            if client.queue is queue:
                client.queue = None
                for request_id in list(client.pending):
                    self._fail(request_id, "the JupyterLab window closed its notebook stream")

    def hang_up(self, client_id: str) -> None:
        """The window's stream closed: wake it so it ends now, failing what it was asked."""
        client = self.clients.get(client_id)
        if client is not None and client.queue is not None:
            queue, client.queue = client.queue, None
            queue.put_nowait({})
            for request_id in list(client.pending):
                self._fail(request_id, "the JupyterLab window closed its notebook stream")

    async def request(self, client_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        client = self.clients.get(client_id)
        if client is None or client.queue is None:
            raise NotebookError(
                "the notebook's JupyterLab tab is gone", code=ErrorCode.NOTEBOOK_TAB_GONE
            )
        request_id = new_id("nbr")
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        client.pending.add(request_id)
        request = NotebookRequest.model_validate({"request_id": request_id, **payload})
        client.queue.put_nowait(request.model_dump(mode="json"))
        try:
            return await asyncio.wait_for(future, REPLY_TIMEOUT)
        except TimeoutError:
            raise NotebookError(
                f"the notebook's JupyterLab tab did not answer within {REPLY_TIMEOUT:g} s",
                code=ErrorCode.NOTEBOOK_TAB_TIMEOUT,
            ) from None
        finally:
            self.pending.pop(request_id, None)
            client.pending.discard(request_id)

    def resolve(self, request_id: str, reply: dict[str, Any]) -> bool:
        """A tab's answer to a request of this server (False: not one of ours)."""
        future = self.pending.get(request_id)
        if future is None:
            return False
        if not future.done():
            future.set_result(reply)
        return True

    def _fail(self, request_id: str, why: str) -> None:
        future = self.pending.get(request_id)
        if future is not None and not future.done():
            future.set_exception(NotebookError(why, code=ErrorCode.NOTEBOOK_TAB_GONE))


def tab_backend(bridge: TabBridge, client_id: str, api_path: str,
                loop: asyncio.AbstractEventLoop) -> TabBackend:  # fmt: skip
    """One notebook in one window's open tab (requests hop to the server's loop)."""

    async def send(payload: dict[str, Any]) -> dict[str, Any]:
        return await on_loop(loop, bridge.request(client_id, {"path": api_path, **payload}))

    return TabBackend(send)
