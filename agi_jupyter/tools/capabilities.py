"""``write_capability`` and ``reload``: the agent extends its own tools (seed 002).

write_capability validates new code before anything is registered:

1. syntax  -- ``compile``; on failure ``{"error": "syntax_error", "message", "line", "offset"}``
2. import  -- the file is written to ``.agi/tools/<name>/tool.py`` and imported; on failure
   the file is removed (or its previous version restored) and ``{"error": "import_error"}``
3. callable -- the module must define ``<name>`` (or a ``tool``); else the file is removed
   and ``{"error": "missing_function"}``

Then the capability is stored (``store.upsert_capability``) and the registry reloads its
project tools, so the new tool is offered from the agent's next turn.
"""

from __future__ import annotations

import asyncio
import json
import keyword
import re
from pathlib import Path
from typing import Any

from pydantic import Field

from agi_jupyter.config import PROJECT_DIRNAME
from agi_jupyter.errors import ToolError, UsageError
from agi_jupyter.records import JSON
from agi_jupyter.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from agi_jupyter.tools.loader import (
    TOOL_FILENAME,
    TOOLS_DIRNAME,
    ToolLoadError,
    check_syntax,
    import_file,
    normalize_parameters_schema,
    tool_from_module,
)

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

CAPABILITY_PROMPT = """\
write_capability adds a tool you can call from your next turn. The code must define a function
named like the capability (async or sync) that takes `params: dict` and returns a string:

    async def word_count(params: dict) -> str:
        return str(len(params["text"].split()))

Pass its JSON schema as parameters_schema. On a structured error (syntax_error with line and
offset, import_error, missing_function), fix the code and call write_capability again."""


class WriteCapabilityArgs(ToolArgs):
    name: str = Field(description="snake_case name; becomes the tool and function name.")
    description: str = Field(min_length=1, description="What the tool does, shown to you.")
    code: str = Field(description="Full Python source of the module (tool.py).")
    parameters_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON schema of the tool's parameters (an object schema).",
    )


def _failure(error: JSON) -> ToolResult:
    return ToolResult(output=json.dumps(error, ensure_ascii=False), ok=False, data=error)


class WriteCapability(Tool[WriteCapabilityArgs]):
    name = "write_capability"
    description = (
        "Write a new tool for yourself as Python code in .agi/tools/<name>/tool.py. The code is "
        "checked (syntax, import, function present) before it is registered; structured errors "
        "tell you what to fix. The tool is available from your next turn."
    )
    parameters = WriteCapabilityArgs
    prompt = CAPABILITY_PROMPT

    async def execute(self, args: WriteCapabilityArgs, ctx: ToolContext) -> ToolResult:
        problem = self._check_name(args.name, ctx)
        if problem is not None:
            return _failure({"error": "invalid_name", "message": problem})
        try:
            schema = normalize_parameters_schema(args.parameters_schema)
        except UsageError as e:
            return _failure({"error": "invalid_schema", "message": e.message})
        folder = ctx.project / PROJECT_DIRNAME / TOOLS_DIRNAME / args.name
        rel_path = f"{PROJECT_DIRNAME}/{TOOLS_DIRNAME}/{args.name}/{TOOL_FILENAME}"
        try:
            check_syntax(args.code, rel_path)
            await asyncio.to_thread(_write_and_check, folder, args, schema)
        except ToolLoadError as e:
            return _failure(e.to_dict())
        ctx.store.upsert_capability(
            args.name, description=args.description, file_path=rel_path, tool_schema=schema
        )
        return self._register(args.name, rel_path, ctx)

    @staticmethod
    def _check_name(name: str, ctx: ToolContext) -> str | None:
        if not NAME_PATTERN.match(name) or keyword.iskeyword(name):
            return (
                f"{name!r} is not a valid capability name: use a snake_case Python identifier "
                "(lowercase letters, digits, underscores; starting with a letter)"
            )
        existing = ctx.registry.get(name) if ctx.registry else None
        if existing is not None and existing.source != "project":
            return f"{name!r} is the name of a built-in tool; choose another name"
        return None

    @staticmethod
    def _register(name: str, rel_path: str, ctx: ToolContext) -> ToolResult:
        message = f"capability {name} is registered and available from your next turn"
        if ctx.registry is not None:
            report = ctx.registry.load_project_tools(ctx.project, store=ctx.store)
            if name not in report.loaded:
                reason = report.errors.get(name, "it was not loaded")
                return _failure({"error": "import_error", "message": reason})
        data: JSON = {"ok": True, "name": name, "file_path": rel_path, "message": message}
        return ToolResult(output=json.dumps(data), data=data)


def _write_and_check(folder: Path, args: WriteCapabilityArgs, schema: JSON) -> None:
    """Write tool.py and import it; on failure restore the previous file (or remove it)."""
    path = folder / TOOL_FILENAME
    previous = path.read_bytes() if path.is_file() else None
    created_folder = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(args.code, encoding="utf-8")
    try:
        module = import_file(path, args.name)
        capability = {"description": args.description, "tool_schema": schema}
        tool_from_module(module, args.name, capability=capability)
    except ToolLoadError:
        if previous is None:
            path.unlink(missing_ok=True)
            if created_folder:
                _remove_empty(folder)
        else:
            path.write_bytes(previous)
        raise


def _remove_empty(folder: Path) -> None:
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


class ReloadArgs(ToolArgs):
    pass


class Reload(Tool[ReloadArgs]):
    name = "reload"
    description = (
        "Re-scan the project tools in .agi/tools/ and load them again; reports which loaded and "
        "why others were skipped."
    )
    parameters = ReloadArgs

    async def execute(self, args: ReloadArgs, ctx: ToolContext) -> ToolResult:
        if ctx.registry is None:
            raise ToolError("reload is not available here: this context has no tool registry")
        report = ctx.registry.load_project_tools(ctx.project, store=ctx.store)
        data: JSON = {"loaded": report.loaded, "skipped": report.errors, "removed": report.removed}
        return ToolResult(output=json.dumps(data, ensure_ascii=False), data=data)
