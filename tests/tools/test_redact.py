"""Redaction by value: which values are secrets, the forms they are found in, streams, logs."""

from __future__ import annotations

import base64
import json
import logging
import random
import subprocess
from pathlib import Path

import pytest

from agi_jupyter.config import load_config
from agi_jupyter.errors import ConfigError
from agi_jupyter.tools.redact import Redactor, env_secrets, install_log_redaction, secret_forms

ENV = {
    "STRIPE_APIKEY": "rk_live_51HabcdefGHIJKLmnop1234",  # by name (*APIKEY) and by prefix
    "DATABASE_URL": "postgres://app:Corr3ct-Horse-Battery@db:5432/app",  # password in a URL
    "GH": "ghp_R4nd0mL00kingT0kenValue1234567",  # by prefix only
    "SESSION_BLOB": "Zq8vK2mN7xP4wL9rT6yB3cF5hJ1dG0sA",  # a long high-entropy token
    "HOSTNAME": "buildbox-7",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/home/someone/with-a-rather-long-path-1234567890",
    "LANG": "C.UTF-8",
    "GIT_PAGER": "less --quit-if-one-screen",
}
SECRETS = {
    "STRIPE_APIKEY": "rk_live_51HabcdefGHIJKLmnop1234",
    "DATABASE_URL": "Corr3ct-Horse-Battery",
    "GH": "ghp_R4nd0mL00kingT0kenValue1234567",
    "SESSION_BLOB": "Zq8vK2mN7xP4wL9rT6yB3cF5hJ1dG0sA",
}


def test_secrets_by_name_shape_and_url_password() -> None:
    assert env_secrets(ENV) == SECRETS


def shell(command: str, data: str) -> str:
    done = subprocess.run(command, shell=True, input=data, capture_output=True, text=True)
    return done.stdout


@pytest.mark.parametrize(
    "command",
    ["cat", "rev", "base64", "base64 -w 9", "basenc --base64url", "xxd -p", "xxd -p -c 7",
     "od -An -tx1 | tr -d ' \\n'", "xxd -p | tr a-f A-F"],
)  # fmt: skip
@pytest.mark.parametrize("prefix", ["", "a", "ab", "abc"])
def test_every_form_of_every_secret_is_redacted(command: str, prefix: str) -> None:
    redactor = Redactor(ENV, credentials={"anthropic": "sk-ant-api03-CredFileOnly-9876543"})
    for name, secret in [
        *SECRETS.items(),
        ("credentials.anthropic", "sk-ant-api03-CredFileOnly-9876543"),
    ]:
        printed = shell(command, f"{prefix}{secret} and again {secret}\n")
        redacted = redactor.redact_text(printed)
        assert redacted.count(f"[REDACTED:{name}]") >= 1, (command, printed, redacted)
        for form in secret_forms(secret):
            assert form not in redacted.replace("\n", "")


def test_base64_of_a_secret_at_any_offset_of_a_long_text() -> None:
    secret = SECRETS["GH"]
    redactor = Redactor(ENV)
    for offset in range(6):
        text = base64.b64encode(b"x" * offset + secret.encode() + b"y" * 5).decode()
        assert "[REDACTED:GH]" in redactor.redact_text(text)


def test_ordinary_values_are_left_alone() -> None:
    redactor = Redactor(ENV)
    text = "host buildbox-7 in /home/someone/with-a-rather-long-path-1234567890, C.UTF-8"
    assert redactor.redact_text(text) == text
    assert sorted(redactor.names) == sorted(SECRETS)


def test_extra_patterns_and_the_allow_list() -> None:
    redactor = Redactor(ENV, patterns=[r"acct-[0-9]{6}"], allow=["SESSION_BLOB", SECRETS["GH"]])
    assert redactor.redact_text("id acct-123456") == "id [REDACTED:pattern]"
    kept = f"{SECRETS['SESSION_BLOB']} {SECRETS['GH']}"
    assert redactor.redact_text(kept) == kept
    assert redactor.redact_text(SECRETS["STRIPE_APIKEY"]) == "[REDACTED:STRIPE_APIKEY]"


def test_a_value_the_caller_names_is_redacted_under_that_name() -> None:
    """An MCP or ACP secret that is also in the environment is named as the caller knows it
    (which setting holds it), not after whichever variable happened to hold it too."""
    redactor = Redactor(ENV, extra={"MCP_GITHUB": SECRETS["GH"]})
    assert redactor.redact_text(SECRETS["GH"]) == "[REDACTED:MCP_GITHUB]"
    assert redactor.redact_text(SECRETS["STRIPE_APIKEY"]) == "[REDACTED:STRIPE_APIKEY]"


@pytest.mark.parametrize("patterns", [(), (r"acct-[0-9]{6}",)])
def test_a_stream_cut_anywhere_gives_what_the_whole_text_gives(patterns: tuple[str, ...]) -> None:
    redactor = Redactor(ENV, patterns=patterns)
    pieces = [f"line {i} {s}\n" for i, s in enumerate(SECRETS.values())]
    text = "".join(pieces) + shell("base64", SECRETS["GH"] * 3) + "acct-654321 done"
    whole = redactor.redact_text(text)
    chooser = random.Random(7)
    for _ in range(200):
        cuts = sorted(chooser.sample(range(1, len(text)), 12))
        chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        stream = redactor.stream()
        out = [stream.feed(chunk) for chunk in chunks]
        assert "".join(out) + stream.flush() == whole
        for piece in out:  # no chunk leaks a piece of a secret
            assert not any(s[:8] in piece for s in SECRETS.values())
    data = text.encode()
    stream_b = redactor.byte_stream()
    assert (
        b"".join(stream_b.feed(data[i : i + 5]) for i in range(0, len(data), 5))
        + (stream_b.flush())
        == whole.encode()
    )


def test_log_records_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    redactor = Redactor(ENV)
    install_log_redaction(redactor)
    log = logging.getLogger("agi_jupyter.test_redact")
    with caplog.at_level(logging.INFO, logger="agi_jupyter.test_redact"):
        log.info("connecting with %s", SECRETS["STRIPE_APIKEY"])
        try:
            raise RuntimeError(f"bad key {SECRETS['GH']}")
        except RuntimeError:
            log.exception("failed")
    assert SECRETS["STRIPE_APIKEY"] not in caplog.text
    assert SECRETS["GH"] not in caplog.text
    assert "[REDACTED:STRIPE_APIKEY]" in caplog.text


def test_config_patterns_and_allow_list(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".agi").mkdir(parents=True)
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    env = {"AGI_CONFIG_DIR": str(config_dir)}
    (config_dir / "config.json").write_text(
        json.dumps({"redact_patterns": ["g-[0-9]+"], "redact_allow": ["HOSTNAME"]})
    )
    (config_dir / "credentials.json").write_text(json.dumps({"openai": "sk-from-the-file-123"}))
    (project / ".agi" / "config.json").write_text(json.dumps({"redact_patterns": ["p-[0-9]+"]}))
    config = load_config(project, env=env)
    assert config.redact_patterns == ("g-[0-9]+", "p-[0-9]+")  # a project adds, never removes
    assert config.redact_allow == ("HOSTNAME",)
    assert config.credentials == {"openai": "sk-from-the-file-123"}
    assert "sk-from-the-file-123" not in repr(config)
    (project / ".agi" / "config.json").write_text(json.dumps({"redact_allow": ["OPENAI_API_KEY"]}))
    with pytest.raises(ConfigError, match="redact_allow is accepted only in the global config"):
        load_config(project, env=env)
    (project / ".agi" / "config.json").write_text(json.dumps({"redact_patterns": ["("]}))
    with pytest.raises(ConfigError, match=r"redact_patterns\.0: invalid"):
        load_config(project, env=env)
