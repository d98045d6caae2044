"""Agent-SDK adapters (seed 003, DESIGN.md section 10): native, claude, codex, acp (any agent
speaking the Agent Client Protocol), and external (MCP clients' calls, recorded).

base       SdkAdapter, SdkCapabilities, SdkRunParams, the history events
history    CanonicalHistory: history events -> stored messages, tool calls and live events
dispatch   SdkDispatch: runs agent runs with the session's adapter; the queue/interrupt matrix
native     our own loop behind the interface
registry   the adapters by id
"""

from __future__ import annotations

from agi_jupyter.kinds import DEFAULT_SDK, SdkName
from agi_jupyter.sdk.base import (
    DisplayModel,
    SdkAdapter,
    SdkCapabilities,
    SdkRunParams,
)

__all__ = [
    "DEFAULT_SDK",
    "DisplayModel",
    "SdkAdapter",
    "SdkCapabilities",
    "SdkName",
    "SdkRunParams",
]
