"""``/agi/mcp``: the project's MCP server over streamable HTTP, behind Jupyter's auth.

The ``mcp`` SDK implements the transport: its ``StreamableHTTPSessionManager`` is an ASGI
application. Tornado does not speak ASGI, so ``McpHandler`` hands each authenticated request to
it as one ASGI call: the scope built from the tornado request, the (already buffered) body as
the single ``http.request`` message, ``http.disconnect`` once the client goes away, and the
response messages written as they come, each flushed, so the SDK's SSE streams stream.

One session manager per (project, exposed agent), started on tornado's loop when first used
(its task group lives in one task, as anyio requires) and stopped with the extension. DNS
rebinding protection is Jupyter's (host and origin checks, token or cookie + XSRF auth), so the
SDK's own is off. ``?project=`` picks the project like every route; ``?agent=`` the agent whose
tools are exposed (default: the ``mcp_agent`` trait, ``build``).

This is a protocol endpoint, not a REST route: it is not in the OpenAPI document (which says so
in its description).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tornado.iostream import StreamClosedError

from agi_jupyter.server.handlers.base import AgiHandler, protected

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from agi_jupyter.app import Agi

log = logging.getLogger(__name__)

MCP_PATH = "/agi/mcp"
HOP_BY_HOP = frozenset({b"connection", b"transfer-encoding", b"keep-alive"})


class _Endpoint:
    """A running session manager and the task that owns its task group."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager
        self.stop = asyncio.Event()
        self.ready = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        async with self.manager.run():
            self.ready.set()
            await self.stop.wait()

    async def close(self) -> None:
        self.stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.task, 10)


class McpEndpoints:
    """The session managers of the extension, by project and agent."""

    def __init__(self) -> None:
        self._endpoints: dict[tuple[Path, str], _Endpoint] = {}
        self._lock = asyncio.Lock()

    async def manager(self, agi: Agi, agent: str) -> StreamableHTTPSessionManager:
        key = (agi.project, agent)
        async with self._lock:
            endpoint = self._endpoints.get(key)
            if endpoint is None or endpoint.task.done():
                endpoint = self._endpoints[key] = _Endpoint(await _new_manager(agi, agent))
        ready = asyncio.ensure_future(endpoint.ready.wait())
        await asyncio.wait({ready, endpoint.task}, return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if not endpoint.ready.is_set():  # the manager's run() ended before it was ready
            endpoint.task.result()
            raise RuntimeError("the MCP session manager stopped while starting")
        return endpoint.manager

    async def aclose(self) -> None:
        endpoints, self._endpoints = list(self._endpoints.values()), {}
        await asyncio.gather(*(e.close() for e in endpoints))


async def _new_manager(agi: Agi, agent: str) -> StreamableHTTPSessionManager:
    from agi_jupyter.mcp.sdk import require_mcp_sdk

    require_mcp_sdk()

    def build() -> StreamableHTTPSessionManager:
        # Imports the mcp SDK (~1 s): off tornado's loop, once per project and agent.
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from agi_jupyter.mcp_server.server import ProjectServer

        return StreamableHTTPSessionManager(app=ProjectServer(agi, agent).server)

    return await asyncio.to_thread(build)


class McpHandler(AgiHandler):
    """POST (messages), GET (the server's stream), DELETE (end a session) of ``/agi/mcp``."""

    _disconnected: asyncio.Event | None = None
    _body_sent = False

    @protected
    async def post(self) -> None:
        await self._serve()

    @protected
    async def get(self) -> None:
        await self._serve()

    @protected
    async def delete(self) -> None:
        await self._serve()

    def on_connection_close(self) -> None:
        if self._disconnected is not None:
            self._disconnected.set()
        super().on_connection_close()

    async def _serve(self) -> None:
        self._disconnected = asyncio.Event()
        agi = await self.agi()
        agent = self.get_query_argument("agent", None) or self.agi_app.mcp_agent
        manager = await self.agi_app.mcp.manager(agi, agent)
        self._content_type = "application/json"
        await manager.handle_request(self._scope(), self._receive, self._send)
        if not self._finished and not self._gone:
            with contextlib.suppress(StreamClosedError):
                await self.finish(set_content_type=self._content_type)

    def _scope(self) -> dict[str, Any]:
        request = self.request
        host, _, port = (request.host or "127.0.0.1").rpartition(":")
        if not host or not port.isdigit():
            host, port = request.host or "127.0.0.1", "80"
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": request.version.split("/")[-1],
            "method": request.method,
            "scheme": request.protocol,
            "path": request.path,
            "raw_path": request.path.encode("latin-1"),
            "query_string": (request.query or "").encode("latin-1"),
            "root_path": "",
            "headers": [
                (name.lower().encode("latin-1"), value.encode("latin-1"))
                for name, value in request.headers.get_all()
            ],
            "client": (request.remote_ip or "", 0),
            "server": (host, int(port)),
            "state": {},
        }

    async def _receive(self) -> dict[str, Any]:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.raw_body(), "more_body": False}
        assert self._disconnected is not None
        await self._disconnected.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: MutableMapping[str, Any]) -> None:
        if self._gone:
            return
        if message["type"] == "http.response.start":
            self.set_status(int(message["status"]))
            self.clear_header("Content-Type")
            for raw_name, raw_value in message.get("headers", []):
                if raw_name.lower() in HOP_BY_HOP:
                    continue
                name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
                if name.lower() == "content-type":
                    self._content_type = value
                self.add_header(name, value)
        elif message["type"] == "http.response.body":
            body = message.get("body") or b""
            try:
                if body:
                    self.write(body)
                if message.get("more_body"):
                    await self.flush()
                elif not self._finished:
                    await self.finish(set_content_type=self._content_type)
            except StreamClosedError:
                self._gone = True
                if self._disconnected is not None:
                    self._disconnected.set()
