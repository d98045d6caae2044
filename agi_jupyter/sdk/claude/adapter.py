"""The ``claude`` adapter: sessions run by the Claude Agent SDK (``claude-agent-sdk``).

The SDK drives its bundled ``claude`` CLI; our tools reach it as an in-process MCP server, its
messages become canonical history, and its session id is kept in the session's adapter state so
the next run resumes the same Claude conversation. This module imports no SDK: ``client`` (and
with it ``claude_agent_sdk``) is imported when a run starts.

Capabilities, as the CLI behaves (checked by ``tests/sdk``): a message sent while a run streams
goes into the running turn (the CLI takes it in next to a tool result, or answers it right after
the current answer); ``interrupt`` stops the turn at once; tool calls, results and thinking are
all reported.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from agi_jupyter.errors import SdkNotAvailable
from agi_jupyter.kinds import SdkName
from agi_jupyter.sdk.base import DisplayModel, SdkAdapter, SdkCapabilities, SdkRunParams

if TYPE_CHECKING:
    from agi_jupyter.records import Session
    from agi_jupyter.runtime.agent_loop import AttemptResult

MODULE = "claude_agent_sdk"
INSTALL = "pip install 'agi-jupyter[claude]'"


class ClaudeAdapter(SdkAdapter):
    id = SdkName.CLAUDE
    display_name = "Claude Agent SDK"
    capabilities = SdkCapabilities(
        queue_while_streaming=True, interrupt=True, tool_events=True, full_history=True
    )
    install_hint = INSTALL
    providers = frozenset({"anthropic"})

    def resolve_display_model(self, session: Session) -> DisplayModel:
        return DisplayModel("anthropic", session.model)

    def check_available(self) -> None:
        if importlib.util.find_spec(MODULE) is None:
            raise SdkNotAvailable(f"the Claude Agent SDK is not installed: {INSTALL}")

    async def run(self, params: SdkRunParams) -> AttemptResult:
        self.check_available()
        from agi_jupyter.sdk.claude.client import run_claude

        return await run_claude(params)

    async def queue_message(self, handle: object, text: str) -> None:
        from agi_jupyter.sdk.claude.client import ClaudeLive

        if not isinstance(handle, ClaudeLive):
            raise TypeError(f"not a claude run handle: {handle!r}")
        await handle.send(text)

    async def abort(self, handle: object) -> None:
        from agi_jupyter.sdk.claude.client import ClaudeLive

        if not isinstance(handle, ClaudeLive):
            raise TypeError(f"not a claude run handle: {handle!r}")
        await handle.interrupt()
