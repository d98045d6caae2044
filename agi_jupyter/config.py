"""Settings and where they come from (DESIGN.md section 6).

Precedence, highest first: explicit arguments > project ``.agi/config.json`` > global
``~/.config/agi/config.json`` > traitlets (``c.AgiExtensionApp.*``, a dict) > environment
variables > built-in defaults. Layers are plain dicts merged key by key (``providers`` merges per
provider), then validated once by pydantic, so an error names the layer it came from.

Credentials are never read from config files or requests: only from the environment or from the
global credentials file that ``agi setup`` writes with mode 0600. ``ProviderSettings.api_key`` is
excluded from ``repr`` so a settings object can be logged safely. The same holds for the store's
database: ``database_url`` may come from any layer, but one with a password only from the
environment (``AGI_DATABASE_URL``), traitlets or explicit arguments, never from a config file;
a password kept apart comes from ``database_password`` in the credentials file (or libpq's own
``PGPASSWORD`` / ``~/.pgpass``).

This is the only module that reads environment variables; everything else gets a ``Config``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo

from agi_jupyter.budget import BudgetSettings, BudgetsLayer
from agi_jupyter.completion.settings import CompletionLayer, CompletionSettings
from agi_jupyter.errors import ConfigError, UsageError
from agi_jupyter.kinds import DEFAULT_REVIEW_MODE, DEFAULT_SDK, ReviewMode, SdkName
from agi_jupyter.model_specs import KNOWN_PROVIDERS, Wire, parse_model_spec
from agi_jupyter.request_extras import (
    ModelLayer,
    RequestExtras,
    check_extra_body,
    parse_request_extras,
)

WirePath = Literal["http", "sdk"]  # how a stream is read: our HTTP reader or the SDK

PROJECT_DIRNAME = ".agi"
CONFIG_FILENAME = "config.json"
CREDENTIALS_FILENAME = "credentials.json"
CREDENTIALS_DATABASE_KEY = "database_password"
CREDENTIALS_WEBHOOK_KEY = "openai_webhook_secret"
WEBHOOK_SECRET_ENV = "OPENAI_WEBHOOK_SECRET"


# --- validated file/layer schema -------------------------------------------------------------


class _ProviderLayer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool | None = None
    base_url: str | None = None
    default_model: str | None = None
    extra_body: dict[str, Any] | None = None  # see request_extras

    _check_extra_body = field_validator("extra_body")(check_extra_body)


class _AcpLayer(BaseModel):
    """An ACP agent command (``acp`` in a config file or an agent of ``agents.json``)."""

    model_config = ConfigDict(extra="forbid")
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)


class _Layer(BaseModel):
    """What one config layer (a file, traitlets, env, explicit arguments) may contain. The keys
    the server extension also takes as traitlets (``SERVER_KEYS``) are declared here only, with
    their help; ``server.extension`` derives its traits from these fields."""

    model_config = ConfigDict(extra="forbid")
    default_agent: str | None = None
    default_model: str | None = None
    default_sdk: SdkName | None = None
    review_mode: ReviewMode | None = None
    max_iterations: int | None = Field(default=None, ge=1, le=1000)
    persist_deltas: bool | None = Field(
        default=None,
        description="Persist streaming deltas as run events (coalesced to ~10 writes/s), so "
        "runs of other processes stream live.",
    )
    wire: WirePath | None = Field(
        default=None,
        description="How model streams (Chat Completions, Responses, Anthropic Messages) are "
        'read: "http" (httpx2 + orjson, no SDK) or "sdk" (the openai / anthropic SDK, the '
        "reference).",
    )
    artifact_threshold: int | None = Field(default=None, ge=1024)
    tool_timeout: float | None = Field(default=None, gt=0)
    notebook_run_wait: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description="Seconds notebook.run waits for its cells before it answers with an "
        "execution handle and leaves them running (notebook.wait, notebook.interrupt).",
    )
    notebook_park_limit: float | None = Field(
        default=None,
        gt=0,
        description="Seconds at most a run parked on cells still running "
        "(notebook.wait {park: true}) waits for them before it resumes anyway (the cells "
        "are not interrupted; it is told they still run).",
    )
    max_attempts: int | None = Field(default=None, ge=1, le=100)
    retry_backoff: list[float] | None = None
    stale_after: float | None = Field(
        default=None,
        ge=1,
        le=86400,
        description="Seconds without a heartbeat after which a running run counts as abandoned "
        "by its process and a tick takes it over (at least 1).",
    )
    providers: dict[str, _ProviderLayer] | None = None
    models: dict[str, ModelLayer] | None = None
    max_history_messages: int | None = Field(
        default=None,
        ge=2,
        description="At most this many history messages in a model request (default 50; null: "
        "only the token budget of the model's context window bounds them).",
    )
    compaction: bool | None = Field(
        default=None,
        description="Fold the turns that fall out of a model's context window into a summary "
        "the model writes (default true); false: they are only left out.",
    )
    redact_patterns: list[str] | None = None
    redact_allow: list[str] | None = None
    acp: _AcpLayer | None = None
    database_url: str | None = Field(
        default=None,
        pattern=r"^postgres(ql)?://",
        description="A postgresql:// URL: keep every project's sessions and runs in this shared "
        "PostgreSQL database instead of each project's .agi/agi.sqlite, so several servers "
        "(JupyterHub user servers, replicas) share them. AGI_DATABASE_URL works too.",
    )
    project_key: str | None = Field(default=None, min_length=1, max_length=1000)
    project_namespace: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="With a database_url: a prefix for the keys of this server's projects in "
        "the shared database (a project's key is its folder's absolute path, or the "
        "project_key of its .agi/config.json). Servers that see different projects at the "
        "same paths (JupyterHub users' /home/jovyan) set one each. AGI_PROJECT_NAMESPACE "
        "works too.",
    )
    budgets: BudgetsLayer | None = None  # budget.py; the highest layer that sets it wins
    completion: CompletionLayer | None = None  # completion/settings.py; layers merge by key


# The settings the server extension also takes as traitlets (``c.AgiExtensionApp.<key>``): the
# traitlets layer of ``load_config``. Their types and help are the fields above.
SERVER_KEYS = ("persist_deltas", "wire", "stale_after", "database_url", "project_namespace")


def setting_field(key: str) -> FieldInfo:
    """The declaration of one setting (its type, bounds and help), as a config file has it."""
    return _Layer.model_fields[key]


# --- resolved settings -----------------------------------------------------------------------

DEFAULT_MAX_HISTORY_MESSAGES = 50  # as seeds 002 and 004 say


@dataclass(frozen=True)
class ModelSettings:
    """What the config says of one model's requests (None: not set): its context window, the
    answer's limit (also the output reserve), and the sampling temperature."""

    context_window: int | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None


@dataclass(frozen=True)
class ProviderSettings:
    """A provider as configured: enabled, where it lives, and its key (never printed)."""

    name: str
    wire: Wire
    base_url: str | None
    enabled: bool
    requires_key: bool
    default_model: str | None
    api_key: str | None = field(default=None, repr=False)

    @property
    def configured(self) -> bool:
        """Enabled, has a key when it needs one, and a base URL when it has no default
        (``compat``: any OpenAI-compatible server, so only the user knows where)."""
        has_key = self.api_key is not None or not self.requires_key
        return self.enabled and has_key and (self.base_url is not None or self.name != "compat")


@dataclass(frozen=True)
class AcpCommand:
    """How to start an ACP agent (``sdk="acp"`` sessions): command, arguments, extra
    environment. ``${VAR}`` references stay unresolved here (the runtime resolves them)."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> AcpCommand:
        layer = _AcpLayer.model_validate(dict(raw))
        return cls(layer.command, tuple(layer.args), tuple(sorted(layer.env.items())))


@dataclass(frozen=True)
class Config:
    project: Path
    default_agent: str = "general"
    default_sdk: SdkName = DEFAULT_SDK  # the agent SDK of new sessions (DESIGN.md section 10)
    # Which ``ask`` tool calls wait for a person (tools/policy.py): ask, auto-edit or auto.
    review_mode: ReviewMode = DEFAULT_REVIEW_MODE
    default_model: str = "fake:echo"
    default_model_is_fallback: bool = True
    max_iterations: int = 10
    # Streamed deltas are stored (coalesced, ~10 writes a second), so other processes (the
    # side panel, ``agi events --follow``) show a run live.
    persist_deltas: bool = True
    # How a model stream (Chat Completions, Responses, Anthropic Messages) is read: "http"
    # (httpx2 + orjson, no SDK import) or "sdk" (the openai / anthropic SDK: the reference the
    # differential tests compare with).
    wire: WirePath = "http"
    artifact_threshold: int = 64 * 1024
    tool_timeout: float = 120.0
    # Seconds notebook.run waits before it answers with a handle and leaves the cells running.
    notebook_run_wait: float = 30.0
    # Seconds at most a run parked on running cells (notebook.wait park) waits for them.
    notebook_park_limit: float = 86400.0
    max_attempts: int = 4
    retry_backoff: tuple[float, ...] = (2.0, 4.0, 8.0)
    # Seconds without a heartbeat after which a running run counts as abandoned by its
    # process, and a tick takes it over (owners heartbeat every min(5, stale_after / 4) s).
    stale_after: float = 30.0
    providers: dict[str, ProviderSettings] = field(default_factory=dict)
    request_extras: RequestExtras = field(default_factory=RequestExtras)
    # ``models.<key>.vision`` by key (``provider:model`` or a bare model name): whether the
    # model is sent images, over the catalog's flag (providers.catalog.reads_images).
    model_vision: Mapping[str, bool] = field(default_factory=dict)
    acp: AcpCommand | None = None  # the default ACP agent of ``sdk="acp"`` sessions
    sources: tuple[str, ...] = ()
    # The store: None is the project's SQLite file; a postgresql:// URL a shared database,
    # where ``store_key`` names the project.
    database_url: str | None = field(default=None, repr=False)
    database_password: str | None = field(default=None, repr=False)
    project_key: str | None = None
    project_namespace: str | None = None
    # Redaction (tools/redact.py): extra regular expressions, and names/values never redacted.
    redact_patterns: tuple[str, ...] = ()
    redact_allow: tuple[str, ...] = ()
    # Every value of the credentials file, by key: all of them are redacted wherever they
    # appear. Never printed (repr=False).
    credentials: dict[str, str] = field(default_factory=dict, repr=False)
    budgets: BudgetSettings = field(default_factory=BudgetSettings)
    # The context of a model request (runtime/context.py): at most this many history
    # messages (None: the token budget only), per-model window overrides, compaction.
    max_history_messages: int | None = DEFAULT_MAX_HISTORY_MESSAGES
    models: Mapping[str, ModelSettings] = field(default_factory=dict)
    compaction: bool = True

    def model_settings(self, provider: str, model: str) -> ModelSettings:
        """What the config says of ``provider:model``'s requests (``models."provider:model"``
        over ``models."model"``; None: the catalog's window, the provider's defaults)."""
        exact = self.models.get(f"{provider}:{model}") or ModelSettings()
        bare = self.models.get(model) or ModelSettings()
        return ModelSettings(
            context_window=exact.context_window or bare.context_window,
            max_output_tokens=exact.max_output_tokens or bare.max_output_tokens,
            temperature=bare.temperature if exact.temperature is None else exact.temperature,
        )

    completion: CompletionSettings = field(default_factory=CompletionSettings)

    @property
    def agi_dir(self) -> Path:
        return self.project / PROJECT_DIRNAME

    @property
    def store_key(self) -> str:
        """The project's key in a shared database: its ``project_key`` (set in the project's
        own config file), else its folder's path, after ``project_namespace:`` if one is set
        (servers that see different projects at the same paths, such as every JupyterHub
        user's ``/home/jovyan``, keep them apart with a namespace each)."""
        if self.project_key:
            return self.project_key
        return (
            f"{self.project_namespace}:{self.project}"
            if self.project_namespace
            else str(self.project)
        )

    def provider(self, name: str) -> ProviderSettings:
        try:
            return self.providers[name]
        except KeyError:
            raise UsageError(f"unknown provider {name!r}") from None

    def resolve_model(self, spec: str | None = None) -> tuple[str, str]:
        """``provider, model`` for an explicit spec, or the configured default."""
        return parse_model_spec(spec or self.default_model)


def global_config_dir(env: Mapping[str, str]) -> Path:
    """``$AGI_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/agi``, else ``~/.config/agi``."""
    if env.get("AGI_CONFIG_DIR"):
        return Path(env["AGI_CONFIG_DIR"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")) / ".config")
    return Path(base).expanduser() / "agi"


def find_project(start: Path | str) -> Path:
    """The nearest folder from ``start`` upwards that has ``.agi/``; else ``start`` itself."""
    here = Path(start).expanduser().resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        if (folder / PROJECT_DIRNAME).is_dir():
            return folder
    return here


def load_config(
    project: Path | str,
    *,
    overrides: Mapping[str, Any] | None = None,
    traitlets: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """Resolve the settings of ``project`` from every layer (see the module docstring)."""
    env = os.environ if env is None else env
    project_dir = Path(project).expanduser().resolve()
    global_dir = global_config_dir(env)
    files = [global_dir / CONFIG_FILENAME, project_dir / PROJECT_DIRNAME / CONFIG_FILENAME]
    layers = [
        ("environment", _env_layer(env)),
        ("traitlets config", dict(traitlets or {})),
        *((str(path), _read_json_file(path)) for path in files),
        ("explicit arguments", dict(overrides or {})),
    ]
    merged: dict[str, Any] = {}
    sources: list[str] = []
    for name, data in layers:
        if not data:
            continue
        _validate_layer(name, data)
        _check_placement(name, data, files)
        _merge_into(merged, data)
        sources.append(name)
    credentials = read_credentials(global_dir / CREDENTIALS_FILENAME)
    return _build(project_dir, merged, credentials, env, tuple(sources))


def _check_placement(name: str, data: dict[str, Any], files: list[Path]) -> None:
    """Settings that some layers must not carry (``ConfigError`` naming the layer)."""
    global_file, project_file = (str(path) for path in files)
    if name in (global_file, project_file):
        _refuse_database_password(name, data)
    if "project_key" in data and name not in (project_file, "explicit arguments"):
        raise ConfigError(
            f"{name}: project_key names one project, so it belongs in that "
            "project's .agi/config.json; project_namespace sets a prefix for every project"
        )
    if name == project_file and "redact_allow" in data:
        # A project folder may come from anyone (a cloned repository): it must not be
        # able to switch redaction of the user's secrets off.
        raise ConfigError(f"{name}: redact_allow is accepted only in the global config")


def _env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for key, name in (
        ("AGI_MODEL", "default_model"),
        ("AGI_AGENT", "default_agent"),
        ("AGI_SDK", "default_sdk"),
        ("AGI_REVIEW_MODE", "review_mode"),
        ("AGI_WIRE", "wire"),
    ):
        if env.get(key):
            layer[name] = env[key]
    if env.get("AGI_MAX_ITERATIONS"):
        layer["max_iterations"] = env["AGI_MAX_ITERATIONS"]
    for key, name in (
        ("AGI_DATABASE_URL", "database_url"),
        ("AGI_PROJECT_NAMESPACE", "project_namespace"),
    ):
        if env.get(key):
            layer[name] = env[key]
    if env.get("AGI_PERSIST_DELTAS"):
        layer["persist_deltas"] = env["AGI_PERSIST_DELTAS"].lower() in ("1", "true", "yes")
    if env.get("AGI_STALE_AFTER"):
        layer["stale_after"] = env["AGI_STALE_AFTER"]
    providers: dict[str, Any] = {}
    for known in KNOWN_PROVIDERS.values():
        for var in known.base_url_env:
            if env.get(var):
                providers[known.name] = {"base_url": env[var]}
                break
    if providers:
        layer["providers"] = providers
    return layer


def _read_json_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})"
        ) from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read ({e.strerror})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a JSON object, not {type(data).__name__}")
    return data


def _validate_layer(source: str, data: Mapping[str, Any]) -> None:
    providers = data.get("providers")
    if isinstance(providers, Mapping):
        for name, entry in providers.items():
            if isinstance(entry, Mapping) and "api_key" in entry:
                raise ConfigError(
                    f"{source}: providers.{name}.api_key is not allowed here; keys belong in the "
                    "environment or in the credentials file written by `agi setup`"
                )
            if name not in KNOWN_PROVIDERS:
                raise ConfigError(
                    f"{source}: unknown provider {name!r} (known: {', '.join(KNOWN_PROVIDERS)})"
                )
    try:
        _Layer.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
            for err in e.errors()
        )
        raise ConfigError(f"{source}: {problems}") from None
    for index, pattern in enumerate(data.get("redact_patterns") or []):
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigError(f"{source}: redact_patterns.{index}: invalid ({e})") from None
    model = data.get("default_model")
    if isinstance(model, str):
        try:
            parse_model_spec(model)
        except UsageError as e:
            raise ConfigError(f"{source}: default_model: {e.message}") from None


def _refuse_database_password(source: str, data: Mapping[str, Any]) -> None:
    """A config file may name the database, never hold its password."""
    url = data.get("database_url")
    if not isinstance(url, str):
        return
    parts = urlsplit(url)
    if parts.password is not None or "password" in parse_qs(parts.query):
        raise ConfigError(
            f"{source}: database_url must not contain a password; set it in the environment "
            f"(PGPASSWORD, or AGI_DATABASE_URL) or as {CREDENTIALS_DATABASE_KEY!r} in the "
            "credentials file"
        )


def _merge_into(target: dict[str, Any], layer: Mapping[str, Any]) -> None:
    for key, value in layer.items():
        if key in ("providers", "models") and isinstance(value, Mapping):
            providers = target.setdefault(key, {})
            for name, entry in value.items():
                providers.setdefault(name, {}).update(
                    {k: v for k, v in dict(entry).items() if v is not None}
                )
        elif key == "completion" and isinstance(value, Mapping):
            target.setdefault(key, {}).update({k: v for k, v in value.items() if v is not None})
        elif key == "redact_patterns" and value:
            target[key] = [*target.get(key, []), *value]  # every layer adds, none removes
        elif key == "max_history_messages":
            target[key] = value  # null says something: no message window, tokens only
        elif value is not None:
            target[key] = value


def read_credentials(path: Path) -> dict[str, str]:
    """API keys by provider name from the global credentials file (missing file: none)."""
    data = _read_json_file(path)
    bad = [k for k, v in data.items() if not isinstance(v, str)]
    if bad:
        raise ConfigError(f"{path}: values must be strings (bad entries: {', '.join(bad)})")
    return {str(k): str(v) for k, v in data.items()}


def reference_values(env: Mapping[str, str]) -> dict[str, str]:
    """What ``${VAR}`` references in MCP server and ACP agent settings resolve from (see
    ``envrefs``): the global credentials file's entries, overridden by the environment."""
    credentials = read_credentials(global_config_dir(env) / CREDENTIALS_FILENAME)
    return {**credentials, **env}


def webhook_secret(
    configured: str | None = None,
    *,
    env_var: str = WEBHOOK_SECRET_ENV,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """The OpenAI webhook secret: ``configured`` (the server's ``webhook_secret`` trait), else
    the environment variable ``env_var``, else ``openai_webhook_secret`` in the credentials
    file."""
    if configured:
        return configured
    env = os.environ if env is None else env
    if env_var and env.get(env_var):
        return env[env_var]
    credentials = read_credentials(global_config_dir(env) / CREDENTIALS_FILENAME)
    return credentials.get(CREDENTIALS_WEBHOOK_KEY)


def _provider_settings(
    merged: Mapping[str, Any], credentials: Mapping[str, str], env: Mapping[str, str]
) -> dict[str, ProviderSettings]:
    layers = merged.get("providers", {})
    result: dict[str, ProviderSettings] = {}
    for known in KNOWN_PROVIDERS.values():
        layer = _ProviderLayer.model_validate(layers.get(known.name, {}))
        key = credentials.get(known.name) or next(
            (env[v] for v in known.key_env if env.get(v)), None
        )
        result[known.name] = ProviderSettings(
            name=known.name,
            wire=known.wire,
            base_url=layer.base_url or known.default_base_url,
            enabled=True if layer.enabled is None else layer.enabled,
            requires_key=known.requires_key,
            default_model=layer.default_model or known.default_model,
            api_key=key,
        )
    return result


def _fallback_model(providers: Mapping[str, ProviderSettings]) -> str:
    """The default when none is configured: the first hosted provider with a key, else fake."""
    for name in ("openai", "anthropic", "google"):
        settings = providers[name]
        if settings.enabled and settings.api_key and settings.default_model:
            return f"{name}:{settings.default_model}"
    return "fake:echo"


def _build(
    project: Path,
    merged: Mapping[str, Any],
    credentials: Mapping[str, str],
    env: Mapping[str, str],
    sources: tuple[str, ...],
) -> Config:
    layer = _Layer.model_validate(merged)
    providers = _provider_settings(merged, credentials, env)
    default_model = layer.default_model or _fallback_model(providers)
    defaults = Config(project=project)
    return Config(
        project=project,
        default_agent=layer.default_agent or defaults.default_agent,
        default_sdk=layer.default_sdk or defaults.default_sdk,
        review_mode=layer.review_mode or defaults.review_mode,
        default_model=default_model,
        default_model_is_fallback=layer.default_model is None,
        max_iterations=layer.max_iterations or defaults.max_iterations,
        persist_deltas=(
            defaults.persist_deltas if layer.persist_deltas is None else layer.persist_deltas
        ),
        wire=layer.wire or defaults.wire,
        artifact_threshold=layer.artifact_threshold or defaults.artifact_threshold,
        tool_timeout=layer.tool_timeout or defaults.tool_timeout,
        notebook_run_wait=layer.notebook_run_wait or defaults.notebook_run_wait,
        notebook_park_limit=layer.notebook_park_limit or defaults.notebook_park_limit,
        max_attempts=layer.max_attempts or defaults.max_attempts,
        retry_backoff=tuple(layer.retry_backoff or defaults.retry_backoff),
        stale_after=layer.stale_after or defaults.stale_after,
        providers=providers,
        request_extras=parse_request_extras(merged),
        model_vision={
            key: bool(entry["vision"])
            for key, entry in (merged.get("models") or {}).items()
            if isinstance(entry, Mapping) and entry.get("vision") is not None
        },
        acp=AcpCommand.parse(merged["acp"]) if merged.get("acp") else None,
        sources=sources,
        database_url=layer.database_url,
        database_password=credentials.get(CREDENTIALS_DATABASE_KEY) if layer.database_url else None,
        project_key=layer.project_key,
        project_namespace=layer.project_namespace,
        redact_patterns=tuple(layer.redact_patterns or ()),
        redact_allow=tuple(layer.redact_allow or ()),
        credentials=dict(credentials),
        budgets=BudgetSettings.of(layer.budgets),
        max_history_messages=(
            layer.max_history_messages
            if "max_history_messages" in merged
            else DEFAULT_MAX_HISTORY_MESSAGES
        ),
        models=_model_settings(layer.models or {}),
        compaction=defaults.compaction if layer.compaction is None else layer.compaction,
        completion=CompletionSettings.of(layer.completion),
    )


def _model_settings(models: Mapping[str, ModelLayer]) -> dict[str, ModelSettings]:
    settings = {
        key: ModelSettings(entry.context_window, entry.max_output_tokens, entry.temperature)
        for key, entry in models.items()
    }
    return {key: value for key, value in settings.items() if value != ModelSettings()}


def not_configured_message(provider: str, *, enabled: bool = True) -> str:
    """Why a known provider cannot be used yet, and how to fix it (``enabled``: False when the
    config turned it off, whatever keys the environment has)."""
    known = KNOWN_PROVIDERS[provider]
    if not enabled:
        return (
            f"provider {provider!r} is disabled in config: set providers.{provider}.enabled "
            "to true in .agi/config.json or ~/.config/agi/config.json"
        )
    if provider == "compat":
        variables = " or ".join(known.base_url_env)
        hint = (
            f"it has no base URL; set {variables} (e.g. http://localhost:8080/v1) "
            "or providers.compat.base_url in .agi/config.json"
        )
    elif known.key_env:
        hint = f"set {' or '.join(known.key_env)}, or run `agi setup`"
    else:
        hint = "enable it in .agi/config.json"
    return f"provider {provider!r} is not configured: {hint}"


def local_user_name() -> str | None:
    """The name of the person at this machine (the login name), for the records that say who
    decided what from a terminal or a notebook; None when the system knows no name."""
    import getpass

    try:
        return getpass.getuser() or None
    except (KeyError, OSError):  # no login name and no passwd entry (some containers)
        return None
