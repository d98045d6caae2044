"""What a tool is: a name, a description, a pydantic model of its arguments and ``execute``.

    Tool[P]          subclass it (``parameters = MyArgs``, ``async def execute(self, args, ctx)``)
    FunctionTool     a Tool made from a plain (sync or async) function by ``@tool(...)``
    ToolResult       what ``execute`` may return besides a plain string
    ArtifactDraft    an artifact a tool wants stored with its result (the executor persists it)
    ImageDraft       an image a tool shows the model (a cell's plot; stored as an artifact)
    ToolContext      what a call gets: project root, store, config, ids, ``emit`` for live chunks

Tools raise ``ToolError`` (or return ``ToolResult(ok=False)``) for problems the model should see;
the executor turns every failure into a tool result, so nothing a tool does stops the run.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict

from agi_jupyter.errors import UsageError
from agi_jupyter.kinds import ToolTrait, Verdict
from agi_jupyter.providers.base import ToolSpec
from agi_jupyter.records import JSON

if TYPE_CHECKING:
    from agi_jupyter.config import Config
    from agi_jupyter.store import Store
    from agi_jupyter.tools.redact import Redactor
    from agi_jupyter.tools.registry import ToolRegistry

P = TypeVar("P", bound=BaseModel)

Emit = Callable[[str, str], None]
"""``emit(channel, chunk)``: a live chunk (channel ``stdout``/``stderr``/``patch``) of a call."""

FEATURE_KERNEL = "kernel"


def _discard(channel: str, chunk: str) -> None:
    """The default ``emit``: nobody is listening."""


class ToolArgs(BaseModel):
    """Base of the built-in tools' argument models: unknown arguments are an error."""

    model_config = ConfigDict(extra="forbid")


@dataclass(kw_only=True)
class ArtifactDraft:
    """An artifact a tool produced (a file diff, a report); stored by the executor."""

    kind: str
    title: str | None = None
    mime: str | None = None
    data: JSON | None = None
    text: str | None = None


@dataclass(frozen=True, kw_only=True)
class ImageDraft:
    """An image a tool's result shows (PNG or JPEG bytes); stored as an ``image`` artifact and
    sent to models that read images, after the result's text."""

    mime: str
    content: bytes
    title: str | None = None


@dataclass(kw_only=True)
class ToolResult:
    """The result of a call. ``output`` is what the model sees; ``data`` is structured JSON
    stored with the call; ``ok=False`` marks a failure the tool reports without raising;
    ``images`` are what the call showed (a cell's plots)."""

    output: str
    ok: bool = True
    data: JSON | None = None
    artifact: ArtifactDraft | None = None
    images: list[ImageDraft] = field(default_factory=list)


@dataclass(kw_only=True)
class ToolContext:
    """What one tool call may use. The runner builds one per run and ``for_call`` per call.

    ``agent`` names the agent in refusals ("not available to agent 'plan'"). ``features`` are
    what the front door provides (``{"kernel"}`` in a notebook); tools whose ``requires`` is
    not met are neither offered nor run. ``read_only`` is set for agents that may only read
    (``plan``): tools offered to them (``Tool.read_only``) refuse the parts of their job that
    would write (sql.query on the data database, tasks create/update/delete), and the executor
    denies the others. ``extras`` carries front-door objects a tool needs (for example the
    kernel's shell for the notebook ``python`` tool).
    """

    project: Path
    store: Store
    config: Config
    session_id: str | None = None
    run_id: str | None = None
    tool_call_id: str = ""
    agent: str | None = None
    emit: Emit = _discard
    registry: ToolRegistry | None = None
    features: frozenset[str] = frozenset()
    read_only: bool = False
    extras: dict[str, Any] = field(default_factory=dict)
    turn: int | None = None
    """The run's model turn (iteration) the call belongs to, when the runner knows it."""
    redactor: Redactor | None = None
    """The project's redactor (set by the executor), for what a tool writes outside the store:
    the outputs ``notebook.run`` puts into the notebook."""
    park: Callable[[str], bool] | None = None
    """Given by a runner that can park its run on this call (the native loop): called with an
    execution handle, it says whether the run will wait for that execution with no owner
    (``notebook.wait {park: true}``); the call's row then stays open and its answer is the
    execution's, once the run resumes. None: the call must answer now."""

    def for_call(self, tool_call_id: str, *, emit: Emit | None = None) -> ToolContext:
        """A copy for one call, with its id and (optionally) its own ``emit``."""
        return replace(self, tool_call_id=tool_call_id, emit=emit or self.emit)


class Tool(ABC, Generic[P]):
    """Base class of every tool. Subclasses set the class attributes and ``execute``."""

    name: str = ""
    description: str = ""
    parameters: type[P]
    read_only: bool = False
    trait: ToolTrait = ToolTrait.SHELL
    """What its calls do, for review (``kinds.ToolTrait``): ``read``, ``edit`` (files or
    notebook cells, each change recorded: review mode ``auto-edit`` lets these through) or
    ``shell`` (commands, code, anything else: the default)."""
    default_verdict: Verdict = Verdict.ALLOW
    """The policy's verdict for its calls when no agent or session rule names it
    (``tools.policy``): ``allow`` for our own tools, whose agents' rules say what asks;
    ``ask`` for the tools of MCP servers that may change things."""
    in_order: bool = False
    """Calls of this tool in one model turn run one after another, in the order the model made
    them, not concurrently: edits of files and notebooks, whose changes are applied, recorded
    and undone in that order."""
    requires: frozenset[str] = frozenset()
    prompt: str | None = None
    source: str = "builtin"
    """``builtin``, ``project`` (loaded from ``.agi/tools/``) or ``mcp:<server>``."""

    @abstractmethod
    async def execute(self, args: P, ctx: ToolContext) -> ToolResult | str:
        """Run the tool; raise ``ToolError`` (or return ``ok=False``) for what the model should
        see."""

    async def preview(self, args: P, ctx: ToolContext) -> str | None:
        """What the call would change, as a unified diff, computed without changing anything
        (shown with the approval question of a call that waits for a person); None: the tool
        changes no file or notebook cell, or cannot tell."""
        return None

    def validate(self, arguments: Mapping[str, Any]) -> P:
        """Parse the model's arguments (raises ``pydantic.ValidationError``)."""
        return self.parameters.model_validate(dict(arguments))

    def json_schema(self) -> JSON:
        return model_schema(self.parameters)

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.json_schema())

    def call_timeout(self, args: P, default: float) -> float:
        """The deadline of one call; tools with their own timeout argument may extend it."""
        return default

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


AnyTool = Tool[Any]


# --- JSON schema for the model APIs ----------------------------------------------------------


_schemas: weakref.WeakKeyDictionary[type[BaseModel], JSON] = weakref.WeakKeyDictionary()


def model_schema(model: type[BaseModel]) -> JSON:
    """The JSON schema of ``model`` as model APIs like it: references inlined, no titles,
    ``additionalProperties: false`` on every object.

    Made once per model class and shared (do not modify it): pydantic builds a schema in
    ~0.5 ms, and every model turn offers every tool's schema (a reloaded tool is a new class,
    so it gets its own)."""
    schema = _schemas.get(model)
    if schema is None:
        schema = _schemas[model] = clean_schema(model.model_json_schema())
    return schema


def clean_schema(schema: Mapping[str, Any]) -> JSON:
    raw = copy.deepcopy(dict(schema))
    defs: dict[str, Any] = raw.pop("$defs", {})
    cleaned = _clean(raw, defs, depth=0)
    assert isinstance(cleaned, dict)
    if cleaned.get("type") != "object":
        raise UsageError("a tool's parameters must be a JSON object schema")
    cleaned.setdefault("properties", {})
    return cleaned


def _clean(node: Any, defs: Mapping[str, Any], depth: int) -> Any:
    if isinstance(node, list):
        return [_clean(item, defs, depth) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < 20:
        target = defs.get(ref.removeprefix("#/$defs/"), {})
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _clean(merged, defs, depth + 1)
    out: JSON = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _clean(sub, defs, depth) for name, sub in value.items()}
        else:
            out[key] = _clean(value, defs, depth)
    if out.get("type") == "object" and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


# --- tools from functions --------------------------------------------------------------------

ToolFunction = Callable[..., "ToolResult | str | Awaitable[ToolResult | str]"]


class FunctionTool(Tool[Any]):
    """A tool made from a function ``f(args: Model)`` or ``f(args: Model, ctx: ToolContext)``.

    Async functions are awaited; sync ones run in a worker thread so they cannot block the loop.
    """

    def __init__(
        self,
        function: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: type[BaseModel] | None = None,
        read_only: bool = False,
        trait: ToolTrait | None = None,
        requires: frozenset[str] | set[str] | tuple[str, ...] = (),
        prompt: str | None = None,
    ) -> None:
        self.function = function
        self.name = name or function.__name__
        self.description = description or inspect.cleandoc(function.__doc__ or "") or self.name
        self.parameters = parameters or _parameters_of(function)
        self.read_only = read_only
        self.trait = trait or (ToolTrait.READ if read_only else ToolTrait.SHELL)
        self.requires = frozenset(requires)
        self.prompt = prompt
        self._takes_ctx = len(inspect.signature(function).parameters) >= 2

    async def execute(self, args: Any, ctx: ToolContext) -> ToolResult | str:
        call_args = (args, ctx) if self._takes_ctx else (args,)
        if inspect.iscoroutinefunction(self.function):
            result = await self.function(*call_args)
        else:
            result = await asyncio.to_thread(self.function, *call_args)
            if inspect.isawaitable(result):
                result = await result
        if not isinstance(result, ToolResult | str):
            raise TypeError(f"tool {self.name} returned {type(result).__name__}, not str")
        return result


def _parameters_of(function: Callable[..., Any]) -> type[BaseModel]:
    params = list(inspect.signature(function).parameters.values())
    hints = get_type_hints(function) if params else {}
    model = hints.get(params[0].name) if params else None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise UsageError(
            f"tool function {function.__name__} must take a pydantic model as its first argument"
        )
    return model


def tool(
    name: str | None = None,
    *,
    description: str | None = None,
    read_only: bool = False,
    trait: ToolTrait | None = None,
    requires: frozenset[str] | set[str] | tuple[str, ...] = (),
    prompt: str | None = None,
) -> Callable[[ToolFunction], FunctionTool]:
    """Decorator: ``@tool("weather", read_only=True)`` over ``def weather(args: WeatherArgs)``."""

    def wrap(function: ToolFunction) -> FunctionTool:
        return FunctionTool(
            function,
            name=name,
            description=description,
            read_only=read_only,
            trait=trait,
            requires=requires,
            prompt=prompt,
        )

    return wrap
