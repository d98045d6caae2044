"""The agent-SDK adapters by id (seed 003's registry; no DI framework, a plain map)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agi_jupyter.sdk.acp.adapter import AcpAdapter
from agi_jupyter.sdk.claude.adapter import ClaudeAdapter
from agi_jupyter.sdk.codex.adapter import CodexAdapter
from agi_jupyter.sdk.external import ExternalAdapter
from agi_jupyter.sdk.native import NativeAdapter

if TYPE_CHECKING:
    from agi_jupyter.runtime.agent_loop import AgentLoop
    from agi_jupyter.sdk.acp.settings import AcpAgents
    from agi_jupyter.sdk.base import SdkAdapter


def default_adapters(loop: AgentLoop, *, acp: AcpAgents | None = None) -> dict[str, SdkAdapter]:
    """``native`` plus the optional SDKs (their modules import the SDK only when a run starts,
    so a missing SDK shows up as ``SDK_NOT_AVAILABLE`` on use, never at import)."""
    adapters: list[SdkAdapter] = [
        NativeAdapter(loop),
        ClaudeAdapter(),
        CodexAdapter(),
        AcpAdapter(acp),
        ExternalAdapter(),
    ]
    return {adapter.id: adapter for adapter in adapters}
