"""Which ACP agent a session starts, its ``${VAR}`` references resolved.

An agent of ``.agi/agents.json`` may name its own ACP agent (``"acp": {"command": "gemini",
"args": ["--experimental-acp"], "env": {"GEMINI_API_KEY": "${GEMINI_API_KEY}"}}``); otherwise
``acp`` of the config files is the default. References are resolved once, when the runtime
starts, from the environment over the credentials file; the substituted values become secrets
for the redactor. An unset reference is kept as a ``problem`` and fails the run that needs it.
Imports no ACP library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agi_jupyter.envrefs import Expanded, MissingReference, expand
from agi_jupyter.errors import ConfigError
from agi_jupyter.tools.redact import MIN_SECRET_LENGTH, looks_secret

if TYPE_CHECKING:
    from agi_jupyter.agents import Agent
    from agi_jupyter.config import AcpCommand, Config

DEFAULT_KEY = "default"
HINT = (
    'set "acp": {"command": ..., "args": [...]} in .agi/config.json, or on the agent in '
    ".agi/agents.json"
)


@dataclass(frozen=True)
class AcpLaunch:
    """An ACP agent ready to start: whose it is (an agent's name or ``default``) and how."""

    key: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    problem: str | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)


class AcpAgents:
    """The ACP agents one runtime can start."""

    def __init__(self, default: AcpLaunch | None, by_agent: Mapping[str, AcpLaunch]) -> None:
        self.default = default
        self.by_agent = dict(by_agent)

    @classmethod
    def resolve(
        cls, config: Config, agents: Mapping[str, Agent], lookup: Mapping[str, str]
    ) -> AcpAgents:
        default = _launch(DEFAULT_KEY, config.acp, lookup) if config.acp else None
        own = {
            name: _launch(name, agent.acp, lookup)
            for name, agent in agents.items()
            if agent.acp is not None
        }
        return cls(default, own)

    def for_agent(self, agent: str) -> AcpLaunch:
        launch = self.by_agent.get(agent) or self.default
        if launch is None:
            raise ConfigError(f"no ACP agent is configured for agent {agent!r}: {HINT}")
        if launch.problem:
            raise ConfigError(f"the ACP agent of {launch.key!r} cannot start: {launch.problem}")
        return launch

    def all(self) -> list[AcpLaunch]:
        return [*([self.default] if self.default else []), *self.by_agent.values()]

    def secrets(self) -> dict[str, str]:
        """Resolved secret values by a name for the redactor (``ACP_<KEY>``, ``_2``...)."""
        named: dict[str, str] = {}
        for launch in self.all():
            for index, value in enumerate(launch.secrets, start=1):
                suffix = f"_{index}" if index > 1 else ""
                named[f"ACP_{launch.key.upper()}{suffix}"] = value
        return named


def _launch(key: str, command: AcpCommand, lookup: Mapping[str, str]) -> AcpLaunch:
    out = Expanded()
    try:
        program = expand(command.command, lookup, out)
        args = tuple(expand(a, lookup, out) for a in command.args)
        env = {k: expand(v, lookup, out) for k, v in command.env}
    except MissingReference as e:
        return AcpLaunch(key, command.command, problem=f"{e} (set it in the environment)")
    secrets = set(out.substituted) | {v for k, v in env.items() if looks_secret(k)}
    kept = tuple(sorted(s for s in secrets if len(s) >= MIN_SECRET_LENGTH))
    return AcpLaunch(key, program, args, env, secrets=kept)
