"""Project agents and the system prompt.

``.agi/agents.json`` adds agents or overrides a built-in one's tools, description, model or
prompt file; ``.agi/agents/<agent>/agent.txt`` overrides an agent's prompt; ``SOUL.md``,
``USER.md`` and ``AGENTS.md`` in ``.agi/`` are joined into every system prompt (seed 004's
bootstrap files), followed by the offered tools' own prompt contexts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agi_jupyter.agents.definitions import _COMMON, BUILTIN_AGENTS, Agent
from agi_jupyter.config import AcpCommand
from agi_jupyter.errors import ConfigError
from agi_jupyter.kinds import SdkName, Verdict
from agi_jupyter.records import Task, utc_now

BOOTSTRAP_FILES = ("SOUL.md", "USER.md", "AGENTS.md")
SECTION_SEPARATOR = "\n\n---\n\n"


class _AgentEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str | None = None
    tools: list[str] | None = None
    read_only: bool | None = None
    prompt: str | None = None  # a path relative to the project, or the prompt text itself
    model: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_output_tokens: int | None = Field(default=None, ge=1)
    sdk: SdkName | None = None
    acp: dict[str, Any] | None = None  # {command, args, env}: see config.AcpCommand
    # Tool policy rules, merged over the base agent's (tools/policy.py).
    permissions: dict[str, Verdict] | None = None


def load_agents(project: Path) -> dict[str, Agent]:
    """Built-in agents merged with the project's ``.agi/agents.json`` and prompt overrides."""
    agents = dict(BUILTIN_AGENTS)
    path = project / ".agi" / "agents.json"
    for name, entry in _read_agents_file(path).items():
        base = agents.get(name) or Agent(name=name, description="", prompt=_COMMON)
        agents[name] = replace(
            base,
            description=entry.description if entry.description is not None else base.description,
            tools=tuple(entry.tools) if entry.tools is not None else base.tools,
            read_only=entry.read_only if entry.read_only is not None else base.read_only,
            prompt=_prompt_from_entry(project, entry, base.prompt, path),
            model=entry.model or base.model,
            temperature=base.temperature if entry.temperature is None else entry.temperature,
            max_output_tokens=entry.max_output_tokens or base.max_output_tokens,
            sdk=entry.sdk or base.sdk,
            acp=_acp_command(entry, path) or base.acp,
            permissions={**base.permissions, **(entry.permissions or {})},
            source=str(path),
        )
    for name, agent in list(agents.items()):
        override = project / ".agi" / "agents" / name / "agent.txt"
        if override.is_file():
            agents[name] = replace(agent, prompt=override.read_text(encoding="utf-8").strip())
    return agents


def _read_agents_file(path: Path) -> dict[str, _AgentEntry]:
    if not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: must hold a JSON object mapping agent names to settings")
    entries: dict[str, _AgentEntry] = {}
    for name, value in raw.items():
        try:
            entries[str(name)] = _AgentEntry.model_validate(value)
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or name}: {err['msg']}"
                for err in e.errors()
            )
            raise ConfigError(f"{path}: agent {name!r}: {problems}") from None
    return entries


def _acp_command(entry: _AgentEntry, source: Path) -> AcpCommand | None:
    if entry.acp is None:
        return None
    try:
        return AcpCommand.parse(entry.acp)
    except ValidationError as e:
        problems = "; ".join(
            f"acp.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()
        )
        raise ConfigError(f"{source}: {problems}") from None


def _prompt_from_entry(project: Path, entry: _AgentEntry, default: str, source: Path) -> str:
    if entry.prompt is None:
        return default
    candidate = (project / entry.prompt).resolve()
    looks_like_path = entry.prompt.endswith((".txt", ".md")) and "\n" not in entry.prompt
    if looks_like_path:
        if not candidate.is_relative_to(project.resolve()):
            raise ConfigError(f"{source}: prompt file {entry.prompt!r} is outside the project")
        if not candidate.is_file():
            raise ConfigError(f"{source}: prompt file {entry.prompt!r} does not exist")
        return candidate.read_text(encoding="utf-8").strip()
    return entry.prompt


def bootstrap_sections(project: Path) -> list[str]:
    """The non-empty bootstrap files of ``.agi/``, each headed by its name."""
    sections = []
    for name in BOOTSTRAP_FILES:
        path = project / ".agi" / name
        if path.is_file():
            text = path.read_text(encoding="utf-8").strip()
            if text:
                sections.append(f"# {name}\n\n{text}")
    return sections


def build_system_prompt(
    agent: Agent,
    project: Path,
    *,
    tool_prompts: list[str] | None = None,
    session_prompt: str | None = None,
    due_tasks: Sequence[Task] = (),
    now: str | None = None,
) -> str:
    """Agent prompt, then the session's own prompt, bootstrap files, tool contexts and the
    tasks due soon or overdue (seed 002: every run sees them, not only heartbeat runs)."""
    sections = [agent.prompt, *([session_prompt] if session_prompt else [])]
    sections.extend(bootstrap_sections(project))
    sections.extend(p.strip() for p in tool_prompts or [] if p.strip())
    if due_tasks:
        sections.append(due_tasks_section(due_tasks, now or utc_now()))
    return SECTION_SEPARATOR.join(sections)


def due_tasks_section(tasks: Sequence[Task], now: str) -> str:
    """The tasks due soon or overdue, for the system prompt (one line each, soonest first)."""
    lines = [f"# Tasks due (now: {now})", ""]
    for task in tasks:
        when = "overdue" if (task.due_at or "") <= now else "due"
        details = f": {task.details}" if task.details else ""
        lines.append(f"- [{task.id}] {task.title} ({when} {task.due_at}, {task.status}){details}")
    return "\n".join(lines)
