"""Fixtures for CLI tests: an isolated home and config dir, a project folder as the working
directory, the fake LLM server as the ``fake`` provider, and helpers to run ``agi`` in-process
(click's ``CliRunner``) or as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agi_jupyter.app import Agi
from agi_jupyter.cli import cli
from agi_jupyter.testing import FakeLLMServer

AGI = str(Path(sys.executable).with_name("agi"))
# Variables of the real environment that would change what the CLI does.
CLEARED = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY",
    "AGI_MODEL",
    "AGI_AGENT",
    "AGI_SERVER_URL",
    "AGI_SERVER_TOKEN",
    "XDG_CONFIG_HOME",
)

RunCli = Callable[..., Result]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    (folder / ".agi").mkdir(parents=True)
    return folder


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    return tmp_path / "config"


@pytest.fixture(autouse=True)
def cli_env(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    project: Path,
    config_dir: Path,
    fake_llm: FakeLLMServer,
    backend_env: dict[str, str],
) -> dict[str, str]:
    """The environment of every CLI test (also what subprocesses get, see ``agi_process``):
    each test runs twice, on SQLite and on PostgreSQL (``AGI_DATABASE_URL``)."""
    for name in (*CLEARED, "AGI_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    values = {
        "HOME": str(tmp_path / "home"),
        "AGI_CONFIG_DIR": str(config_dir),
        "AGI_FAKE_LLM_URL": fake_llm.openai_base_url,
        "COLUMNS": "200",
        **backend_env,
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(project)
    return values


@pytest.fixture
def run_cli() -> RunCli:
    """``run_cli("sessions", "--json")``: ``agi`` in this process; stdout and stderr apart."""

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
        return CliRunner().invoke(cli, list(args), input=input, env=env, catch_exceptions=False)

    return run


@pytest.fixture
def agi(project: Path) -> Iterator[Agi]:
    """The test project's ``Agi``, for setting up and checking state."""
    with Agi(project) as instance:
        yield instance


def process_env(**extra: str) -> dict[str, str]:
    """The current (test) environment for a child process, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    return {**env, **extra}


def run_agi(
    args: Sequence[str], *, timeout: float = 60, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """The installed ``agi`` console script as a real process."""
    return subprocess.run(
        [AGI, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=process_env(),
        check=False,
        **kwargs,
    )
