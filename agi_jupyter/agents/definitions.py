"""The built-in agents: ``general`` (no tools), ``plan`` (read-only tools), ``build`` (writes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from agi_jupyter.config import AcpCommand
from agi_jupyter.kinds import SdkName, Verdict


@dataclass(frozen=True)
class Agent:
    """An agent: its prompt and the tools it may use (names or ``*`` globs like ``fs.*``)."""

    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] = ()
    read_only: bool = False
    model: str | None = None
    # The agent's own request settings, over the config's for its model (None: not set).
    temperature: float | None = None
    max_output_tokens: int | None = None
    sdk: SdkName | None = None  # the agent SDK its sessions use; None: the configured default
    acp: AcpCommand | None = None  # the ACP agent its ``acp`` sessions start (else config's)
    # Tool policy rules (name or glob -> allow | ask | deny): see tools/policy.py.
    permissions: Mapping[str, Verdict] = field(default_factory=dict)
    source: str = "built-in"
    extra: dict[str, str] = field(default_factory=dict)


_COMMON = (
    "You are an assistant that lives inside a Jupyter project. Answer in Markdown. "
    "Be concise and concrete; when you use a tool, say briefly what you found."
)

# In an agent's tool list: every project tool (``.agi/tools/``, capabilities it wrote itself).
PROJECT_TOOLS = "@project"
# Every tool of the MCP servers in ``.agi/mcp.json`` (``mcp.<server>.<tool>``).
MCP_TOOLS = "mcp.*"

READ_ONLY_TOOLS: tuple[str, ...] = (
    "fs.read",
    "fs.list",
    "fs.search",
    "sql.query",
    "tasks",
    "notebook.read",
)
BUILD_TOOLS: tuple[str, ...] = (
    *READ_ONLY_TOOLS,
    "fs.write",
    "apply_patch",
    "shell.run",
    "python",
    "notebook.*",
    "write_capability",
    "reload",
    PROJECT_TOOLS,
    MCP_TOOLS,
)

# The built-in ``build`` agent's tool policy: commands, code and edits ask (tools/policy.py).
BUILD_PERMISSIONS: Mapping[str, Verdict] = {
    "shell.run": Verdict.ASK,
    "python": Verdict.ASK,
    "apply_patch": Verdict.ASK,
    "fs.write": Verdict.ASK,
    "notebook.edit": Verdict.ASK,
    "notebook.insert": Verdict.ASK,
    "notebook.delete": Verdict.ASK,
    "notebook.run": Verdict.ASK,
}

BUILTIN_AGENTS: dict[str, Agent] = {
    agent.name: agent
    for agent in (
        Agent(
            name="general",
            description="Conversation and explanations; no tools unless configured.",
            prompt=_COMMON,
        ),
        Agent(
            name="plan",
            description="Reads the project (files, store, tasks) and plans; changes nothing.",
            prompt=_COMMON
            + " You plan: read what you need, then answer with a short, ordered plan. "
            "You cannot change files.",
            tools=READ_ONLY_TOOLS,
            read_only=True,
        ),
        Agent(
            name="build",
            description="Edits files and notebook cells, applies patches, runs shell commands and "
            "notebook code.",
            prompt=_COMMON
            + " You build: inspect before you change, prefer small patches (apply_patch), "
            "and check your work by running it.",
            tools=BUILD_TOOLS,
            permissions=dict(BUILD_PERMISSIONS),
        ),
    )
}
