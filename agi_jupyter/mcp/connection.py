"""One connection to one MCP server, through the official ``mcp`` client (``mcp.Client``).

The SDK's client enters anyio task groups and cancel scopes, which must be left by the task
that entered them, so each connection is *owned* by one task on the runtime loop: it opens the
client, lists the tools, then waits until it is told to stop or the connection ends. Calls are
made from the tools' own tasks through the open client.

The transport handed to the client is the SDK's own (``stdio_client``, ``streamable_http_client``
or ``sse_client``) wrapped so that the end of its read stream is noticed: a stdio server that
exited is then known to be dead *before* the next call, which restarts it rather than failing.
A stdio server's stderr goes to an anonymous temporary file; its tail explains a failure.

Beyond tools: a call's progress notifications go to the caller's ``progress`` callback as they
arrive; when the server says its tool list changed (``notifications/tools/list_changed``, or a
``subscriptions/listen`` event on 2026-07-28 sessions, which the owner opts in to) the tools are
listed again and handed to ``on_tools_changed``; ``listings`` lists its resources, resource
templates and prompts (a server without one of them has none); ``read_resource`` and
``get_prompt`` read one (an ``@`` mention's context).

Imported only when a server starts (it imports the ``mcp`` SDK).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agi_jupyter import __version__
from agi_jupyter.mcp import reaper
from agi_jupyter.mcp.config import McpServerSpec

log = logging.getLogger(__name__)

CLIENT_INFO = types.Implementation(name="agi-jupyter", version=__version__)
STDERR_TAIL_BYTES = 2000
CLOSE_TIMEOUT = 10.0  # the SDK's stdio shutdown is bounded (close stdin, TERM, KILL: ~6 s)
MAX_TOOL_PAGES = 50
RELIST_TIMEOUT = 10.0  # how long a call waits for the tool list it changed to be listed

# ``async (progress, total or None, message or None)``: a call's progress as the server reports it
Progress = ProgressFnT


@dataclass
class Listings:
    """What a server offers besides tools."""

    resources: list[types.Resource] = field(default_factory=list)
    templates: list[types.ResourceTemplate] = field(default_factory=list)
    prompts: list[types.Prompt] = field(default_factory=list)


class StartFailed(Exception):
    """The server could not be started or did not answer; ``str`` says why (with stderr)."""


class ConnectionLost(Exception):
    """The connection ended before or during a call."""


class CallFailed(Exception):
    """The server answered the call with a protocol error (unknown tool, bad arguments...)."""


class McpConnection:
    """A started server: its tools, and calls to them. Use it on the runtime loop only."""

    def __init__(
        self,
        spec: McpServerSpec,
        project: Path,
        on_tools_changed: Callable[[list[types.Tool]], None] | None = None,
    ) -> None:
        self.spec = spec
        self.project = project  # in the owner mark of its process (``reaper``)
        self.tools: list[types.Tool] = []
        self.on_tools_changed = on_tools_changed
        self._changed = asyncio.Event()  # the server said its tool list changed
        self._listed = asyncio.Event()  # no change is waiting to be listed
        self._listed.set()
        self._client: Client | None = None
        self._ended = asyncio.Event()
        self._stop = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None
        self._stderr: IO[str] | None = None

    @property
    def alive(self) -> bool:
        return self._client is not None and not self._ended.is_set()

    async def open(self) -> list[types.Tool]:
        """Start the server and list its tools (raises ``StartFailed``)."""
        ready: asyncio.Future[list[types.Tool]] = asyncio.get_running_loop().create_future()
        self._owner = asyncio.get_running_loop().create_task(self._own(ready))
        try:
            async with asyncio.timeout(self.spec.startup_timeout):
                self.tools = await asyncio.shield(ready)
        except TimeoutError:
            reason = f"did not answer within {self.spec.startup_timeout:g} s"
        except Exception as e:
            reason = _describe(e)
        else:
            return self.tools
        # The tail now: close() stops the server and drops its stderr file.
        note = self._tail_note()
        await self.close()
        raise StartFailed(f"{reason}{note}")

    async def call(
        self, name: str, arguments: dict[str, Any], progress: Progress | None = None
    ) -> types.CallToolResult:
        client = self._client
        if client is None or self._ended.is_set():
            raise ConnectionLost("the server is not running")
        try:
            result = await client.call_tool(name, arguments, progress_callback=progress)
        except MCPError as e:
            if e.error.code == types.CONNECTION_CLOSED or self._ended.is_set():
                note = self._tail_note()
                raise ConnectionLost(f"the server went away during the call{note}") from None
            raise CallFailed(f"the server refused the call: {e.error.message}") from None
        # A tool list the call changed (the server said so before answering) is listed before
        # the caller goes on: the model's next turn is offered it.
        await asyncio.sleep(0)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(RELIST_TIMEOUT):
                await self._listed.wait()
        return result

    async def listings(self) -> Listings:
        """The server's resources, resource templates and prompts (each empty when the server
        has none or refuses to list them)."""
        client = self._client
        if client is None or self._ended.is_set():
            raise ConnectionLost("the server is not running")
        found = Listings()
        with contextlib.suppress(MCPError):
            found.resources = await _pages(client.list_resources, "resources")
        with contextlib.suppress(MCPError):
            found.templates = await _pages(client.list_resource_templates, "resource_templates")
        with contextlib.suppress(MCPError):
            found.prompts = await _pages(client.list_prompts, "prompts")
        return found

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """``resources/read`` (raises ``ConnectionLost``, or ``CallFailed`` when refused)."""
        result: types.ReadResourceResult = await self._request(
            lambda client: client.read_resource(uri), "read"
        )
        return result

    async def get_prompt(self, name: str) -> types.GetPromptResult:
        """``prompts/get`` without arguments (raises like ``read_resource``)."""
        result: types.GetPromptResult = await self._request(
            lambda client: client.get_prompt(name), "prompt"
        )
        return result

    async def _request(self, send: Callable[[Client], Awaitable[Any]], what: str) -> Any:
        client = self._client
        if client is None or self._ended.is_set():
            raise ConnectionLost("the server is not running")
        try:
            return await send(client)
        except MCPError as e:
            if e.error.code == types.CONNECTION_CLOSED or self._ended.is_set():
                raise ConnectionLost(f"the server went away during the {what}") from None
            raise CallFailed(f"the server refused the {what}: {e.error.message}") from None

    async def close(self) -> None:
        """Stop the server (stdio: close stdin, then terminate, then kill) and wait for it."""
        self._stop.set()
        owner, self._owner = self._owner, None
        if owner is not None and not owner.done():
            try:
                async with asyncio.timeout(CLOSE_TIMEOUT):
                    await asyncio.shield(owner)
            except TimeoutError:
                owner.cancel()
            except Exception:  # its failure was already reported by open() or the owner
                log.debug("MCP server %s ended with an error", self.spec.name, exc_info=True)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr (stdio servers; redact before showing)."""
        handle = self._stderr
        if handle is None or handle.closed:
            return ""
        size = os.fstat(handle.fileno()).st_size
        start = max(0, size - STDERR_TAIL_BYTES)
        data = os.pread(handle.fileno(), STDERR_TAIL_BYTES, start)
        text = data.decode("utf-8", errors="replace")
        if start:
            text = text.split("\n", 1)[-1]
        return text.strip()

    def _tail_note(self) -> str:
        tail = self.stderr_tail()
        return f"; its stderr ends with:\n{tail}" if tail else ""

    # --- the owner task ----------------------------------------------------------------------

    async def _own(self, ready: asyncio.Future[list[types.Tool]]) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = await stack.enter_async_context(
                    Client(
                        _Watched(transport, self._ended),
                        client_info=CLIENT_INFO,
                        message_handler=self._on_message,
                    )
                )
                tools = await _all_tools(client)
                self._client = client
                ready.set_result(tools)
                waits = [self._stop.wait(), self._ended.wait(), self._follow_tools(client)]
                if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    try:
                        listen = client.listen(tools_list_changed=True)
                        waits.append(self._drain(await stack.enter_async_context(listen)))
                    except Exception as e:  # the server does not follow: its list stays
                        log.info("MCP server %s: no tool list changes: %s", self.spec.name, e)
                await _first(*waits)
        except Exception as e:
            if not ready.done():
                ready.set_exception(e)
            else:
                log.info("MCP server %s: the connection ended: %s", self.spec.name, _describe(e))
        finally:
            self._client = None
            self._ended.set()
            if not ready.done():
                ready.cancel()

    def _tools_changed(self) -> None:
        self._listed.clear()
        self._changed.set()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed()

    async def _drain(self, events: Any) -> None:
        """A ``subscriptions/listen`` stream: each event says the tool list changed."""
        async for _ in events:
            self._tools_changed()
        await self._ended.wait()  # the stream ended with the connection

    async def _follow_tools(self, client: Client) -> None:
        """List the tools again whenever the server says they changed (changes that arrive
        meanwhile are taken by the same listing)."""
        while True:
            await self._changed.wait()
            self._changed.clear()
            try:
                tools = await _all_tools(client)
            except MCPError as e:
                log.info("MCP server %s: could not list its tools again: %s", self.spec.name, e)
            else:
                self.tools = tools
                if self.on_tools_changed is not None:
                    self.on_tools_changed(tools)
            if not self._changed.is_set():
                self._listed.set()

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        spec = self.spec
        if spec.transport == "stdio":
            # Kept past the owner's end (a failure's tail is read after it); close() closes it.
            self._stderr = tempfile.TemporaryFile(  # noqa: SIM115
                mode="w+", encoding="utf-8", errors="replace"
            )
            params = StdioServerParameters(
                command=spec.command or "",
                args=list(spec.args),
                env={**spec.env, reaper.OWNER_VARIABLE: reaper.owner_mark(self.project)},
                cwd=spec.cwd,
            )
            return stdio_client(params, errlog=self._stderr)
        if spec.transport == "sse":
            return sse_client(spec.url or "", headers=dict(spec.headers) or None)
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=dict(spec.headers), timeout=httpx2.Timeout(30.0, read=300.0))
        )
        return streamable_http_client(spec.url or "", http_client=http)


async def _all_tools(client: Client) -> list[types.Tool]:
    tools: list[types.Tool] = await _pages(client.list_tools, "tools")
    return tools


async def _pages(lister: Any, attribute: str) -> list[Any]:
    """Every page of a ``list_*`` call (bounded like the tools')."""
    found: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await lister(cursor=cursor)
        found.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if not cursor:
            break
    return found


async def _first(*waits: Any) -> None:
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


def _describe(error: BaseException) -> str:
    """One line for an error, looking inside the exception groups of anyio task groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, MCPError) and error.error.code == types.CONNECTION_CLOSED:
        return "it exited (or closed its output) before answering"
    if isinstance(error, FileNotFoundError):
        return f"command not found: {error.filename or error}"
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class _Watched:
    """An SDK transport whose read stream sets ``ended`` when the connection closes."""

    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self._inner = inner
        self._ended = ended

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self._inner.__aenter__()
        return _WatchedRead(read, self._ended), write

    async def __aexit__(self, *exc: Any) -> Any:
        self._ended.set()
        return await self._inner.__aexit__(*exc)


class _WatchedRead:
    """The read side of a transport (the SDK's ``ReadStream`` protocol), watched for its end."""

    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self._inner = inner
        self._ended = ended

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedRead:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        self._ended.set()
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        # ``last_context``: the sender's contextvars, which the SDK reads when present.
        return getattr(self._inner, name)
