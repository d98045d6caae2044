"""Tools: the Tool type, the registry and its gating, built-in tools, the project tool loader.

base        Tool, FunctionTool / @tool, ToolResult, ArtifactDraft, ToolContext
registry    ToolRegistry: register, offered(allowed globs, features), load_project_tools,
            prepare (tool sources such as MCP servers register what an agent can reach)
executor    execute_tool_call -> ToolOutcome (never raises for a tool's problems)
redact      Redactor: secret values (environment, credentials file, patterns) and their
            encoded forms -> [REDACTED:NAME]; StreamRedactor for text arriving in pieces
paths       locate / read_bytes_in_project / write_bytes_in_project / delete_in_project /
            walk_dir_in_project: files opened through folder descriptors, confined to the
            project root with no check-then-use window (resolve_in_project: display only)
builtins    builtin_tools(): fs.*, apply_patch, shell.run, sql.query, tasks,
            write_capability, reload
"""

from __future__ import annotations

from agi_jupyter.tools.base import (
    FEATURE_KERNEL,
    AnyTool,
    ArtifactDraft,
    Emit,
    FunctionTool,
    Tool,
    ToolArgs,
    ToolContext,
    ToolResult,
    tool,
)
from agi_jupyter.tools.builtins import builtin_tools, create_registry
from agi_jupyter.tools.executor import ToolOutcome, execute_tool_call, preview_tool_call
from agi_jupyter.tools.paths import resolve_in_project
from agi_jupyter.tools.redact import Redactor
from agi_jupyter.tools.registry import LoadReport, ToolRegistry, ToolSource, is_allowed

__all__ = [
    "FEATURE_KERNEL",
    "AnyTool",
    "ArtifactDraft",
    "Emit",
    "FunctionTool",
    "LoadReport",
    "Redactor",
    "Tool",
    "ToolArgs",
    "ToolContext",
    "ToolOutcome",
    "ToolRegistry",
    "ToolResult",
    "ToolSource",
    "builtin_tools",
    "create_registry",
    "execute_tool_call",
    "is_allowed",
    "preview_tool_call",
    "resolve_in_project",
    "tool",
]
