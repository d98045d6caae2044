"""One run on a ``ClaudeSDKClient``: connect, send the prompt, read until the run is over.

The client stays open for the run, in streaming mode, so the run can take more user messages
(``queue``) and be interrupted (``interrupt``); ``ClaudeLive`` is the handle the dispatcher uses
for both. Errors become ours: the CLI missing -> ``SdkNotAvailable``; the CLI failing or its
connection breaking -> ``ProviderDisconnected`` (retryable); an error result -> a
``ProviderError`` raised after the partial answer went to history. A cancelled run interrupts
the CLI and closes it (the SDK terminates, then kills, a CLI that does not exit) before the
cancellation goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from claude_agent_sdk import (
    ClaudeSDKClient,
    ClaudeSDKError,
    CLINotFoundError,
    ProcessError,
    ResultMessage,
)

from agi_jupyter.aio import complete
from agi_jupyter.errors import (
    AgiError,
    ProviderDisconnected,
    ProviderError,
    ProviderHTTPError,
    SdkNotAvailable,
)
from agi_jupyter.sdk.claude.adapter import INSTALL
from agi_jupyter.sdk.claude.options import build_options
from agi_jupyter.sdk.claude.stream import ClaudeStream, new_uuid, user_message
from agi_jupyter.sdk.claude.tools import ToolNameMap, ToolUseIds, mcp_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agi_jupyter.runtime.agent_loop import AttemptResult
    from agi_jupyter.sdk.base import SdkRunParams

log = logging.getLogger(__name__)

INTERRUPT_TIMEOUT = 5.0  # the CLI answers an interrupt request at once; don't hang on a sick one
MISSING_SESSION = "No conversation found"  # the CLI's error when ``resume`` names no session


class ClaudeLive:
    """The live handle of a running run: takes queued messages and interrupts."""

    def __init__(self, client: ClaudeSDKClient, stream: ClaudeStream) -> None:
        self.client = client
        self.stream = stream
        self.aborted = False

    async def send(self, text: str) -> None:
        queued = self.stream.queue(text)
        try:
            await self.client.query(_one(user_message(text, queued.uuid)))
        except BaseException:
            self.stream.unqueue(queued)
            raise

    async def interrupt(self) -> None:
        self.aborted = True
        await asyncio.wait_for(self.client.interrupt(), INTERRUPT_TIMEOUT)


async def run_claude(params: SdkRunParams) -> AttemptResult:
    resume = params.state.get("session_id")
    try:
        return await _attempt(params, resume)
    except _SessionMissing:
        # The CLI's transcript of the session is gone (a new checkout, a deleted .agi/claude):
        # go on in a new Claude session rather than fail the run forever.
        log.warning("claude session %s not found; starting a new one", resume)
        params.state = {}
        await params.save_state({})
        return await _attempt(params, None)


class _SessionMissing(Exception):
    pass


async def _attempt(params: SdkRunParams, resume: str | None) -> AttemptResult:
    names = ToolNameMap([t.name for t in params.tools])
    ids = ToolUseIds()
    options = build_options(
        params, server=mcp_server(params, names, ids), allowed=names.allowed(), resume=resume
    )
    stream = ClaudeStream(params, names, ids)
    client = ClaudeSDKClient(options)
    live: ClaudeLive | None = None
    try:
        await client.connect()
        await client.query(_one(user_message(params.prompt, new_uuid())))
        live = ClaudeLive(client, stream)
        params.on_handle(live)  # only now: a queued message must follow the prompt
        async for message in client.receive_messages():
            if await stream.feed(message):
                break
        else:
            raise ProviderDisconnected("the claude CLI ended its output before the answer")
        if live.aborted:
            # Interrupted for a new message: the dispatcher ends the run ``cancelled``, with
            # what it has in history.
            return await params.result()
        return await _outcome(params, stream)
    except asyncio.CancelledError:
        await _stop(client, interrupt=live is not None and not stream.done)
        raise
    except CLINotFoundError as e:
        raise SdkNotAvailable(f"the claude CLI was not found ({e}): {INSTALL}") from e
    except ProcessError as e:
        if resume and not stream.started and MISSING_SESSION in str(e):
            raise _SessionMissing from e
        raise ProviderDisconnected(f"the claude CLI failed: {_first_line(e)}") from e
    except ClaudeSDKError as e:
        raise ProviderDisconnected(f"lost the claude CLI: {_first_line(e)}") from e
    finally:
        stream.done = True  # no more queued messages: the caller queues a run instead
        try:
            await stream.flush_waiting()
        finally:  # (a run taken over meanwhile fails its writes: the CLI is closed anyway)
            await complete(_disconnect(client))


async def _outcome(params: SdkRunParams, stream: ClaudeStream) -> AttemptResult:
    """The attempt's result, or the error of its last turn."""
    result = stream.result
    attempt = await params.result()
    if result is None or not result.is_error:
        return attempt
    if result.subtype == "error_max_turns":
        return replace(attempt, max_iterations_reached=True)
    raise result_error(result, stream.mapper.error)


def result_error(result: ResultMessage, api_error: tuple[str, str] | None) -> AgiError:
    """The error of a failed turn (``api_error``: the kind and text of the CLI's API error)."""
    kind, text = api_error or ("", "")
    reason = text or "; ".join(result.errors or []) or result.result or result.subtype
    message = f"claude: {reason}"
    if result.api_error_status is not None:
        # The CLI has already retried what is worth retrying.
        return ProviderHTTPError(message, status=result.api_error_status, retryable=False)
    if kind == "server_error":
        return ProviderDisconnected(message)
    if result.subtype == "error_max_budget_usd":
        return ProviderError("claude: the session's max_budget_usd was reached")
    return ProviderError(message)


async def _stop(client: ClaudeSDKClient, *, interrupt: bool) -> None:
    """Stop the CLI for a cancelled run: interrupt its turn (so it exits at once on end of
    input), then close it."""
    if interrupt:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.interrupt(), INTERRUPT_TIMEOUT)
    await complete(_disconnect(client))


async def _disconnect(client: ClaudeSDKClient) -> None:
    """Close the client whole. ``disconnect`` is bounded and escalates to kill by itself; it is
    not wrapped in a timeout, which would skip that escalation. It runs to its end even when the
    run is cancelled meanwhile (``complete``): the SDK's anyio shield does not hold off an
    asyncio ``task.cancel()``, and a cut-short ``disconnect`` skips closing its message stream
    (a ``ResourceWarning`` when it is collected) and may leave the CLI running."""
    query = getattr(client, "_query", None)  # closed by ``disconnect`` unless it fails first
    try:
        await client.disconnect()
    except Exception:  # the run's outcome matters more than a failed close
        log.info("could not close the claude CLI cleanly", exc_info=True)
    finally:
        if query is not None:
            query.close_receive_stream()


async def _one(message: dict[str, object]) -> AsyncIterator[dict[str, object]]:
    yield message


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:300] if lines else type(error).__name__
