"""``mcp.json`` parsing, ``${VAR}`` references, which servers a tool list reaches, and that
nothing of the ``mcp`` SDK is imported before a server is needed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agi_jupyter.envrefs import MissingReference, expand
from agi_jupyter.errors import ConfigError
from agi_jupyter.mcp.config import load_mcp_servers, secrets_of
from agi_jupyter.mcp.servers import reaches
from agi_jupyter.tools import Redactor

LOOKUP = {"TOKEN": "tk-0123456789", "EMPTY": "", "PLAIN": "value"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${TOKEN}", "tk-0123456789"),
        ("Bearer ${env:TOKEN}", "Bearer tk-0123456789"),
        ("${MISSING:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),
        ("${PLAIN:-x}/${PLAIN}", "value/value"),
        ("no references, $HOME, ${lower_ok}x", None),
    ],
)
def test_references_expand(text: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(MissingReference, match="lower_ok"):
            expand(text, LOOKUP)
    else:
        assert expand(text, LOOKUP) == expected


def test_missing_references_are_all_named() -> None:
    with pytest.raises(MissingReference) as error:
        expand("${A}${B}${A}", {})
    assert error.value.names == ["A", "B"]
    assert "not set" in str(error.value)


def _write(path: Path, servers: object, key: str = "mcpServers") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({key: servers}))


def test_project_servers_override_global_ones_and_disabled_ones_are_skipped(
    tmp_path: Path,
) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    _write(
        home / "mcp.json",
        {"shared": {"command": "global-cmd"}, "only-global": {"url": "https://x/mcp"}},
    )
    _write(
        project / ".agi" / "mcp.json",
        {
            "shared": {"command": "project-cmd", "args": ["--token", "${TOKEN}"], "cwd": "sub"},
            "off": {"command": "x", "disabled": True},
            "sse": {"type": "sse", "url": "http://127.0.0.1:1/sse", "autoApprove": ["a"]},
        },
    )

    specs = {s.name: s for s in load_mcp_servers(project, home, LOOKUP)}

    assert sorted(specs) == ["only-global", "shared", "sse"]
    shared = specs["shared"]
    assert (shared.transport, shared.command, shared.args) == (
        "stdio",
        "project-cmd",
        ("--token", "tk-0123456789"),
    )
    assert shared.cwd == (project / "sub").resolve()
    assert shared.source == str(project / ".agi" / "mcp.json")
    assert specs["only-global"].transport == "http"
    assert specs["sse"].transport == "sse"
    assert "tk-0123456789" not in repr(shared)


def test_vs_code_servers_key_and_unsafe_names(tmp_path: Path) -> None:
    _write(tmp_path / ".agi" / "mcp.json", {"my server!": {"command": "x"}}, key="servers")
    (spec,) = load_mcp_servers(tmp_path, tmp_path / "none", {})
    assert (spec.name, spec.prefix) == ("my_server_", "mcp.my_server_.")


def test_secrets_from_references_secret_env_names_and_auth_headers(tmp_path: Path) -> None:
    _write(
        tmp_path / ".agi" / "mcp.json",
        {
            "a": {
                "command": "x",
                "env": {"GITHUB_TOKEN": "ghp-literal-secret", "MODE": "${PLAIN}-${TOKEN}"},
            },
            "b": {
                "url": "https://h/mcp",
                "headers": {"Authorization": "Bearer literal-bearer-1", "Accept": "text/plain"},
            },
        },
    )
    specs = load_mcp_servers(tmp_path, tmp_path / "none", LOOKUP)
    redactor = Redactor({}, extra=secrets_of(specs))
    text = "ghp-literal-secret tk-0123456789 literal-bearer-1 value text/plain"
    redacted = redactor.redact_text(text)
    for secret in ("ghp-literal-secret", "tk-0123456789", "literal-bearer-1"):
        assert secret not in redacted
    assert redacted.endswith("value text/plain")  # short and non-secret values stay


def test_an_unset_reference_keeps_the_server_with_a_problem(tmp_path: Path) -> None:
    _write(
        tmp_path / ".agi" / "mcp.json",
        {"s": {"command": "x", "env": {"K": "${NOPE}"}, "args": ["${ALSO_NOPE}"]}},
    )
    (spec,) = load_mcp_servers(tmp_path, tmp_path / "none", {})
    assert spec.problem is not None
    assert "NOPE" in spec.problem
    assert "ALSO_NOPE" in spec.problem


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"mcpServers": []}', "must hold"),
        ('{"mcpServers": {"s": {"args": ["x"]}}}', "needs a command"),
        ('{"mcpServers": {"s": {"type": "http"}}}', "no url"),
        ('{"mcpServers": {"s": {"command": "x", "args": "not a list"}}}', "args"),
        ('{"mcpServers": {"a b": {"command": "x"}, "a_b": {"command": "y"}}}', "clashes"),
    ],
)
def test_malformed_files_are_config_errors_naming_the_file(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / ".agi" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(ConfigError, match=message) as error:
        load_mcp_servers(tmp_path, tmp_path / "none", {})
    assert str(path) in error.value.message


@pytest.mark.parametrize(
    ("pattern", "prefix", "expected"),
    [
        ("mcp.*", "mcp.github.", True),
        ("*", "mcp.github.", True),
        ("mcp.github.*", "mcp.github.", True),
        ("mcp.github.create_*", "mcp.github.", True),
        ("mcp.github.create_issue", "mcp.github.", True),
        ("mcp.gitlab.*", "mcp.github.", False),
        ("mcp.g*", "mcp.github.", True),
        ("fs.*", "mcp.github.", False),
        ("fs.read", "mcp.github.", False),
        ("mcp.github", "mcp.github.", False),
    ],
)
def test_which_servers_a_tool_list_entry_reaches(pattern: str, prefix: str, expected: bool) -> None:
    assert reaches(pattern, prefix) is expected


@pytest.mark.slow
def test_a_runtime_with_mcp_servers_imports_no_protocol_sdk_until_one_is_needed(
    tmp_path: Path,
) -> None:
    _write(tmp_path / ".agi" / "mcp.json", {"s": {"command": sys.executable}})
    code = (
        "import sys; from agi_jupyter import Agi;"
        f"agi = Agi({str(tmp_path)!r}, env={{'HOME': {str(tmp_path)!r}}});"
        "agi.sdks(); agi.close();"
        "print(','.join(m for m in ('mcp', 'mcp_types', 'acp') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == ""
