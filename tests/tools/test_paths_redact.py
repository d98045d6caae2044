"""Path confinement (for every file tool) and secret redaction."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.errors import PathOutsideProject
from agi_jupyter.tools import Redactor, resolve_in_project
from agi_jupyter.tools.redact import looks_secret
from tests.tools.conftest import Call, exists, snapshot


@pytest.fixture
def outside(project: Path) -> Path:
    secret = project.parent / "outside"
    secret.mkdir()
    (secret / "secret.txt").write_text("top secret outside\n")
    (project / "link").symlink_to(secret, target_is_directory=True)
    (project / "link.txt").symlink_to(secret / "secret.txt")
    return secret


def test_relative_paths_resolve_inside(project: Path) -> None:
    (project / "sub").mkdir()
    assert resolve_in_project(project, "sub/../a.txt") == project / "a.txt"
    assert resolve_in_project(project, ".") == project
    assert resolve_in_project(project, str(project / "sub")) == project / "sub"


@pytest.mark.usefixtures("outside")
@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "/etc/passwd", "link/secret.txt", "link.txt"]
)
def test_escapes_are_refused(project: Path, path: str) -> None:
    with pytest.raises(PathOutsideProject, match="outside the project"):
        resolve_in_project(project, path)


def test_symlink_escape_is_named(project: Path, outside: Path) -> None:
    with pytest.raises(PathOutsideProject, match="through a symlink"):
        resolve_in_project(project, "link.txt")


def test_symlink_inside_the_project_is_fine(project: Path) -> None:
    (project / "real.txt").write_text("x")
    (project / "alias.txt").symlink_to(project / "real.txt")
    assert resolve_in_project(project, "alias.txt") == project / "real.txt"


@pytest.mark.parametrize("name", ["agi.sqlite", "agi.sqlite-wal", "agi.sqlite-shm"])
def test_store_database_is_not_writable(project: Path, name: str) -> None:
    assert resolve_in_project(project, f".agi/{name}") == project / ".agi" / name
    with pytest.raises(PathOutsideProject, match="store database"):
        resolve_in_project(project, f".agi/{name}", for_write=True)
    with pytest.raises(PathOutsideProject, match="store database"):
        resolve_in_project(project, f"./.agi/../.agi/{name}", for_write=True)


ESCAPING_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("fs.read", {"path": "../outside/secret.txt"}),
    ("fs.read", {"path": "link.txt"}),
    ("fs.list", {"path": "link"}),
    ("fs.list", {"path": "/"}),
    ("fs.search", {"pattern": "secret", "path": "link"}),
    ("fs.search", {"pattern": "secret", "path": ".."}),
    ("fs.write", {"path": "../outside/new.txt", "content": "x"}),
    ("fs.write", {"path": "link/new.txt", "content": "x"}),
    ("fs.write", {"path": str(Path("/tmp") / "agi-escape.txt"), "content": "x"}),
    ("fs.write", {"path": ".agi/agi.sqlite", "content": "x"}),
    (
        "apply_patch",
        {"patch": "*** Begin Patch\n*** Add File: ../outside/p.txt\n+x\n*** End Patch"},
    ),
    ("apply_patch", {"patch": "*** Begin Patch\n*** Delete File: link.txt\n*** End Patch"}),
    (
        "apply_patch",
        {"patch": "--- a/link/secret.txt\n+++ b/link/secret.txt\n@@ -1 +1 @@\n-top\n+x\n"},
    ),
    ("shell.run", {"command": "pwd", "cwd": "../outside"}),
    ("shell.run", {"command": "pwd", "cwd": "link"}),
]


@pytest.mark.asyncio
@pytest.mark.usefixtures("outside")
@pytest.mark.parametrize(("name", "arguments"), ESCAPING_CALLS)
async def test_every_file_tool_refuses_escapes(
    call: Call, project: Path, name: str, arguments: dict[str, Any]
) -> None:
    outcome = await call(name, arguments)
    assert outcome.status == "failed"
    assert not outcome.ok
    assert outcome.error is not None
    assert outcome.error["code"] == "PATH_OUTSIDE_PROJECT"
    assert "top secret" not in outcome.output
    assert snapshot(project.parent / "outside") == {"secret.txt": "top secret outside\n"}
    assert not exists(Path("/tmp/agi-escape.txt"))


# --- redaction -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("DB_PASSWORD", True),
        ("my_client_secret", True),
        ("PATH", False),
        ("HOME", False),
        ("KEYBOARD", False),
        ("TOKENIZERS_PARALLELISM", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert looks_secret(name) is secret


def test_redactor_replaces_secret_values_in_text_and_json() -> None:
    env = {
        "OPENAI_API_KEY": "sk-live-abcdef123456",
        "SHORT_TOKEN": "abc",  # too short to be worth redacting
        "HOME": "/home/someone-long",
        "DB_PASSWORD": "hunter2hunter2",
    }
    redactor = Redactor(env)
    assert redactor
    assert redactor.names == ["DB_PASSWORD", "OPENAI_API_KEY"]
    text = "key=sk-live-abcdef123456 pw=hunter2hunter2 home=/home/someone-long abc"
    assert redactor.redact_text(text) == (
        "key=[REDACTED:OPENAI_API_KEY] pw=[REDACTED:DB_PASSWORD] home=/home/someone-long abc"
    )
    value = {"args": ["x", {"k": "Bearer sk-live-abcdef123456"}], "n": 3, "ok": True, "z": None}
    assert redactor.redact_json(value) == {
        "args": ["x", {"k": "Bearer [REDACTED:OPENAI_API_KEY]"}],
        "n": 3,
        "ok": True,
        "z": None,
    }


def test_empty_redactor_is_a_no_op() -> None:
    redactor = Redactor({})
    assert not redactor
    value = {"a": ["b"]}
    assert redactor.redact_json(value) is value
    assert redactor.redact_text("anything") == "anything"


def test_redactor_prefers_the_longest_secret() -> None:
    redactor = Redactor({"A_KEY": "12345678", "B_KEY": "12345678abcd"})
    assert redactor.redact_text("12345678abcd") == "[REDACTED:B_KEY]"


def test_redact_module_does_not_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_API_KEY", "from-os-environ-value")
    assert Redactor().redact_text("from-os-environ-value") == "from-os-environ-value"
    assert Redactor(os.environ).redact_text("from-os-environ-value") == "[REDACTED:SOME_API_KEY]"
