"""The runtime's MCP servers: started when first needed, reused, restarted, stopped with it.

``McpServers`` is a tool source of the registry (``ToolRegistry.prepare``): before a run offers
tools, and before tools are listed, it starts the configured servers the agent's tool list can
reach (``mcp.*`` reaches all, ``mcp.github.*`` one) and registers their tools as
``mcp.<server>.<tool>``. A running server is reused by every later run of the runtime. One that
exited is started again when next needed (a call in flight when it died fails, and is not
repeated: it may have had effects). One that fails to start is reported once, in the log and in
the listings (``status``), with the tail of its stderr, and its tools are absent; it is not
tried again by this runtime. ``aclose`` stops them all. Stdio servers also end when their owner
gets SIGTERM, and those of an owner that was killed are ended by the next runtime that starts
one (``reaper``).

A call's progress notifications go out as live tool output (``tool.call.delta`` on the
``progress`` channel: ``[3/10] message``), like a command's output, to every door. When a server
says its tool list changed, its tools are registered again: the next model turn of every session
is offered the new list. ``listings`` gives each server's resources, resource templates and
prompts (``agi mcp-resources``); ``read_resource`` and ``prompt`` read one as text (an ``@``
mention's context).

Everything here runs on the runtime loop; ``status`` may be read from any thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from agi_jupyter.errors import ErrorCode, NotFound, ToolError
from agi_jupyter.mcp import reaper
from agi_jupyter.mcp.sdk import mcp_sdk_problem
from agi_jupyter.mcp.tools import McpTool, judge_trust
from agi_jupyter.records import JSON

if TYPE_CHECKING:
    from pathlib import Path

    from agi_jupyter.mcp.config import McpServerSpec
    from agi_jupyter.mcp.connection import McpConnection
    from agi_jupyter.mcp.results import Blob
    from agi_jupyter.tools import Redactor, ToolContext, ToolRegistry, ToolResult

log = logging.getLogger(__name__)

T = TypeVar("T")
State = Literal["not started", "running", "exited", "failed", "stopped"]
PROGRESS_CHANNEL = "progress"  # the live-output channel of a call's progress notifications
_GLOB = "*?["


@dataclass
class _Server:
    spec: McpServerSpec
    state: State = "not started"
    error: str | None = None
    connection: McpConnection | None = None
    tools: list[str] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    starts: int = 0


def reaches(pattern: str, prefix: str) -> bool:
    """Whether a tool-list entry (name or glob) can match a name starting with ``prefix``."""
    cut = min((pattern.index(c) for c in _GLOB if c in pattern), default=len(pattern))
    literal = pattern[:cut]
    if cut == len(pattern):
        return pattern.startswith(prefix)
    return prefix.startswith(literal) or literal.startswith(prefix)


class McpServers:
    """The configured MCP servers of one runtime (a ``ToolRegistry`` tool source)."""

    def __init__(
        self,
        specs: list[McpServerSpec],
        registry: ToolRegistry,
        redactor: Redactor,
        project: Path,
    ) -> None:
        self.project = project
        self.registry = registry
        self.redactor = redactor
        self._servers = {spec.name: _Server(spec) for spec in specs}
        self._closed = False
        self._swept = False
        if any(spec.transport == "stdio" for spec in specs):
            reaper.install_sigterm()

    def __bool__(self) -> bool:
        return bool(self._servers)

    async def prepare(self, allowed: Collection[str]) -> None:
        """Start (or restart) every server ``allowed`` reaches; failures are only recorded."""
        needed = [
            server
            for server in self._servers.values()
            if any(reaches(p, server.spec.prefix) for p in allowed)
        ]
        if needed:
            await asyncio.gather(*(self._ensure(server) for server in needed))

    async def call(self, tool: McpTool, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Call ``tool`` on its server (restarted first if it exited)."""
        from agi_jupyter.mcp.connection import CallFailed, ConnectionLost
        from agi_jupyter.mcp.results import map_result, to_tool_result

        server, connection = await self._connected(tool.server)

        async def report(progress: float, total: float | None, message: str | None) -> None:
            ctx.emit(PROGRESS_CHANNEL, progress_line(progress, total, message))

        try:
            result = await connection.call(tool.remote, arguments, report)
        except ConnectionLost as e:
            server.state = "exited"
            message = f"MCP server {tool.server!r}: {e}; it is started again on the next call"
            raise ToolError(message) from None
        except CallFailed as e:
            raise ToolError(f"{tool.name}: {e}") from None
        mapped = map_result(result, tool.name)
        stored = await asyncio.to_thread(_store_blobs, mapped.blobs, ctx) if mapped.blobs else {}
        return to_tool_result(mapped, stored)

    def status(self) -> list[JSON]:
        """Each server: name, transport, target, state, error (redacted), its tools, source."""
        return [
            {
                "name": s.spec.name,
                "transport": s.spec.transport,
                "target": s.spec.target,
                "state": s.state,
                "error": s.error,
                "tools": list(s.tools),
                "source": s.spec.source,
            }
            for s in self._servers.values()
        ]

    async def listings(self, only: str | None = None) -> list[JSON]:
        """Each configured server (``only``: that one), started if needed, with its resources,
        resource templates and prompts; a server that cannot start has none, and its
        ``error``. ``only`` not configured: ``NotFound`` (``MCP_SERVER_NOT_FOUND``)."""
        from agi_jupyter.mcp.connection import ConnectionLost

        if only is not None and only not in self._servers:
            raise NotFound(
                f"no MCP server {only!r} is configured", code=ErrorCode.MCP_SERVER_NOT_FOUND
            )
        servers = [s for s in self._servers.values() if only is None or s.spec.name == only]
        connections = await asyncio.gather(*(self._ensure(s) for s in servers))
        found: list[JSON] = []
        for server, connection in zip(servers, connections, strict=True):
            entry: JSON = {"name": server.spec.name, "state": server.state, "error": server.error}
            entry.update(resources=[], templates=[], prompts=[])
            if connection is not None:
                try:
                    listed = await connection.listings()
                except ConnectionLost as e:
                    server.state = "exited"
                    entry.update(state=server.state, error=self.redactor.redact_text(str(e)))
                else:
                    entry.update(
                        resources=[_dump(r) for r in listed.resources],
                        templates=[_dump(t) for t in listed.templates],
                        prompts=[_dump(p) for p in listed.prompts],
                    )
            found.append(entry)
        return found

    async def read_resource(self, name: str, uri: str) -> str:
        """The text of resource ``uri`` of server ``name`` (``resource_text``); raises
        ``ToolError`` (an unknown or unavailable server, a resource it refuses to read)."""
        from agi_jupyter.mcp.results import resource_text

        result = await self._ask(name, lambda c: c.read_resource(uri))
        return self.redactor.redact_text(resource_text(result))

    async def prompt(self, name: str, prompt: str) -> str:
        """The messages of prompt ``prompt`` of server ``name``, got without arguments, as
        text (``prompt_text``); raises like ``read_resource``."""
        from agi_jupyter.mcp.results import prompt_text

        result = await self._ask(name, lambda c: c.get_prompt(prompt))
        return self.redactor.redact_text(prompt_text(result))

    async def _ask(self, name: str, send: Callable[[McpConnection], Awaitable[T]]) -> T:
        from agi_jupyter.mcp.connection import CallFailed, ConnectionLost

        server, connection = await self._connected(name)
        try:
            return await send(connection)
        except ConnectionLost as e:
            server.state = "exited"
            raise ToolError(f"MCP server {name!r}: {e}; started again when next needed") from None
        except CallFailed as e:
            raise ToolError(f"MCP server {name!r}: {e}") from None

    async def _connected(self, name: str) -> tuple[_Server, McpConnection]:
        """Server ``name`` and its connection, started (again) if needed."""
        server = self._servers.get(name)
        if server is None:
            raise ToolError(f"MCP server {name!r} is not configured")
        connection = await self._ensure(server)
        if connection is None:
            raise ToolError(f"MCP server {name!r} is not available: {server.error}")
        return server, connection

    async def aclose(self) -> None:
        self._closed = True
        servers = [s for s in self._servers.values() if s.connection is not None]
        await asyncio.gather(*(self._stop(s) for s in servers), return_exceptions=True)

    # --- lifecycle ---------------------------------------------------------------------------

    async def _ensure(self, server: _Server) -> McpConnection | None:
        async with server.lock:
            connection = server.connection
            if connection is not None and connection.alive:
                return connection
            if server.state == "failed" or self._closed:
                return None
            if connection is not None:
                log.info("MCP server %s exited; starting it again", server.spec.name)
                await connection.close()
                server.connection = None
            return await self._start(server)

    async def _start(self, server: _Server) -> McpConnection | None:
        spec = server.spec
        server.starts += 1
        problem = spec.problem or mcp_sdk_problem()
        if problem is not None:
            self._failed(server, problem)
            return None
        from agi_jupyter.mcp.connection import McpConnection, StartFailed

        if spec.transport == "stdio" and not self._swept:
            self._swept = True
            await asyncio.to_thread(reaper.sweep, self.project)
        connection = McpConnection(
            spec, self.project, lambda tools: self._tools_changed(server, tools)
        )
        try:
            remote_tools = await connection.open()
        except StartFailed as e:
            self._failed(server, str(e))
            return None
        server.connection = connection
        server.state, server.error = "running", None
        self._register(server, remote_tools)
        return connection

    def _tools_changed(self, server: _Server, remote_tools: list[Any]) -> None:
        """The server listed its tools again after saying they changed."""
        if self._closed or server.state != "running":
            return
        before = set(server.tools)
        self._register(server, remote_tools)
        log.info(
            "MCP server %s changed its tools: %d added, %d removed",
            server.spec.name,
            len(set(server.tools) - before),
            len(before - set(server.tools)),
        )

    def _failed(self, server: _Server, reason: str) -> None:
        server.state = "failed"
        server.error = self.redactor.redact_text(reason)
        self._unregister(server)
        log.warning(
            "MCP server %s (%s) failed to start; its tools are not available: %s",
            server.spec.name,
            server.spec.source,
            server.error,
        )

    async def _stop(self, server: _Server) -> None:
        connection, server.connection = server.connection, None
        if connection is not None:
            await connection.close()
        if server.state != "failed":
            server.state = "stopped"

    def _register(self, server: _Server, remote_tools: list[Any]) -> None:
        self._unregister(server)
        for remote in remote_tools:
            annotations = remote.annotations
            hint = bool(annotations and annotations.read_only_hint)
            trust, trust_from = judge_trust(server.spec, remote.name, hint)
            tool = McpTool(
                self,
                server=server.spec.name,
                remote=remote.name,
                description=remote.description or remote.title or "",
                schema=remote.input_schema,
                trust=trust,
                trust_from=trust_from,
            )
            if tool.name in self.registry:
                log.warning(
                    "MCP server %s: a second tool named %s is left out", tool.server, tool.name
                )
                continue
            self.registry.register(tool)
            server.tools.append(tool.name)

    def _unregister(self, server: _Server) -> None:
        for name in server.tools:
            self.registry.unregister(name)
        server.tools = []


def progress_line(done: float, total: float | None, message: str | None) -> str:
    """One line of live output for a progress notification: ``[3/10] step 3``."""
    count = f"{done:g}/{total:g}" if total else f"{done:g}"
    return f"[{count}] {message}\n" if message else f"[{count}]\n"


def _dump(item: Any) -> JSON:
    """A listed resource, template or prompt as JSON (its fields by their wire names)."""
    dumped: JSON = item.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def _store_blobs(blobs: list[Blob], ctx: ToolContext) -> dict[int, str]:
    """Store each blob as an artifact of the call's run; their ids by ``id(blob)``."""
    stored: dict[int, str] = {}
    for blob in blobs:
        try:
            artifact = ctx.store.create_artifact(
                blob.kind,
                run_id=ctx.run_id,
                session_id=ctx.session_id,
                title=blob.title,
                mime=blob.mime,
                content=blob.content,
            )
        except Exception as e:  # a by-product must not fail the call
            log.warning("could not store the %s of an MCP tool result: %s", blob.kind, e)
            continue
        stored[id(blob)] = artifact.id
    return stored
