"""write_capability's validation pipeline (seed 002) and the reload tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.store import SqliteStore
from agi_jupyter.tools import ToolRegistry
from tests.tools.conftest import Call, exists, read, write

WORD_COUNT = '''
"""Count words."""


async def word_count(params: dict) -> str:
    return str(len(params["text"].split()))
'''

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def capability(name: str = "word_count", code: str = WORD_COUNT, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": "Count the words of a text.",
        "code": code,
        "parameters_schema": SCHEMA,
        **extra,
    }


def tool_file(project: Path, name: str = "word_count") -> Path:
    return project / ".agi" / "tools" / name / "tool.py"


@pytest.mark.asyncio
async def test_happy_path_registers_and_offers_the_tool(
    call: Call, project: Path, registry: ToolRegistry, store: SqliteStore
) -> None:
    assert registry.get("word_count") is None
    outcome = await call("write_capability", capability())
    assert outcome.status == "completed", outcome.output
    assert json.loads(outcome.output) == {
        "ok": True,
        "name": "word_count",
        "file_path": ".agi/tools/word_count/tool.py",
        "message": "capability word_count is registered and available from your next turn",
    }
    assert read(tool_file(project)) == WORD_COUNT
    row = store.get_capability("word_count")
    assert row is not None
    assert row.description == "Count the words of a text."
    assert row.file_path == ".agi/tools/word_count/tool.py"
    assert row.tool_schema == {**SCHEMA, "additionalProperties": False}
    assert [t.name for t in registry.offered(["word_count"])] == ["word_count"]
    offered = registry.get("word_count")
    assert offered is not None
    assert offered.description == "Count the words of a text."
    assert offered.spec().parameters["required"] == ["text"]
    used = await call("word_count", {"text": "one two three"})
    assert used.output == "3"


@pytest.mark.asyncio
async def test_syntax_error_is_structured_and_writes_nothing(
    call: Call, project: Path, store: SqliteStore
) -> None:
    code = "async def word_count(params):\n    return (\n"
    outcome = await call("write_capability", capability(code=code))
    assert outcome.status == "failed"
    error = json.loads(outcome.output)
    assert error["error"] == "syntax_error"
    assert error["line"] == 2
    assert isinstance(error["offset"], int)
    assert error["message"]
    assert outcome.result["data"] == error
    assert not exists(tool_file(project).parent)
    assert store.get_capability("word_count") is None


@pytest.mark.asyncio
async def test_import_error_removes_the_file(
    call: Call, project: Path, store: SqliteStore, registry: ToolRegistry
) -> None:
    code = (
        "import package_that_is_not_installed_xyz\n\nasync def word_count(params):\n    return ''\n"
    )
    outcome = await call("write_capability", capability(code=code))
    error = json.loads(outcome.output)
    assert error["error"] == "import_error"
    assert "ModuleNotFoundError" in error["message"]
    assert "package_that_is_not_installed_xyz" in error["message"]
    assert not exists(tool_file(project))
    assert not exists(tool_file(project).parent)
    assert store.get_capability("word_count") is None
    assert registry.get("word_count") is None


@pytest.mark.asyncio
async def test_missing_function_removes_the_file(
    call: Call, project: Path, store: SqliteStore
) -> None:
    code = "async def count_words(params):\n    return ''\n"
    outcome = await call("write_capability", capability(code=code))
    error = json.loads(outcome.output)
    assert error["error"] == "missing_function"
    assert "'word_count'" in error["message"]
    assert not exists(tool_file(project))
    assert store.get_capability("word_count") is None


@pytest.mark.asyncio
async def test_failed_rewrite_keeps_the_previous_version(
    call: Call, project: Path, registry: ToolRegistry
) -> None:
    assert (await call("write_capability", capability())).ok
    broken = "raise RuntimeError('boom')\n"
    outcome = await call("write_capability", capability(code=broken))
    assert json.loads(outcome.output)["error"] == "import_error"
    assert read(tool_file(project)) == WORD_COUNT
    assert (await call("word_count", {"text": "still works"})).output == "2"


@pytest.mark.asyncio
async def test_quick_rewrites_never_run_stale_code(call: Call) -> None:
    for answer in ("1", "2", "3"):
        code = f"def word_count(params):\n    return '{answer}'\n"
        assert (await call("write_capability", capability(code=code))).ok
        assert (await call("word_count", {"text": "x"})).output == answer


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("WordCount", "not a valid capability name"),
        ("word-count", "not a valid capability name"),
        ("class", "not a valid capability name"),
        ("../escape", "not a valid capability name"),
        ("reload", "built-in tool"),
    ],
)
async def test_bad_names_are_refused(call: Call, project: Path, name: str, message: str) -> None:
    outcome = await call("write_capability", capability(name=name))
    error = json.loads(outcome.output)
    assert error["error"] == "invalid_name"
    assert message in error["message"]
    assert not exists(project / ".agi" / "tools")


@pytest.mark.asyncio
async def test_bad_schema_is_refused(call: Call) -> None:
    outcome = await call("write_capability", capability(parameters_schema={"type": "string"}))
    assert json.loads(outcome.output)["error"] == "invalid_schema"


@pytest.mark.asyncio
async def test_reload_reports_loaded_and_skipped(
    call: Call, project: Path, registry: ToolRegistry
) -> None:
    write(tool_file(project, "word_count"), WORD_COUNT)
    write(tool_file(project, "broken"), "def broken(:\n")
    outcome = await call("reload")
    data = json.loads(outcome.output)
    assert data["loaded"] == ["word_count"]
    assert data["skipped"]["broken"].startswith("syntax_error (line 1)")
    assert data["removed"] == []
    assert registry.get("word_count") is not None
    assert registry.load_errors == data["skipped"]


@pytest.mark.asyncio
async def test_reload_without_a_registry_fails_clearly(call: Call) -> None:
    outcome = await call("reload", registry=None)
    assert outcome.status == "failed"
    assert "no tool registry" in outcome.output
