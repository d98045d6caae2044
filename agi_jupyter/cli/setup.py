"""``agi setup``: enable providers, store API keys, pick the project's default model and agent.

Two files, nothing else: API keys go only to the global credentials file
(``<global config dir>/credentials.json``, written atomically with mode 0600, merged with the keys
already there); provider switches, base URLs and defaults go to the project's
``.agi/config.json`` (merged with what is there). The questions are plain terminal prompts; any
of the flags (or ``--non-interactive``) skips them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from agi_jupyter.cli.common import project_option, project_root
from agi_jupyter.config import (
    CONFIG_FILENAME,
    CREDENTIALS_FILENAME,
    PROJECT_DIRNAME,
    Config,
    global_config_dir,
    load_config,
    read_credentials,
)
from agi_jupyter.errors import UsageError
from agi_jupyter.model_specs import KNOWN_PROVIDERS, parse_model_spec

# Providers setup offers (the offline fake model is always there and needs nothing).
OFFERED = tuple(name for name in KNOWN_PROVIDERS if name != "fake")
PROVIDER = click.Choice(OFFERED)


@dataclass
class SetupChoices:
    enabled: dict[str, bool] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    base_urls: dict[str, str] = field(default_factory=dict)
    default_model: str | None = None
    default_agent: str | None = None


# --- the command -----------------------------------------------------------------------------


@click.command()
@project_option
@click.option("--non-interactive", is_flag=True, help="Ask nothing (implied by the flags below).")
@click.option("--enable", multiple=True, type=PROVIDER, metavar="PROVIDER", help="Enable it.")
@click.option("--disable", multiple=True, type=PROVIDER, metavar="PROVIDER", help="Disable it.")
@click.option(
    "--api-key",
    "api_keys",
    multiple=True,
    metavar="PROVIDER=KEY",
    help="Save a key (KEY `-` reads it from stdin, keeping it out of the shell history).",
)
@click.option("--base-url", "base_urls", multiple=True, metavar="PROVIDER=URL", help="Its URL.")
@click.option("--default-provider", type=PROVIDER, help="Default provider (with its model).")
@click.option("--default-model", metavar="PROVIDER:MODEL", help="Default model.")
@click.option("--default-agent", metavar="AGENT", help="Default agent.")
def setup(
    project: Path | None,
    non_interactive: bool,
    enable: tuple[str, ...],
    disable: tuple[str, ...],
    api_keys: tuple[str, ...],
    base_urls: tuple[str, ...],
    default_provider: str | None,
    default_model: str | None,
    default_agent: str | None,
) -> None:
    """Set up providers, API keys and the default model and agent.

    API keys are saved only in the global credentials file (mode 0600), never in the project;
    defaults go to the project's .agi/config.json.
    """
    root = project_root(project)
    flags = (enable, disable, api_keys, base_urls, default_provider, default_model, default_agent)
    if non_interactive or any(flags):
        choices = SetupChoices(
            enabled={**dict.fromkeys(enable, True), **dict.fromkeys(disable, False)},
            keys={p: _key(k) for p, k in (_pair(item, "--api-key") for item in api_keys)},
            base_urls=dict(_pair(item, "--base-url") for item in base_urls),
            default_model=_default_model(default_provider, default_model),
            default_agent=default_agent,
        )
    else:
        choices = ask_choices(load_config(root))
    report(apply_setup(root, choices))


def _pair(item: str, option: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not value:
        raise click.BadParameter(f"{item!r} is not PROVIDER=VALUE", param_hint=option)
    if name not in OFFERED:
        raise click.BadParameter(f"unknown provider {name!r}", param_hint=option)
    return name, value


def _key(value: str) -> str:
    """A key given on the command line, or the next line of stdin for ``-``."""
    return sys.stdin.readline().strip() if value == "-" else value


def _default_model(provider: str | None, model: str | None) -> str | None:
    if provider is None:
        return model
    if model is None:
        default = KNOWN_PROVIDERS[provider].default_model
        if default is None:
            raise click.UsageError(f"{provider} has no default model: give --default-model")
        return f"{provider}:{default}"
    head = model.partition(":")[0]
    return model if head in KNOWN_PROVIDERS else f"{provider}:{model}"


# --- writing the two files -------------------------------------------------------------------


@dataclass
class SetupResult:
    credentials_path: Path
    saved_keys: list[str]
    config_path: Path
    config: dict[str, Any]


def apply_setup(
    project: Path, choices: SetupChoices, env: Mapping[str, str] | None = None
) -> SetupResult:
    """Validate ``choices``, then merge them into the credentials file and the project config."""
    env = os.environ if env is None else env
    config_path = project / PROJECT_DIRNAME / CONFIG_FILENAME
    updated = _merged_config(_read_object(config_path), choices)
    load_config(project, overrides=updated, env=env)  # raises ConfigError if anything is invalid
    _check_agent(project, choices.default_agent)
    keys = {p: k.strip() for p, k in choices.keys.items() if k.strip()}
    if any(not k.isprintable() for k in keys.values()):
        raise UsageError("an API key must be one line of printable characters")
    credentials_path = global_config_dir(env) / CREDENTIALS_FILENAME
    if keys:
        write_credentials(credentials_path, keys)
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(json.dumps(updated, indent=2) + "\n", encoding="utf-8")
    return SetupResult(credentials_path, sorted(keys), config_path, updated)


def write_credentials(path: Path, keys: Mapping[str, str]) -> None:
    """Merge ``keys`` into the credentials file, atomically, readable by the owner only."""
    merged = {**read_credentials(path), **keys}
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(merged, f, indent=2)
            f.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _read_object(path: Path) -> dict[str, Any]:
    """The project config as it is on disk (``load_config`` reports a malformed one)."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8") or "{}")
    return data if isinstance(data, dict) else {}


def _merged_config(current: dict[str, Any], choices: SetupChoices) -> dict[str, Any]:
    updated = dict(current)
    providers = {name: dict(entry) for name, entry in (current.get("providers") or {}).items()}
    for name, enabled in choices.enabled.items():
        providers.setdefault(name, {})["enabled"] = enabled
    for name, url in choices.base_urls.items():
        providers.setdefault(name, {})["base_url"] = url
    if providers:
        updated["providers"] = providers
    if choices.default_model:
        updated["default_model"] = choices.default_model
    if choices.default_agent:
        updated["default_agent"] = choices.default_agent
    return updated


def _check_agent(project: Path, agent: str | None) -> None:
    if agent is None:
        return
    from agi_jupyter.agents import load_agents

    known = load_agents(project)
    if agent not in known:
        raise UsageError(f"unknown agent {agent!r} (known: {', '.join(sorted(known))})")


def report(result: SetupResult) -> None:
    if result.saved_keys:
        click.echo(
            f"Saved API keys for {', '.join(result.saved_keys)} in {result.credentials_path} "
            "(readable only by you)."
        )
    defaults = {
        k: result.config[k] for k in ("default_model", "default_agent") if k in result.config
    }
    summary = ", ".join(f"{k}={v}" for k, v in defaults.items()) or "no defaults"
    click.echo(f"Wrote {result.config_path} ({summary}).")


# --- the questions ---------------------------------------------------------------------------


def ask_choices(config: Config) -> SetupChoices:
    """Ask, in a plain terminal, which providers to enable, their keys and the defaults."""
    click.echo(f"agi setup for {config.project}\n")
    _list_providers(config)
    enabled = _ask_providers(config)
    choices = SetupChoices(enabled={name: name in enabled for name in OFFERED})
    choices.keys = _ask_keys(config, enabled)
    choices.base_urls = _ask_base_urls(config, enabled)
    provider = click.prompt(
        "Default provider", type=click.Choice(enabled), default=_current_provider(config, enabled)
    )
    current_provider, current_model = config.resolve_model()
    suggested = current_model if current_provider == provider else None
    model = click.prompt(
        "Default model", default=suggested or KNOWN_PROVIDERS[provider].default_model or None
    )
    choices.default_model = f"{provider}:{model}"
    from agi_jupyter.agents import load_agents

    agents = sorted(load_agents(config.project))
    choices.default_agent = click.prompt(
        "Default agent", type=click.Choice(agents), default=config.default_agent
    )
    return choices


def _key_state(config: Config, name: str) -> str:
    settings = config.provider(name)
    if not settings.requires_key:
        return "no key needed"
    return "key set" if settings.api_key else "no key"


def _list_providers(config: Config) -> None:
    click.echo("Providers:")
    for number, name in enumerate(OFFERED, 1):
        known = KNOWN_PROVIDERS[name]
        click.echo(f"  {number:>2}. {name:<12} {known.label:<44} {_key_state(config, name)}")
    click.echo("")


def _ask_providers(config: Config) -> list[str]:
    current = [n for n in OFFERED if config.provider(n).api_key and config.provider(n).enabled]
    answer = click.prompt(
        "Providers to enable (names or numbers, comma-separated)",
        default=", ".join(current or ["openai"]),
        value_proc=_parse_providers,
    )
    return list(answer)


def _parse_providers(answer: str) -> list[str]:
    names = []
    for word in (w.strip() for w in answer.replace(" ", ",").split(",")):
        if not word:
            continue
        name = OFFERED[int(word) - 1] if word.isdigit() and 0 < int(word) <= len(OFFERED) else word
        if name not in OFFERED:
            raise click.BadParameter(f"unknown provider {word!r}")
        if name not in names:
            names.append(name)
    if not names:
        raise click.BadParameter("enable at least one provider")
    return names


def _ask_keys(config: Config, enabled: list[str]) -> dict[str, str]:
    """One question per key (openai and openai-chat share theirs); Enter keeps the current."""
    keys: dict[str, str] = {}
    asked: dict[tuple[str, ...], str] = {}
    for name in enabled:
        known = KNOWN_PROVIDERS[name]
        if not known.requires_key:
            continue
        if known.key_env not in asked:
            state = "set; Enter keeps it" if config.provider(name).api_key else "Enter skips"
            asked[known.key_env] = click.prompt(
                f"API key for {name} ({state})", default="", show_default=False, hide_input=True
            )
        if asked[known.key_env]:
            keys[name] = asked[known.key_env]
    return keys


def _ask_base_urls(config: Config, enabled: list[str]) -> dict[str, str]:
    urls: dict[str, str] = {}
    for name in enabled:
        if KNOWN_PROVIDERS[name].requires_key:
            continue
        current = config.provider(name).base_url or ""
        url = click.prompt(f"Base URL for {name}", default=current or None)
        if url and url != current:
            urls[name] = url
    return urls


def _current_provider(config: Config, enabled: list[str]) -> str:
    provider = parse_model_spec(config.default_model)[0]
    return provider if provider in enabled else enabled[0]
