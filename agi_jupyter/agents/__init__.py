"""Agents: which prompt and which tools a session's runs use."""

from agi_jupyter.agents.definitions import BUILTIN_AGENTS, PROJECT_TOOLS, Agent
from agi_jupyter.agents.loader import build_system_prompt, load_agents

__all__ = ["BUILTIN_AGENTS", "PROJECT_TOOLS", "Agent", "build_system_prompt", "load_agents"]
