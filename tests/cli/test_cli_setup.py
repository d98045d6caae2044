"""``agi setup``: keys only in the global credentials file (0600), defaults in the project."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import pexpect
import pytest

from agi_jupyter.config import load_config
from tests.cli.conftest import AGI, RunCli, process_env

KEY = "sk-test-setup-secret-1234"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def assert_nowhere_in(folder: Path, secret: str) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_non_interactive_writes_the_two_files(
    run_cli: RunCli, project: Path, config_dir: Path
) -> None:
    result = run_cli(
        "setup",
        "--enable", "anthropic",
        "--disable", "openrouter",
        "--api-key", f"anthropic={KEY}",
        "--base-url", "ollama=http://gpu-box:11434/v1",
        "--default-model", "anthropic:claude-haiku-4-5",
        "--default-agent", "plan",
    )  # fmt: skip

    assert result.exit_code == 0, result.stderr
    credentials = config_dir / "credentials.json"
    assert json.loads(credentials.read_text()) == {"anthropic": KEY}
    assert mode(credentials) == 0o600
    assert json.loads((project / ".agi" / "config.json").read_text()) == {
        "providers": {
            "anthropic": {"enabled": True},
            "openrouter": {"enabled": False},
            "ollama": {"base_url": "http://gpu-box:11434/v1"},
        },
        "default_model": "anthropic:claude-haiku-4-5",
        "default_agent": "plan",
    }
    assert KEY not in result.stdout + result.stderr
    assert_nowhere_in(project, KEY)
    config = load_config(project)
    assert config.provider("anthropic").configured
    assert (config.default_model, config.default_agent) == ("anthropic:claude-haiku-4-5", "plan")


def test_keys_merge_and_the_file_stays_private(run_cli: RunCli, config_dir: Path) -> None:
    config_dir.mkdir()
    credentials = config_dir / "credentials.json"
    credentials.write_text(json.dumps({"openai": "sk-old-openai"}))
    credentials.chmod(0o644)

    result = run_cli("setup", "--api-key", "anthropic=-", input=KEY + "\n")

    assert result.exit_code == 0, result.stderr
    assert json.loads(credentials.read_text()) == {"openai": "sk-old-openai", "anthropic": KEY}
    assert mode(credentials) == 0o600
    assert [p.name for p in config_dir.iterdir()] == ["credentials.json"]  # no temp file left


def test_default_provider_picks_its_default_model(run_cli: RunCli, project: Path) -> None:
    result = run_cli("setup", "--non-interactive", "--default-provider", "openai")

    assert result.exit_code == 0, result.stderr
    config = json.loads((project / ".agi" / "config.json").read_text())
    assert config == {"default_model": "openai:gpt-5-mini"}


def test_existing_project_settings_are_kept(run_cli: RunCli, project: Path) -> None:
    path = project / ".agi" / "config.json"
    path.write_text(json.dumps({"max_iterations": 5, "providers": {"ollama": {"enabled": True}}}))

    run_cli("setup", "--default-agent", "build", "--disable", "ollama")

    assert json.loads(path.read_text()) == {
        "max_iterations": 5,
        "providers": {"ollama": {"enabled": False}},
        "default_agent": "build",
    }


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--default-model", "mystery-model"], 3, "cannot tell the provider"),
        (["--default-agent", "nope"], 2, "unknown agent 'nope'"),
        (["--api-key", "openai"], 2, "is not PROVIDER=VALUE"),
        (["--api-key", "nope=x"], 2, "unknown provider 'nope'"),
        (["--enable", "nope"], 2, "nope"),
    ],
)
def test_bad_choices_write_nothing(
    run_cli: RunCli, project: Path, config_dir: Path, args: list[str], code: int, message: str
) -> None:
    result = run_cli("setup", "--api-key", f"openai={KEY}", *args)

    assert result.exit_code == code
    assert message in result.stderr
    assert not (project / ".agi" / "config.json").exists()
    assert not config_dir.exists()


def test_interactive_with_scripted_stdin(run_cli: RunCli, project: Path, config_dir: Path) -> None:
    answers = ["3, 5", KEY, "", "anthropic", "", "plan"]

    result = run_cli("setup", input="\n".join(answers) + "\n")

    assert result.exit_code == 0, result.stderr
    assert "Providers to enable" in result.stdout
    assert KEY not in result.stdout
    assert json.loads((config_dir / "credentials.json").read_text()) == {"anthropic": KEY}
    config = json.loads((project / ".agi" / "config.json").read_text())
    assert config["default_model"] == "anthropic:claude-sonnet-4-6"
    assert config["default_agent"] == "plan"
    assert config["providers"]["anthropic"] == {"enabled": True}
    assert config["providers"]["ollama"] == {"enabled": True}
    assert config["providers"]["openai"] == {"enabled": False}


def test_interactive_in_a_pseudo_terminal(project: Path, config_dir: Path) -> None:
    child = pexpect.spawn(
        AGI, ["setup"], cwd=str(project), env=process_env(TERM="dumb"), timeout=30, encoding="utf-8"
    )
    child.logfile_read = io.StringIO()
    child.expect(r"Providers to enable .*\[openai\]: ")
    child.sendline("openai, openai-chat, ollama")
    child.expect(r"API key for openai \(Enter skips\): ")
    child.sendline(KEY)  # hidden: asked once for both OpenAI providers
    child.expect(r"Base URL for ollama \[http://localhost:11434/v1\]: ")
    child.sendline("")
    child.expect(r"Default provider .*\[openai\]: ")
    child.sendline("openai-chat")
    child.expect(r"Default model \[gpt-5-mini\]: ")
    child.sendline("gpt-4.1-mini")
    child.expect(r"Default agent .*\[general\]: ")
    child.sendline("")
    child.expect(pexpect.EOF)
    child.close()
    transcript = child.logfile_read.getvalue()

    assert child.exitstatus == 0, transcript
    assert "gpt-4.1-mini" in transcript  # what is typed is echoed...
    assert KEY not in transcript  # ...but not the key
    credentials = config_dir / "credentials.json"
    assert json.loads(credentials.read_text()) == {"openai": KEY, "openai-chat": KEY}
    assert mode(credentials) == 0o600
    config = json.loads((project / ".agi" / "config.json").read_text())
    assert (config["default_model"], config["default_agent"]) == (
        "openai-chat:gpt-4.1-mini",
        "general",
    )
    assert "ollama" in config["providers"]
    assert_nowhere_in(project, KEY)
