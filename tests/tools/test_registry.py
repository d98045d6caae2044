"""The registry: gating by names/globs and features, project tool loading and hot reload."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import BaseModel

from agi_jupyter.errors import UsageError
from agi_jupyter.store import SqliteStore
from agi_jupyter.tools import ToolContext, ToolRegistry, builtin_tools, is_allowed, tool
from agi_jupyter.tools.loader import MODULE_PREFIX
from tests.tools.conftest import Call


class NoArgs(BaseModel):
    pass


@tool("python", requires={"kernel"})
def python_tool(args: NoArgs) -> str:
    return "ran"


def write_tool(project: Path, folder: str, source: str, prompt: str | None = None) -> Path:
    path = project / ".agi" / "tools" / folder / "tool.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    if prompt is not None:
        (path.parent / "prompt.txt").write_text(prompt)
    return path


@pytest.mark.parametrize(
    ("name", "allowed", "expected"),
    [
        ("fs.read", ["fs.*"], True),
        ("fs.read", ["fs.read"], True),
        ("fs.read", ["*"], True),
        ("shell.run", ["fs.*", "tasks"], False),
        ("fs.read", [], False),
        ("fs.read", ["fs.rea"], False),
        ("apply_patch", ["apply_*"], True),
    ],
)
def test_is_allowed(name: str, allowed: list[str], expected: bool) -> None:
    assert is_allowed(name, allowed) is expected


def test_offered_filters_by_globs_and_requirements() -> None:
    registry = ToolRegistry([*builtin_tools(), python_tool])
    names = [t.name for t in registry.offered(["fs.*", "python"])]
    assert names == ["fs.list", "fs.read", "fs.search", "fs.write"]
    with_kernel = [t.name for t in registry.offered(["fs.read", "python"], {"kernel"})]
    assert with_kernel == ["fs.read", "python"]
    assert registry.offered([]) == []
    assert len(registry.offered(["*"])) == len(builtin_tools())


def test_register_refuses_duplicates_unless_replacing() -> None:
    registry = ToolRegistry([python_tool])
    with pytest.raises(UsageError, match="already registered"):
        registry.register(python_tool)
    registry.register(python_tool, replace=True)
    assert registry.unregister("python") is python_tool
    assert registry.get("python") is None
    assert "python" not in registry


def test_prompts_join_tool_context() -> None:
    registry = ToolRegistry(builtin_tools())
    text = registry.prompts(registry.offered(["write_capability", "fs.read"]))
    assert text.startswith("## Tool write_capability\n")


GOOD_TOOL = """
from pydantic import BaseModel
from agi_jupyter.tools import tool

class Args(BaseModel):
    text: str

@tool("shout", description="Upper-case the text.", read_only=True)
def shout(args: Args) -> str:
    return args.text.upper()
"""

CAPABILITY_TOOL = '''
"""Count the words of a text."""

PARAMETERS = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

async def word_count(params: dict) -> str:
    return str(len(params["text"].split()))
'''


@pytest.mark.asyncio
async def test_project_tools_load_and_run(
    project: Path, registry: ToolRegistry, call: Call, ctx: ToolContext
) -> None:
    write_tool(project, "shout", GOOD_TOOL, prompt="Use shout for emphasis.\n")
    write_tool(project, "word-count", CAPABILITY_TOOL)
    report = registry.load_project_tools(project)
    assert sorted(report.loaded) == ["shout", "word-count"]
    assert report.errors == {}
    shout = registry.get("shout")
    assert shout is not None
    assert shout.source == "project"
    assert shout.read_only
    assert shout.prompt == "Use shout for emphasis."
    counter = registry.get("word-count")
    assert counter is not None
    assert counter.description == "Count the words of a text."
    assert counter.spec().parameters["required"] == ["text"]
    assert (await call("shout", {"text": "hi"})).output == "HI"
    assert (await call("word-count", {"text": "a b c"})).output == "3"
    missing = await call("word-count", {})
    assert missing.status == "failed"
    assert "text: field required" in missing.output
    wrong = await call("word-count", {"text": 3})
    assert "expected string" in wrong.output


def test_a_broken_tool_does_not_stop_the_others(project: Path, registry: ToolRegistry) -> None:
    write_tool(project, "good", GOOD_TOOL.replace('"shout"', '"good"'))
    write_tool(project, "syntax", "def broken(:\n")
    write_tool(project, "imports", "import module_that_does_not_exist_anywhere\n")
    write_tool(project, "raises", "raise RuntimeError('no config')\n")
    write_tool(project, "empty", "X = 1\n")
    (project / ".agi" / "tools" / "nofile").mkdir()
    report = registry.load_project_tools(project)
    assert report.loaded == ["good"]
    errors = registry.load_errors
    assert errors == report.errors
    assert errors["syntax"].startswith("syntax_error (line 1)")
    assert "ModuleNotFoundError" in errors["imports"]
    assert "import_error" in errors["imports"]
    assert "RuntimeError: no config" in errors["raises"]
    assert errors["empty"].startswith("missing_function")
    assert "'empty'" in errors["empty"]
    assert "no tool.py" in errors["nofile"]
    assert registry.get("good") is not None


def test_project_tools_may_not_shadow_builtins(project: Path, registry: ToolRegistry) -> None:
    write_tool(project, "mine", GOOD_TOOL.replace('"shout"', '"fs.read"'))
    report = registry.load_project_tools(project)
    assert report.loaded == []
    assert "already exists" in report.errors["mine"]
    fs_read = registry.get("fs.read")
    assert fs_read is not None
    assert fs_read.source == "builtin"


def test_reload_replaces_and_removes_project_tools(project: Path, registry: ToolRegistry) -> None:
    path = write_tool(project, "shout", GOOD_TOOL)
    registry.load_project_tools(project)
    first = registry.get("shout")
    path.write_text(textwrap.dedent(GOOD_TOOL).replace("Upper-case", "Loudly upper-case"))
    report = registry.load_project_tools(project)
    second = registry.get("shout")
    assert second is not None
    assert second is not first
    assert second.description == "Loudly upper-case the text."
    assert report.loaded == ["shout"]
    [m for m in sys.modules if m.startswith(MODULE_PREFIX)]
    path.unlink()
    report = registry.load_project_tools(project)
    assert report.removed == ["shout"]
    assert registry.get("shout") is None
    assert not any(m.startswith(MODULE_PREFIX) for m in sys.modules)
    assert not any(str(project) in entry for entry in sys.path)


def test_capability_rows_give_schema_and_description(
    project: Path, registry: ToolRegistry, store: SqliteStore
) -> None:
    write_tool(project, "word_count", CAPABILITY_TOOL.replace("word_count", "word_count"))
    store.upsert_capability(
        "word_count",
        description="Count words (from the table).",
        file_path=".agi/tools/word_count/tool.py",
        tool_schema={
            "type": "function",
            "function": {
                "name": "word_count",
                "parameters": {"type": "object", "properties": {"words": {"type": "string"}}},
            },
        },
    )
    registry.load_project_tools(project, store=store)
    loaded = registry.get("word_count")
    assert loaded is not None
    assert loaded.description == "Count words (from the table)."
    assert loaded.spec().parameters == {
        "type": "object",
        "properties": {"words": {"type": "string"}},
        "additionalProperties": False,
    }
