"""The ``acp`` adapter: any Agent Client Protocol agent as a session's SDK.

adapter      AcpAdapter: capabilities, availability, the runs, the agent processes kept
settings     AcpAgents / AcpLaunch: which agent a session starts, references resolved
live         AcpLive: one agent process and its ACP session (imports the ACP library)
client       our acp.Client: updates -> history, files, terminals, permissions, gating
mapping      session updates -> canonical history events
permissions  PermissionDecider: by the agent's gating until an approval flow plugs in
terminals    terminal/* requests as confined processes
"""

from __future__ import annotations

from agi_jupyter.sdk.acp.adapter import AcpAdapter

__all__ = ["AcpAdapter"]
