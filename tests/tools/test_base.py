"""The Tool type: JSON schemas for the model APIs, @tool functions, specs."""

from __future__ import annotations

import threading
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from agi_jupyter.errors import UsageError
from agi_jupyter.tools import FunctionTool, ToolArgs, ToolContext, ToolResult, builtin_tools, tool
from agi_jupyter.tools.base import clean_schema, model_schema


class Inner(BaseModel):
    title: str
    level: int = 1


class Outer(ToolArgs):
    name: str = Field(description="who")
    inner: Inner
    mode: Literal["a", "b"] = "a"
    items: list[Inner] = Field(default_factory=list)


def test_schema_has_no_titles_inlines_refs_and_forbids_extra_keys() -> None:
    schema = model_schema(Outer)
    assert "$defs" not in schema
    assert "title" not in schema
    assert schema["additionalProperties"] is False
    inner = schema["properties"]["inner"]
    assert inner["type"] == "object"
    assert inner["additionalProperties"] is False
    assert set(inner["properties"]) == {"title", "level"}  # a property may be called "title"
    assert "title" not in inner["properties"]["title"]
    assert schema["properties"]["items"]["items"]["properties"]["level"]["type"] == "integer"
    assert schema["properties"]["name"] == {"type": "string", "description": "who"}
    assert schema["required"] == ["name", "inner"]


def test_clean_schema_refuses_non_object_schemas() -> None:
    with pytest.raises(UsageError, match="object"):
        clean_schema({"type": "string"})


def test_every_builtin_has_a_valid_spec() -> None:
    names = set()
    for item in builtin_tools():
        spec = item.spec()
        assert spec.name == item.name
        assert spec.description
        assert spec.parameters["type"] == "object"
        assert spec.parameters["additionalProperties"] is False
        names.add(spec.name)
    assert {
        "fs.read",
        "fs.list",
        "fs.search",
        "fs.write",
        "apply_patch",
        "shell.run",
        "sql.query",
        "tasks",
        "write_capability",
        "reload",
    } == names


class Greeting(BaseModel):
    who: str


@pytest.mark.asyncio
async def test_async_function_tool_gets_model_and_context(ctx: ToolContext) -> None:
    @tool("greet", read_only=True, requires={"kernel"}, prompt="Be nice.")
    async def greet(args: Greeting, context: ToolContext) -> str:
        """Say hello."""
        return f"hello {args.who} from {context.tool_call_id}"

    assert isinstance(greet, FunctionTool)
    assert (greet.name, greet.description, greet.read_only) == ("greet", "Say hello.", True)
    assert greet.requires == frozenset({"kernel"})
    assert greet.prompt == "Be nice."
    assert greet.spec().parameters["properties"] == {"who": {"type": "string"}}
    result = await greet.execute(greet.validate({"who": "Ada"}), ctx)
    assert result == "hello Ada from call_1"


@pytest.mark.asyncio
async def test_sync_function_tool_runs_in_a_worker_thread(ctx: ToolContext) -> None:
    seen: list[str] = []

    @tool(description="Where am I?")
    def where(args: Greeting) -> ToolResult:
        seen.append(threading.current_thread().name)
        return ToolResult(output=args.who, data={"who": args.who})

    assert where.name == "where"
    result = await where.execute(where.validate({"who": "x"}), ctx)
    assert isinstance(result, ToolResult)
    assert result.data == {"who": "x"}
    assert seen
    assert seen[0] != threading.main_thread().name


def test_function_tool_needs_a_pydantic_model() -> None:
    def bad(args: dict[str, str]) -> str:
        return ""

    with pytest.raises(UsageError, match="pydantic model"):
        FunctionTool(bad)


def test_context_for_call_copies_with_id_and_emit(ctx: ToolContext) -> None:
    got: list[str] = []
    copy = ctx.for_call("call_9", emit=lambda channel, chunk: got.append(chunk))
    copy.emit("stdout", "x")
    assert copy.tool_call_id == "call_9"
    assert ctx.tool_call_id == "call_1"
    assert got == ["x"]
