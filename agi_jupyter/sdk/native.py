"""The ``native`` adapter: our own agent loop (``runtime.agent_loop.AgentLoop``) behind the SDK
interface, unchanged. It writes the canonical history itself (it is the reference the other
adapters' history is assembled to match) and needs none of the prepared params."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agi_jupyter.kinds import SdkName
from agi_jupyter.sdk.base import DisplayModel, SdkAdapter, SdkCapabilities, SdkRunParams

if TYPE_CHECKING:
    from agi_jupyter.records import Run, Session
    from agi_jupyter.runtime.agent_loop import AgentLoop, AttemptResult
    from agi_jupyter.runtime.emitter import RunEmitter


class NativeAdapter(SdkAdapter):
    id = SdkName.NATIVE
    display_name = "agi-jupyter (native)"
    # A message sent while a run streams waits as a queued run (the durable queue); an
    # interrupt cancels the run at its next safe point.
    capabilities = SdkCapabilities(
        queue_while_streaming=False, interrupt=True, tool_events=True, full_history=True
    )

    def __init__(self, loop: AgentLoop) -> None:
        self.loop = loop

    def resolve_display_model(self, session: Session) -> DisplayModel:
        return DisplayModel(session.provider, session.model)

    def check_available(self) -> None:
        return None

    async def execute(
        self, run: Run, emitter: RunEmitter, prepare: Callable[[], SdkRunParams]
    ) -> AttemptResult:
        return await self.loop.run_attempt(run, emitter)

    async def run(self, params: SdkRunParams) -> AttemptResult:
        return await self.loop.run_attempt(params.run, params.emitter)

    async def abort(self, handle: object) -> None:
        return None  # the run manager's cancel stops the loop at its next safe point
