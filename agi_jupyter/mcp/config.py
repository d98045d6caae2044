"""``.agi/mcp.json`` and the global ``mcp.json``: the MCP servers whose tools agents may use.

The files use the ``mcpServers`` shape of Claude Desktop, Claude Code, Cursor and VS Code::

    {"mcpServers": {
        "files":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
                   "env": {"LOG_LEVEL": "info"}},
        "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
                   "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
        "old":    {"command": "old-server", "disabled": true}}}

``command``/``args``/``env``/``cwd`` start a stdio server (``cwd`` defaults to the project);
``url``/``headers`` reach a streamable-HTTP one (``type: "sse"`` the older SSE transport). VS
Code's top-level ``servers`` key is read too. Keys other tools add (``autoApprove``,
``description``, ...) are ignored; ``startup_timeout`` (seconds, default 30) is ours, and so is
``trust``: how far the server's tools are trusted by the tool policy, ``"read"`` (they run like
``fs.read``) or ``"write"`` (they ask like commands), for the whole server and per tool::

    "files": {"command": "npx", "args": [...], "trust": "write",
              "tools": {"read_text_file": {"trust": "read"}}}

Without ``trust`` a tool's own annotations decide (``readOnlyHint: true``: read; else write; see
``agi_jupyter.mcp.tools``). A project server replaces a global one of the same name.

``${VAR}`` references (``envrefs``) in any string are resolved here, once, from the environment
over the credentials file. A server whose reference is unset is kept with a ``problem``: it
fails when first needed, and is reported then (never a crash). Resolved values, and literal
values of secret-looking env variables and headers, become ``secrets`` for the ``Redactor``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agi_jupyter.config import PROJECT_DIRNAME
from agi_jupyter.envrefs import Expanded, MissingReference, expand
from agi_jupyter.errors import ConfigError
from agi_jupyter.kinds import McpTrust
from agi_jupyter.tools.redact import MIN_SECRET_LENGTH, looks_secret

MCP_FILENAME = "mcp.json"
DEFAULT_STARTUP_TIMEOUT = 30.0
Transport = Literal["stdio", "http", "sse"]
_HTTP_TYPES = {"http": "http", "streamable-http": "http", "streamableHttp": "http", "sse": "sse"}
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_SECRET_HEADERS = re.compile(r"authorization|cookie|token|key|secret", re.IGNORECASE)


@dataclass(frozen=True)
class McpServerSpec:
    """One configured server, its references resolved. Never printed with its secrets."""

    name: str
    transport: Transport
    source: str
    command: str | None = None
    args: tuple[str, ...] = field(default=(), repr=False)
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: Path | None = None
    url: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    problem: str | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)
    trust: McpTrust | None = None  # the whole server's, from mcp.json
    tool_trust: Mapping[str, McpTrust] = field(default_factory=dict)  # by the server's tool name

    @property
    def prefix(self) -> str:
        """The start of its tools' names: ``mcp.<name>.``."""
        return f"mcp.{self.name}."

    @property
    def target(self) -> str:
        """What it runs or reaches, for listings (no arguments, env or credentials)."""
        if self.transport == "stdio":
            return self.command or ""
        return _without_credentials(self.url or "")


class _ToolEntry(BaseModel):
    model_config = ConfigDict(extra="ignore")
    trust: McpTrust | None = None


class _Entry(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["stdio", "http", "streamable-http", "streamableHttp", "sse"] | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    disabled: bool = False
    startup_timeout: float | None = Field(default=None, gt=0, le=600)
    trust: McpTrust | None = None
    tools: dict[str, _ToolEntry] = Field(default_factory=dict)


def mcp_config_paths(project: Path, global_dir: Path) -> list[Path]:
    """The files read, lowest precedence first."""
    return [global_dir / MCP_FILENAME, project / PROJECT_DIRNAME / MCP_FILENAME]


def load_mcp_servers(
    project: Path, global_dir: Path, lookup: Mapping[str, str]
) -> list[McpServerSpec]:
    """The enabled servers of both files (project over global), sorted by name.

    Raises ``ConfigError`` for a file that is not JSON or not in the ``mcpServers`` shape."""
    entries: dict[str, tuple[str, _Entry]] = {}
    for path in mcp_config_paths(project, global_dir):
        for name, entry in _read_file(path).items():
            entries[name] = (str(path), entry)
    specs = [
        _spec(name, source, entry, project, lookup)
        for name, (source, entry) in sorted(entries.items())
        if not entry.disabled
    ]
    return specs


def _read_file(path: Path) -> dict[str, _Entry]:
    if not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read ({e.strerror})") from None
    servers = raw.get("mcpServers", raw.get("servers", {})) if isinstance(raw, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f'{path}: must hold {{"mcpServers": {{"<name>": {{...}}}}}}')
    entries: dict[str, _Entry] = {}
    for name, value in servers.items():
        key = _UNSAFE.sub("_", str(name))
        if not key or key in entries:
            raise ConfigError(f"{path}: server name {name!r} is empty or clashes with another")
        try:
            entries[key] = _Entry.model_validate(value)
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or name}: {err['msg']}"
                for err in e.errors()
            )
            raise ConfigError(f"{path}: server {name!r}: {problems}") from None
        _check_shape(path, str(name), entries[key])
    return entries


def _check_shape(path: Path, name: str, entry: _Entry) -> None:
    http = entry.type in _HTTP_TYPES
    if http and not entry.url:
        raise ConfigError(f"{path}: server {name!r} has type {entry.type!r} but no url")
    if not http and not entry.command and not entry.url:
        raise ConfigError(f"{path}: server {name!r} needs a command (stdio) or a url (HTTP)")


def _spec(
    name: str, source: str, entry: _Entry, project: Path, lookup: Mapping[str, str]
) -> McpServerSpec:
    transport: Transport = (
        "stdio" if entry.command and entry.type in (None, "stdio") else _http_type(entry)
    )
    timeout = entry.startup_timeout or DEFAULT_STARTUP_TIMEOUT
    try:
        resolved = _resolve(entry, lookup)
    except MissingReference as e:
        return McpServerSpec(
            name=name,
            transport=transport,
            source=source,
            command=entry.command,
            startup_timeout=timeout,
            trust=entry.trust,
            tool_trust=_tool_trust(entry),
            problem=f"cannot start: {e} (set it in the environment or the credentials file)",
        )
    values, env, headers, secrets = resolved
    cwd = values.get("cwd")
    return McpServerSpec(
        name=name,
        transport=transport,
        source=source,
        command=values.get("command"),
        args=tuple(values[f"arg{i}"] for i in range(len(entry.args))),
        env=env,
        cwd=(project / cwd).resolve() if cwd else project,
        url=values.get("url"),
        headers=headers,
        startup_timeout=timeout,
        secrets=secrets,
        trust=entry.trust,
        tool_trust=_tool_trust(entry),
    )


def _tool_trust(entry: _Entry) -> dict[str, McpTrust]:
    return {name: tool.trust for name, tool in entry.tools.items() if tool.trust is not None}


def _http_type(entry: _Entry) -> Transport:
    return "sse" if _HTTP_TYPES.get(entry.type or "http") == "sse" else "http"


def _resolve(
    entry: _Entry, lookup: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str], dict[str, str], tuple[str, ...]]:
    """Expand every string; raise ``MissingReference`` naming every unset variable."""
    out = Expanded()
    missing: list[str] = []

    def resolve(value: str) -> str:
        try:
            return expand(value, lookup, out)
        except MissingReference as e:
            missing.extend(n for n in e.names if n not in missing)
            return ""

    plain: dict[str, Any] = {"command": entry.command, "cwd": entry.cwd, "url": entry.url}
    plain.update({f"arg{i}": arg for i, arg in enumerate(entry.args)})
    values = {k: resolve(v) for k, v in plain.items() if v is not None}
    env = {k: resolve(v) for k, v in entry.env.items()}
    headers = {k: resolve(v) for k, v in entry.headers.items()}
    if missing:
        raise MissingReference(missing)
    secrets = set(out.substituted)
    secrets.update(v for k, v in env.items() if looks_secret(k))
    for key, value in headers.items():
        if _SECRET_HEADERS.search(key):
            secrets.add(value)
            secrets.add(value.split()[-1] if value.split() else value)
    kept = tuple(sorted(s for s in secrets if len(s) >= MIN_SECRET_LENGTH))
    return values, env, headers, kept


def _without_credentials(url: str) -> str:
    head, sep, rest = url.partition("://")
    if not sep:
        return url.split("?")[0]
    host, slash, path = rest.partition("/")
    host = host.rsplit("@", 1)[-1]
    return f"{head}://{host}{slash}{path}".split("?")[0]


def secrets_of(specs: list[McpServerSpec]) -> dict[str, str]:
    """The servers' secret values by a name for the redactor (``MCP_<SERVER>``, ``_2``...)."""
    named: dict[str, str] = {}
    for spec in specs:
        for index, value in enumerate(spec.secrets, start=1):
            suffix = f"_{index}" if index > 1 else ""
            named[f"MCP_{spec.name.upper()}{suffix}"] = value
    return named
