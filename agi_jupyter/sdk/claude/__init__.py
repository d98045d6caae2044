"""The Claude Agent SDK adapter (``sdk="claude"``; seed 003, DESIGN.md section 10).

adapter   ClaudeAdapter: capabilities, availability, the entry points (imports no SDK)
client    one run on a ClaudeSDKClient: connect, prompt, read, queue, interrupt, cancel, errors
stream    the run's reading of the CLI's messages: history, queued messages, state, the end
mapping   SDK messages -> history events
options   ClaudeAgentOptions and the CLI's environment (built-in tools off, isolation)
tools     our tools as the ``agi`` MCP server; tool_use id correlation
"""

from __future__ import annotations

from agi_jupyter.sdk.claude.adapter import ClaudeAdapter

__all__ = ["ClaudeAdapter"]
