"""The project's private ``CODEX_HOME`` (``<project>/.agi/codex-home/``) and its config.

Codex keeps its configuration, its threads (what ``codex exec resume`` continues) and its logs
under ``CODEX_HOME``. A private one per project keeps the user's own ``~/.codex`` (their login,
their MCP servers, their defaults) out of our runs and keeps our threads next to the store that
refers to them. The folder is created ``0700``: the threads hold the conversation.

``config.toml`` names one model provider, ``agi``, built from our ``openai`` provider settings.
It never contains the API key: codex reads the key from the environment variable named by
``env_key`` (``AGI_CODEX_API_KEY``), which only the child process gets. Retries are off
(``request_max_retries`` / ``stream_max_retries`` = 0) because the runtime retries whole runs
itself (``max_attempts``); analytics, feedback and the update check are off because a run in a
notebook should not talk to anything but the configured model API.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from agi_jupyter.config import PROJECT_DIRNAME
from agi_jupyter.tools.redact import looks_secret

HOME_DIRNAME = "codex-home"
KEY_ENV = "AGI_CODEX_API_KEY"
PROVIDER_ID = "agi"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Inherited variables that would point codex (or its OpenAI client) somewhere else.
_DROPPED = frozenset({"OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_ORG_ID", "OPENAI_PROJECT"})


def codex_home(project: Path) -> Path:
    return project / PROJECT_DIRNAME / HOME_DIRNAME


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string.

    JSON's escapes (``\\"``, ``\\\\``, ``\\n``, ``\\uXXXX`` for control characters) are valid TOML;
    TOML also forbids a raw DEL, which JSON leaves alone, and surrogate ``\\u`` escapes, which
    ``ensure_ascii=False`` never produces."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def render_config(*, base_url: str | None) -> str:
    """The ``config.toml`` text for a provider at ``base_url`` (OpenAI's API when None)."""
    url = toml_string(base_url or DEFAULT_BASE_URL)
    return (
        "# Written by agi-jupyter before every codex run; edits are overwritten.\n"
        f"# The API key is not here: codex reads it from ${KEY_ENV} in its environment.\n"
        f'model_provider = "{PROVIDER_ID}"\n'
        'approval_policy = "never"\n'
        "check_for_update_on_startup = false\n"
        "\n"
        "[analytics]\n"
        "enabled = false\n"
        "\n"
        "[feedback]\n"
        "enabled = false\n"
        "\n"
        "[history]\n"
        'persistence = "none"\n'
        "\n"
        f"[model_providers.{PROVIDER_ID}]\n"
        'name = "agi-jupyter"\n'
        f"base_url = {url}\n"
        f'env_key = "{KEY_ENV}"\n'
        'wire_api = "responses"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
    )


def prepare_home(project: Path, *, base_url: str | None) -> Path:
    """Create the private home (``0700``) and write ``config.toml`` (``0600``) if it changed.

    The file is replaced atomically, so runs of other sessions starting at the same moment
    never read half a file."""
    home = codex_home(project)
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    config = home / "config.toml"
    text = render_config(base_url=base_url)
    try:
        if config.read_text(encoding="utf-8") == text:
            return home
    except OSError:
        pass  # missing or unreadable: write it
    tmp = home / f".config.toml.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(tmp, config)
    return home


def child_env(base: Mapping[str, str], *, home: Path, api_key: str) -> dict[str, str]:
    """The codex process's environment: ``base`` without secret-looking variables (codex's
    shell commands inherit it, and they need none of the user's keys), without ``CODEX_*`` and
    OpenAI endpoint variables, plus ``CODEX_HOME`` and the key under ``KEY_ENV``."""
    env = {
        name: value
        for name, value in base.items()
        if not looks_secret(name) and not name.startswith("CODEX_") and name not in _DROPPED
    }
    env["CODEX_HOME"] = str(home)
    env[KEY_ENV] = api_key
    return env
