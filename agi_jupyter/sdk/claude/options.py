"""``ClaudeAgentOptions`` for one run, and the CLI's environment.

Safety: Claude Code's built-in tools (Bash, Read, Write, Edit, WebFetch, ...) are switched off
(``tools=[]``, and listed in ``disallowed_tools`` too); only our MCP tools are offered and
pre-approved, and ``permission_mode="dontAsk"`` denies anything else instead of prompting. So
every file or shell action goes through our gated, path-confined tools.

Isolation: ``setting_sources=[]`` and ``strict_mcp_config`` keep the user's and the project's
Claude settings, hooks and MCP servers out; ``CLAUDE_CONFIG_DIR`` is ``<project>/.agi/claude``,
so the CLI neither reads the user's ``~/.claude`` (settings, memory, login) nor writes there: its
session transcripts, which ``resume`` reads back, and its logs (``XDG_CACHE_HOME``) stay with
the project. The key and base URL
come from our ``anthropic`` provider settings; non-essential traffic (telemetry, error
reports, auto-update) is off.

Per-session settings, all optional, in ``session.metadata["claude"]``:

``max_budget_usd``  the CLI stops a run that would cost more (``error_max_budget_usd``)
``effort``          ``low`` | ``medium`` | ``high`` | ``xhigh`` | ``max``
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk.types import EffortLevel, McpSdkServerConfig, McpServerConfig, ThinkingConfig

from agi_jupyter.errors import ProviderNotConfigured, UsageError
from agi_jupyter.providers.anthropic_mapping import THINKING_BUDGETS
from agi_jupyter.sdk.base import SdkRunParams
from agi_jupyter.sdk.claude.mapping import PROVIDER

METADATA_KEY = "claude"
CONFIG_DIR = Path(".agi") / "claude"
BUILTIN_TOOLS = (
    "Agent",
    "Bash",
    "BashOutput",
    "Edit",
    "ExitPlanMode",
    "Glob",
    "Grep",
    "KillShell",
    "MultiEdit",
    "NotebookEdit",
    "Read",
    "Skill",
    "SlashCommand",
    "Task",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
    "Write",
)
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",  # no memory files written behind our back
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",  # our system prompt is the whole instruction
}
EFFORTS = ("low", "medium", "high", "xhigh", "max")


def cli_env(params: SdkRunParams) -> dict[str, str]:
    """The variables set for the CLI (over the inherited environment)."""
    settings = params.config.provider(PROVIDER)
    if not settings.api_key:
        raise ProviderNotConfigured(
            "the claude SDK needs an Anthropic API key: set ANTHROPIC_API_KEY "
            "(or the anthropic provider's api_key)"
        )
    env = dict(QUIET_ENV)
    home = config_dir(params.project)
    env["CLAUDE_CONFIG_DIR"] = str(home)
    env["XDG_CACHE_HOME"] = str(home / "cache")  # the CLI's MCP logs, else under ~/.cache
    env["ANTHROPIC_API_KEY"] = settings.api_key
    env["ANTHROPIC_AUTH_TOKEN"] = ""  # an inherited token would win over the key
    if settings.base_url:
        env["ANTHROPIC_BASE_URL"] = settings.base_url
    return env


def config_dir(project: Path) -> Path:
    path = project / CONFIG_DIR
    path.mkdir(parents=True, exist_ok=True)
    return path


def session_settings(params: SdkRunParams) -> dict[str, Any]:
    raw = params.session.metadata.get(METADATA_KEY) or {}
    if not isinstance(raw, dict):
        raise UsageError(f"session metadata {METADATA_KEY!r} must be an object")
    return raw


def build_options(
    params: SdkRunParams,
    *,
    server: McpSdkServerConfig,
    allowed: list[str],
    resume: str | None,
) -> ClaudeAgentOptions:
    if params.run.provider not in (None, PROVIDER) or not params.run.model:
        model = f"{params.run.provider}:{params.run.model}"
        raise UsageError(f"the claude SDK runs Anthropic models, not {model}")
    extra = session_settings(params)
    servers: dict[str, McpServerConfig] = {"agi": server}
    options = ClaudeAgentOptions(
        model=params.run.model,
        system_prompt=params.system_prompt,
        cwd=params.project,
        max_turns=params.max_turns,
        tools=[],
        allowed_tools=allowed,
        disallowed_tools=list(BUILTIN_TOOLS),
        permission_mode="dontAsk",
        mcp_servers=servers,
        strict_mcp_config=True,
        setting_sources=[],
        include_partial_messages=True,
        env=cli_env(params),
        resume=resume,
        thinking=thinking(params.run.thinking_level or params.session.thinking_level),
    )
    if extra.get("max_budget_usd") is not None:
        options.max_budget_usd = float(extra["max_budget_usd"])
    if extra.get("effort") is not None:
        if extra["effort"] not in EFFORTS:
            raise UsageError(f"claude effort must be one of {', '.join(EFFORTS)}")
        options.effort = cast(EffortLevel, extra["effort"])
    return options


def thinking(level: str | None) -> ThinkingConfig:
    """The session's thinking level as a thinking budget (the native provider's budgets);
    off by default, where the CLI would otherwise think on every answer."""
    budget = THINKING_BUDGETS.get((level or "off").lower())
    if budget is None:
        return {"type": "disabled"}
    return {"type": "enabled", "budget_tokens": budget}
