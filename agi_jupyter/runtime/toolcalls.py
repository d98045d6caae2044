"""Running one of our tools for a run: the context, the gating, the deltas, the outcome.

Shared by the native loop and the agent-SDK adapters (whose SDKs call our tools over MCP), so
gating, path confinement, timeouts, artifacts and redaction are the same for every SDK.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from agi_jupyter import events as ev
from agi_jupyter.errors import RunLost
from agi_jupyter.records import JSON, Run, Session
from agi_jupyter.tools import Emit, ToolContext, execute_tool_call, preview_tool_call
from agi_jupyter.tools.policy import ToolPolicy

if TYPE_CHECKING:
    from collections.abc import Collection

    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.runtime.emitter import RunEmitter
    from agi_jupyter.tools import ToolOutcome


def _emit_live(emitter: RunEmitter, event: ev.ToolCallDelta) -> None:
    with contextlib.suppress(RunLost):
        emitter.emit(event)


async def run_tool(
    deps: RuntimeDeps,
    run: Run,
    session: Session,
    emitter: RunEmitter,
    *,
    tool_call_id: str,
    name: str,
    arguments: JSON,
    allowed: Collection[str],
    parse_error: str | None = None,
    turn: int | None = None,
    approved: bool = False,
    record: Callable[[ToolOutcome], Awaitable[None]] | None = None,
    park: Callable[[str], bool] | None = None,
) -> ToolOutcome:
    """Execute one tool call; live chunks go out as ``tool.call.delta``. Never raises for the
    tool's own problems (they come back as an error outcome the model sees). The session's
    tool policy applies: a call that needs a person's decision runs only ``approved``.
    ``record`` stores the outcome, even when the run is cancelled after the tool ran.
    ``park``: the runner can park the run on this call (``ToolContext.park``)."""

    def emit_delta(channel: str, chunk: str) -> None:
        # Live output is best effort: once the run changed hands (a stalled owner), its chunks
        # go nowhere, and the tool goes on to its end (its result is refused by the fence).
        # Raising ``RunLost`` into the tool left a shell pump's task failing unretrieved.
        # (On the loop or from another thread: a callback's exception would be logged.)
        event = ev.ToolCallDelta(tool_call_id=tool_call_id, channel=channel, chunk=chunk)
        deps.call_in_loop(_emit_live, emitter, event)

    agent = deps.agents[session.agent]
    ctx = tool_context(deps, run, session, tool_call_id, turn=turn, emit=emit_delta)
    if park is not None:
        ctx = replace(ctx, park=park)
    return await execute_tool_call(
        deps.registry,
        name=name,
        arguments=arguments,
        raw_arguments_error=parse_error,
        allowed=allowed,
        ctx=ctx,
        timeout=deps.config.tool_timeout,
        redactor=deps.redactor,
        policy=ToolPolicy.for_session(agent, session, deps.config),
        approved=approved,
        record=record,
    )


def tool_context(
    deps: RuntimeDeps,
    run: Run,
    session: Session,
    tool_call_id: str,
    *,
    turn: int | None = None,
    emit: Emit | None = None,
) -> ToolContext:
    """What one call of the run's may use."""
    ctx = ToolContext(
        project=deps.config.project,
        store=deps.store,
        config=deps.config,
        session_id=session.id,
        run_id=run.id,
        tool_call_id=tool_call_id,
        registry=deps.registry,
        features=deps.features_for(session),
        agent=session.agent,
        read_only=deps.agents[session.agent].read_only,
        turn=turn,
    )
    return ctx if emit is None else ctx.for_call(tool_call_id, emit=emit)


async def preview_call(
    deps: RuntimeDeps, run: Run, session: Session, tool_call_id: str, name: str, arguments: JSON
) -> str | None:
    """The diff a call that waits for a person would make (``Tool.preview``)."""
    ctx = tool_context(deps, run, session, tool_call_id)
    return await preview_tool_call(deps.registry, name, arguments, ctx, deps.redactor)
