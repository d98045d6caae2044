"""Load project tools from ``.agi/tools/<name>/tool.py`` and validate them.

A tool file is checked the way ``write_capability`` checks new code (seed 002): it must compile
(``syntax_error``), import (``import_error``) and define a tool (``missing_function``). It may
define either

* a ``Tool`` instance (for example made with ``@tool``): the one named ``tool``, else the one
  named like the folder, else the only one in the module; or
* capability-style, a sync or async function named like the folder (``-`` becomes ``_``) that
  takes ``params: dict`` (and optionally the ``ToolContext``) and returns a string. Its JSON
  schema comes from the capabilities table row, else a module-level ``PARAMETERS`` dict; its
  description from the row, else the module docstring.

Modules are imported from their file path under a unique name, so loading never touches
``sys.path`` and a reload always executes the current file.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import itertools
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agi_jupyter.errors import ToolError, UsageError
from agi_jupyter.records import JSON
from agi_jupyter.tools.base import AnyTool, Tool, ToolContext, ToolResult, clean_schema

TOOLS_DIRNAME = "tools"
TOOL_FILENAME = "tool.py"
PROMPT_FILENAME = "prompt.txt"
MODULE_PREFIX = "agi_project_tools"

LoadErrorKind = Literal["syntax_error", "import_error", "missing_function"]

_counter = itertools.count(1)


@dataclass
class ToolLoadError(Exception):
    """Why a tool file could not be loaded, in write_capability's structured form."""

    kind: LoadErrorKind
    message: str
    line: int | None = None
    offset: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"{self.kind}{where}: {self.message}"

    def to_dict(self) -> JSON:
        data: JSON = {"error": self.kind, "message": self.message}
        if self.kind == "syntax_error":
            data.update(line=self.line, offset=self.offset)
        return data


def function_name(folder: str) -> str:
    return folder.replace("-", "_")


def check_syntax(source: str, filename: str) -> None:
    """Raise ``ToolLoadError("syntax_error")`` with line and offset when ``source`` is invalid."""
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise ToolLoadError("syntax_error", e.msg, e.lineno, e.offset) from None
    except ValueError as e:  # NUL bytes
        raise ToolLoadError("syntax_error", str(e)) from None


def import_file(path: Path, label: str) -> ModuleType:
    """Execute ``path`` as a fresh module named ``agi_project_tools.<label>_<n>``.

    The source is compiled directly (no ``__pycache__``): a file rewritten within the same
    second with the same size must never run stale bytecode.
    """
    safe = "".join(c if c.isalnum() else "_" for c in label)
    name = f"{MODULE_PREFIX}.{safe}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ToolLoadError("import_error", f"cannot import {path.name}")
    module = importlib.util.module_from_spec(spec)
    # pydantic and dataclasses resolve annotations through sys.modules while the module runs;
    # afterwards it is removed again, so loading and reloading leave nothing behind.
    sys.modules[name] = module
    try:
        source = path.read_text(encoding="utf-8")
        exec(compile(source, str(path), "exec", dont_inherit=True), module.__dict__)
    except SyntaxError as e:
        raise ToolLoadError("syntax_error", e.msg, e.lineno, e.offset) from None
    except (Exception, SystemExit) as e:
        raise ToolLoadError("import_error", f"{type(e).__name__}: {e}") from None
    finally:
        sys.modules.pop(name, None)
    return module


def tool_from_module(
    module: ModuleType,
    folder: str,
    *,
    capability: Mapping[str, Any] | None = None,
) -> AnyTool:
    """The tool a loaded module defines (``missing_function`` when it defines none)."""
    fname = function_name(folder)
    for attr in ("tool", fname):
        candidate = getattr(module, attr, None)
        if isinstance(candidate, Tool):
            return candidate
    instances = [v for v in vars(module).values() if isinstance(v, Tool)]
    if len(instances) == 1:
        return instances[0]
    function = getattr(module, fname, None)
    if not callable(function):
        raise ToolLoadError(
            "missing_function",
            f"{TOOL_FILENAME} must define a function named {fname!r} taking params: dict "
            "and returning a string (or a module-level `tool` object)",
        )
    schema = (capability or {}).get("tool_schema") or getattr(module, "PARAMETERS", None)
    description = (capability or {}).get("description") or inspect.getdoc(module) or ""
    return CapabilityTool(folder, function, description=description, schema=schema)


def normalize_parameters_schema(schema: Any) -> JSON:
    """A JSON object schema from what a capability declares: a bare parameters schema or an
    OpenAI-style ``{"type": "function", "function": {"parameters": ...}}`` definition."""
    if schema is None:
        return {"type": "object", "properties": {}}
    if not isinstance(schema, Mapping):
        raise UsageError("the parameters schema must be a JSON object")
    if isinstance(schema.get("function"), Mapping):
        schema = schema["function"].get("parameters") or {}
    elif "parameters" in schema and schema.get("type") != "object":
        schema = schema["parameters"] or {}
    schema = dict(schema)
    schema.setdefault("type", "object")
    return clean_schema(schema)


class _AnyParams(BaseModel):
    model_config = ConfigDict(extra="allow")


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


class CapabilityTool(Tool[_AnyParams]):
    """A capability-style project tool: a function of a params dict, with a JSON schema."""

    parameters = _AnyParams

    def __init__(
        self,
        name: str,
        function: Callable[..., Any],
        *,
        description: str,
        schema: Any = None,
    ) -> None:
        self.name = name
        self.function = function
        self.description = description or f"Project tool {name}."
        self.schema = normalize_parameters_schema(schema)
        self.source = "project"
        self._takes_ctx = _positional_count(function) >= 2

    def json_schema(self) -> JSON:
        return self.schema

    def validate(self, arguments: Mapping[str, Any]) -> _AnyParams:
        problems = _check_arguments(self.schema, arguments)
        if problems:
            raise ToolError(f"invalid arguments for {self.name}: " + "; ".join(problems))
        return _AnyParams.model_validate(dict(arguments))

    async def execute(self, args: _AnyParams, ctx: ToolContext) -> ToolResult | str:
        params = args.model_dump()
        call_args: tuple[Any, ...] = (params, ctx) if self._takes_ctx else (params,)
        if inspect.iscoroutinefunction(self.function):
            result = await self.function(*call_args)
        else:
            result = await asyncio.to_thread(self.function, *call_args)
            if inspect.isawaitable(result):
                result = await result
        if isinstance(result, ToolResult | str):
            return result
        return json.dumps(result, default=str, ensure_ascii=False)


def _positional_count(function: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in params if p.kind in kinds)


def _check_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """A light check of the top level of a JSON schema: required keys, basic types, extras."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    problems = [
        f"{key}: field required" for key in schema.get("required", []) if key not in arguments
    ]
    for key, value in arguments.items():
        prop = properties.get(key)
        if prop is None:
            if schema.get("additionalProperties") is False:
                problems.append(f"{key}: unexpected argument")
            continue
        expected = prop.get("type") if isinstance(prop, Mapping) else None
        names = [expected] if isinstance(expected, str) else list(expected or [])
        if names and not any(_is_type(value, n) for n in names):
            problems.append(f"{key}: expected {' or '.join(names)}, got {type(value).__name__}")
    return problems


def _is_type(value: Any, name: str) -> bool:
    if name == "null":
        return value is None
    types = _JSON_TYPES.get(name)
    if types is None:
        return True
    if isinstance(value, bool) and name != "boolean":
        return False
    return isinstance(value, types)


def load_tool_folder(folder: Path, *, capability: Mapping[str, Any] | None = None) -> AnyTool:
    """Check and import ``folder/tool.py``; the tool it defines, its prompt.txt appended."""
    path = folder / TOOL_FILENAME
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ToolLoadError("import_error", f"cannot read {TOOL_FILENAME}: {e}") from None
    check_syntax(source, str(path))
    module = import_file(path, folder.name)
    try:
        loaded = tool_from_module(module, folder.name, capability=capability)
    except UsageError as e:
        raise ToolLoadError("missing_function", f"invalid PARAMETERS schema: {e}") from None
    loaded.source = "project"
    prompt_file = folder / PROMPT_FILENAME
    if prompt_file.is_file():
        extra = prompt_file.read_text(encoding="utf-8", errors="replace").strip()
        if extra:
            loaded.prompt = f"{loaded.prompt}\n\n{extra}" if loaded.prompt else extra
    return loaded
