"""The ``external`` adapter: an external agent's tool call, recorded as a run like any other.

When an agent outside this runtime (an MCP client of ``agi mcp`` or ``/agi/mcp``) calls one of
our tools, the call becomes a run of that client's session whose state holds the call
(``LoopState.external_call``): the run manager claims and drives it as usual, and this adapter
reports it the way an SDK reports its model's tool calls. The session's history then shows an
assistant message (the external agent's call, ``provider: mcp``, ``model``: the client's name)
and the tool's result, with a ``tool_calls`` row, live events and artifacts; the call itself
goes through ``params.call_tool``, i.e. the agent's gating, path confinement, timeouts and
redaction.

Such a session answers no user messages (there is no model behind it), and the adapter is not
listed in ``agi sdks``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agi_jupyter.errors import UsageError
from agi_jupyter.sdk.base import (
    DisplayModel,
    SdkAdapter,
    SdkCapabilities,
    SdkRunParams,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnMeta,
)

if TYPE_CHECKING:
    from agi_jupyter.records import Session
    from agi_jupyter.runtime.agent_loop import AttemptResult

EXTERNAL_SDK = "external"
PROVIDER = "mcp"


class ExternalAdapter(SdkAdapter):
    id = EXTERNAL_SDK
    display_name = "External agent (MCP client)"
    capabilities = SdkCapabilities(tool_events=True, full_history=True)
    listed = False

    def resolve_display_model(self, session: Session) -> DisplayModel:
        client = (session.metadata.get("external") or {}).get("client")
        return DisplayModel(PROVIDER, client or session.model)

    def check_available(self) -> None:
        """Always available: nothing to install."""

    async def run(self, params: SdkRunParams) -> AttemptResult:
        state = params.run.loop_state
        call = None if state is None else state.external_call
        if call is None:
            raise UsageError(
                "this session records an external agent's tool calls; it answers no messages"
            )
        call_id, name, arguments = call.id, call.name, dict(call.arguments)
        await params.on_history(ToolCallEvent(id=call_id, name=name, arguments=arguments))
        await params.on_history(
            TurnMeta(provider=PROVIDER, model=params.run.model, stop_reason="tool_use")
        )
        outcome = await params.call_tool(call_id, name, arguments)
        await params.on_history(
            ToolResultEvent(id=call_id, name=name, output=outcome.output, is_error=not outcome.ok)
        )
        await params.on_history(TurnDone())
        return await params.result()
