"""The codex adapter without the real CLI: finding the binary, the private home, options,
error classification, and process edge cases driven by small shell scripts standing in for
``codex`` (a crash that prints the key, a thread codex no longer has)."""

from __future__ import annotations

import json
import os
import stat
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.errors import (
    ProviderDisconnected,
    ProviderError,
    ProviderHTTPError,
    ProviderNotConfigured,
    SdkModelMismatch,
    SdkNotAvailable,
    UsageError,
)
from agi_jupyter.records import Session
from agi_jupyter.sdk.codex.adapter import CodexAdapter, CodexOptions, classify
from agi_jupyter.sdk.codex.binary import ENV_VAR, INSTALL_COMMAND, find_codex, venv_codex
from agi_jupyter.sdk.codex.home import KEY_ENV, child_env, prepare_home, render_config

KEY = "sk-test-openai-secret-0001"
MakeAgi = Callable[..., Agi]


def _executable(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


# --- finding the binary ------------------------------------------------------------------------


def test_check_available_without_codex_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))  # no bundled CLI there
    adapter = CodexAdapter(env={"PATH": str(tmp_path / "empty")})
    with pytest.raises(SdkNotAvailable) as raised:
        adapter.check_available()
    assert raised.value.code == "SDK_NOT_AVAILABLE"
    assert INSTALL_COMMAND in raised.value.message
    assert ENV_VAR in raised.value.message
    description = adapter.describe()
    assert description["available"] is False
    assert INSTALL_COMMAND in str(description["reason"])
    assert INSTALL_COMMAND in adapter.install_hint


def test_find_codex_order(tmp_path: Path) -> None:
    on_path = _executable(tmp_path / "bin" / "codex")
    explicit = _executable(tmp_path / "elsewhere" / "my-codex")
    bundled = _executable(venv_codex(tmp_path / "venv"))
    prefix = tmp_path / "venv"
    env = {"PATH": str(tmp_path / "bin")}
    assert find_codex({**env, ENV_VAR: str(explicit)}, prefix=prefix) == explicit
    assert find_codex(env, prefix=prefix) == on_path
    assert find_codex({"PATH": str(tmp_path / "none")}, prefix=prefix) == bundled
    not_executable = tmp_path / "plain"
    not_executable.write_text("")
    with pytest.raises(SdkNotAvailable, match=ENV_VAR):
        find_codex({**env, ENV_VAR: str(not_executable)}, prefix=prefix)


def test_adapter_identity() -> None:
    adapter = CodexAdapter(env={})
    assert (adapter.id, adapter.display_name) == ("codex", "Codex CLI")
    assert adapter.capabilities.to_dict() == {
        "queue_while_streaming": False,
        "interrupt": False,
        "tool_events": True,
        "full_history": True,
    }
    model = adapter.resolve_display_model(Session(id="ses_x", model="gpt-5-codex"))
    assert (model.provider, model.model, model.label) == (
        "openai",
        "gpt-5-codex",
        "openai:gpt-5-codex",
    )


# --- the private home --------------------------------------------------------------------------


def test_home_config_has_the_provider_and_no_key(tmp_path: Path) -> None:
    home = prepare_home(tmp_path, base_url="http://127.0.0.1:9/v1")
    assert home == tmp_path / ".agi" / "codex-home"
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    config_file = home / "config.toml"
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    config = tomllib.loads(config_file.read_text())
    assert config["model_provider"] == "agi"
    assert config["approval_policy"] == "never"
    assert config["model_providers"]["agi"] == {
        "name": "agi-jupyter",
        "base_url": "http://127.0.0.1:9/v1",
        "env_key": KEY_ENV,
        "wire_api": "responses",
        "request_max_retries": 0,
        "stream_max_retries": 0,
    }
    assert config["analytics"] == {"enabled": False}
    default = tomllib.loads(render_config(base_url=None))
    assert default["model_providers"]["agi"]["base_url"] == "https://api.openai.com/v1"
    odd = 'http://h/v1?q="x"\\\x7f'
    assert tomllib.loads(render_config(base_url=odd))["model_providers"]["agi"]["base_url"] == odd


def test_child_env_keeps_secrets_out(tmp_path: Path) -> None:
    env = child_env(
        {
            "PATH": "/usr/bin",
            "HOME": "/home/me",
            "OPENAI_API_KEY": "sk-other",
            "GITHUB_TOKEN": "ghp-x",
            "CODEX_HOME": "/home/me/.codex",
            "OPENAI_BASE_URL": "http://elsewhere",
        },
        home=tmp_path,
        api_key=KEY,
    )
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "CODEX_HOME": str(tmp_path),
        KEY_ENV: KEY,
    }


# --- options and errors -------------------------------------------------------------------------


def test_codex_options_from_session_metadata() -> None:
    assert CodexOptions.of(Session(id="s")) == CodexOptions(timeout=600.0, reconnect_limit=3)
    options = CodexOptions.of(
        Session(id="s", metadata={"codex": {"timeout": 5, "reconnect_limit": 2}})
    )
    assert options == CodexOptions(timeout=5.0, reconnect_limit=2)
    for bad in (
        {"timeout": 0},
        {"timeout": "fast"},
        {"reconnect_limit": 0},
        {"reconnect_limit": True},
    ):
        with pytest.raises(UsageError):
            CodexOptions.of(Session(id="s", metadata={"codex": bad}))


def test_classify_codex_failures() -> None:
    unauthorized = classify("unexpected status 401 Unauthorized: (fake) error 401, url: x")
    assert isinstance(unauthorized, ProviderHTTPError)
    assert (unauthorized.status, unauthorized.retryable) == (401, False)
    limited = classify("exceeded retry limit, last status: 429 Too Many Requests")
    assert isinstance(limited, ProviderHTTPError)
    assert limited.retryable
    dropped = classify("stream disconnected before completion: stream closed")
    assert isinstance(dropped, ProviderDisconnected)
    assert dropped.retryable
    busy = classify("We’re currently experiencing high demand, which may cause temporary errors.")
    assert type(busy) is ProviderError
    assert busy.retryable
    invalid = classify('{"error": {"message": "bad", "type": "invalid_request_error"}}')
    assert type(invalid) is ProviderError
    assert not invalid.retryable
    assert invalid.message.startswith("codex: ")


# --- through the runtime, with scripts standing in for codex -----------------------------------


@pytest.fixture
def agi_for(tmp_path: Path) -> Iterator[MakeAgi]:
    made: list[Agi] = []

    def make(
        codex: Path | None,
        *,
        key: str | None = KEY,
        path: str | None = None,
        anthropic_key: str | None = None,
    ) -> Agi:
        project = tmp_path / "proj"
        (project / ".agi").mkdir(parents=True, exist_ok=True)
        env = {"HOME": str(tmp_path / "home"), "PATH": path or os.environ.get("PATH", os.defpath)}
        if key is not None:
            env["OPENAI_API_KEY"] = key
        if anthropic_key is not None:
            env["ANTHROPIC_API_KEY"] = anthropic_key
        if codex is not None:
            env[ENV_VAR] = str(codex)
        agi = Agi(project, env=env, config={"max_attempts": 1})
        agi.sdk.adapters["codex"] = CodexAdapter(env=env, stop_grace=1.0)
        made.append(agi)
        return agi

    yield make
    for agi in made:
        agi.close()


def test_run_without_codex_fails_with_sdk_not_available(
    agi_for: MakeAgi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    agi = agi_for(None, path=str(tmp_path / "empty"))
    ses = agi.new_session(sdk="codex", model="openai:gpt-5")
    result = agi.ask("hi", session=ses.id)
    assert result.run.status == "failed"
    assert result.run.error is not None
    assert result.run.error["code"] == "SDK_NOT_AVAILABLE"
    assert INSTALL_COMMAND in result.run.error["message"]
    codex = next(s for s in agi.sdks() if s["id"] == "codex")
    assert codex["available"] is False


def test_run_without_a_key_is_not_configured(agi_for: MakeAgi, tmp_path: Path) -> None:
    agi = agi_for(_executable(tmp_path / "codex"), key=None)
    ses = agi.new_session(sdk="codex", model="openai:gpt-5")
    with pytest.raises(ProviderNotConfigured, match="OPENAI_API_KEY"):
        agi.ask("hi", session=ses.id)


def test_a_model_codex_cannot_run_is_refused(agi_for: MakeAgi, tmp_path: Path) -> None:
    agi = agi_for(_executable(tmp_path / "codex"), anthropic_key="sk-test-anthropic-secret-2")
    with pytest.raises(SdkModelMismatch, match="codex SDK cannot run anthropic:claude-sonnet-4-5"):
        agi.new_session(sdk="codex", model="anthropic:claude-sonnet-4-5")  # refused at once
    assert agi.sessions().items == []


def test_crash_message_is_redacted(agi_for: MakeAgi, tmp_path: Path) -> None:
    crash = _executable(
        tmp_path / "codex",
        f'#!/bin/sh\necho "fatal: bad key ${KEY_ENV}" >&2\nexit 3\n',
    )
    agi = agi_for(crash)
    ses = agi.new_session(sdk="codex", model="openai:gpt-5")
    result = agi.ask("hi", session=ses.id)
    assert result.run.status == "failed"
    assert result.run.error is not None
    message = result.run.error["message"]
    assert message.startswith("codex exited with status 3: fatal: bad key")
    assert KEY not in message
    assert f"[REDACTED:{KEY_ENV}]" in message


def test_a_thread_codex_lost_starts_a_new_one(agi_for: MakeAgi, tmp_path: Path) -> None:
    # Resuming fails like codex 0.169 does for an unknown id; a fresh run answers.
    transcript = tmp_path / "fresh.jsonl"
    transcript.write_text(
        "\n".join(
            json.dumps(event)
            for event in (
                {"type": "thread.started", "thread_id": "new-thread"},
                {"type": "turn.started"},
                {
                    "type": "item.completed",
                    "item": {"id": "i", "type": "agent_message", "text": "fresh"},
                },
                {"type": "turn.completed", "usage": {"input_tokens": 3, "output_tokens": 1}},
            )
        )
        + "\n"
    )
    script = _executable(
        tmp_path / "codex",
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        '  if [ "$arg" = resume ]; then\n'
        "    echo 'Error: thread/resume: thread/resume failed: no rollout found' >&2\n"
        "    exit 1\n"
        "  fi\n"
        "done\n"
        f"cat {transcript}\n",
    )
    agi = agi_for(script)
    ses = agi.new_session(
        sdk="codex",
        model="openai:gpt-5",
        metadata={"sdk_state": {"codex": {"thread_id": "gone", "usage": {"input_tokens": 50}}}},
    )
    result = agi.ask("hi", session=ses.id)
    assert result.run.status == "succeeded", result.run.error
    assert result.text == "fresh"
    assert result.run.usage == {"input_tokens": 3, "output_tokens": 1}
    state = agi.session(ses.id).metadata["sdk_state"]["codex"]
    assert state["thread_id"] == "new-thread"
