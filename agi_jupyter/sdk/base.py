"""The agent-SDK adapter interface (seed 003, DESIGN.md section 10).

A session's ``sdk`` names the adapter that executes its ``agent`` runs: ``native`` (our own loop,
``runtime.agent_loop``), ``claude`` (the Claude Agent SDK) or ``codex`` (``codex exec --json``).
An adapter turns one run into SDK calls and reports what happens as ``HistoryEvent``s; the
runtime (``sdk.history.CanonicalHistory``) turns those into the section-4 live events and the
session's canonical history in the store, by one set of merge rules for every SDK. Queueing and
interrupts belong to the runtime too (``runtime.runs``), which consults the adapter's
``SdkCapabilities`` and falls back per seed 003's matrix.

Nothing here imports an SDK: adapters import theirs lazily, inside ``run``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agi_jupyter.errors import SdkModelMismatch
from agi_jupyter.records import JSON, Run, Session
from agi_jupyter.tools.base import ArtifactDraft

if TYPE_CHECKING:
    from agi_jupyter.agents import Agent
    from agi_jupyter.config import Config
    from agi_jupyter.events import Event
    from agi_jupyter.runtime.agent_loop import AttemptResult
    from agi_jupyter.runtime.emitter import RunEmitter
    from agi_jupyter.tools import AnyTool, ToolOutcome


@dataclass(frozen=True)
class SdkCapabilities:
    """What an SDK can do while a run streams (seed 003)."""

    queue_while_streaming: bool = False  # accepts another user message into the running turn
    interrupt: bool = False  # can stop the running turn cleanly so a new one starts
    tool_events: bool = False  # reports tool calls and results
    full_history: bool = False  # reports thinking, tool calls and results for the full view

    def to_dict(self) -> dict[str, bool]:
        return {
            "queue_while_streaming": self.queue_while_streaming,
            "interrupt": self.interrupt,
            "tool_events": self.tool_events,
            "full_history": self.full_history,
        }


@dataclass(frozen=True)
class DisplayModel:
    """The provider and model a session's runs are shown as using."""

    provider: str | None
    model: str | None

    @property
    def label(self) -> str:
        if self.provider and self.model:
            return f"{self.provider}:{self.model}"
        return self.model or self.provider or "unknown"


# --- canonical history events (seed 003's HistoryEvent) ------------------------------------


@dataclass(kw_only=True)
class AssistantText:
    """A chunk of the assistant's answer (a streamed delta, or a whole block at once)."""

    text: str


@dataclass(kw_only=True)
class AssistantThinking:
    """A complete thinking / reasoning block."""

    text: str
    signature: str | None = None


@dataclass(kw_only=True)
class ToolCallEvent:
    """The model called a tool. ``name`` is the tool's name as the user should see it."""

    id: str
    name: str
    arguments: JSON = field(default_factory=dict)
    tool_type: str = "function"  # function | shell | file_change | mcp | web_search | todo_list


@dataclass(kw_only=True)
class ToolResultEvent:
    """A tool's result (``artifact`` is stored and referenced, e.g. a ``file_diff``);
    ``denied``: the call was refused before it ran (stored with status ``denied``)."""

    id: str
    name: str
    output: str
    is_error: bool = False
    denied: bool = False
    artifact: ArtifactDraft | None = None
    result: JSON | None = None  # structured result for ``tool_calls.result`` (default: output)


@dataclass(kw_only=True)
class TurnMeta:
    """Model meta of the current assistant message: what ran it and what it cost. Tokens the
    SDK did not report are None (unknown, never 0: the run's usage then says unknown)."""

    provider: str | None = None
    model: str | None = None
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cost_usd: float | None = None
    stop_reason: str | None = None
    extra: JSON = field(default_factory=dict)

    @property
    def tokens(self) -> tuple[int, int] | None:
        """(input, output) tokens; None when the SDK did not report them."""
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens, self.output_tokens


@dataclass(kw_only=True)
class UserInput:
    """A user message the SDK took into the running turn (one queued while streaming); it is
    stored when the SDK starts on it, so history keeps conversation order."""

    text: str


@dataclass(kw_only=True)
class TurnDone:
    """The SDK finished answering one user message (flushes the assistant message)."""


HistoryEvent = (
    AssistantText
    | AssistantThinking
    | ToolCallEvent
    | ToolResultEvent
    | TurnMeta
    | UserInput
    | TurnDone
)


# --- what a run gets -------------------------------------------------------------------------


ToolRunner = Callable[[str, str, JSON], Awaitable["ToolOutcome"]]


@dataclass
class SdkRunParams:
    """Everything an adapter needs for one attempt of one run.

    ``on_history`` records canonical history and emits the matching live events (awaited:
    what it stores is written on the store thread, and the events that follow a write are
    emitted once it is made); ``on_event`` emits extra live events that have no history
    (``tool.call.delta`` chunks).
    ``call_tool(tool_call_id, name, arguments)`` runs one of *our* tools with the agent's
    gating, path confinement, redaction and artifacts (the claude adapter exposes them over
    MCP); ``tools`` are the ones offered. ``state`` is the adapter's saved session state
    (e.g. the SDK's own session or thread id, for resuming) and ``save_state`` replaces it
    (awaited, on the store thread).
    ``on_handle`` publishes the live handle that ``queue_message`` / ``abort`` act on.
    ``emitter`` is the run's emitter, for the native adapter, which writes history itself.
    ``result()`` flushes the history and gives what ``run`` returns (text, usage, cost, turns).
    Nothing here calls the store on the runtime loop, which runs every agent of the process.
    """

    run: Run
    session: Session
    agent: Agent
    config: Config
    project: Path
    prompt: str
    system_prompt: str
    tools: list[AnyTool]
    max_turns: int
    on_history: Callable[[HistoryEvent], Awaitable[None]]
    on_event: Callable[[Event], object]
    call_tool: ToolRunner
    state: JSON
    save_state: Callable[[JSON], Awaitable[None]]
    on_handle: Callable[[object], None]
    emitter: RunEmitter
    result: Callable[[], Awaitable[AttemptResult]]


class SdkAdapter(ABC):
    """One agent SDK behind the runtime. Subclasses keep all SDK-specific code."""

    id: str
    display_name: str
    capabilities: SdkCapabilities
    install_hint: str = ""
    listed: bool = True  # shown in ``agi sdks``; False for internal adapters (``external``)
    providers: frozenset[str] | None = None
    """The model providers the SDK can run (None: any)."""

    def check_model(self, provider: str, model: str) -> None:
        """``SdkModelMismatch`` when this SDK cannot run ``provider:model``."""
        if self.providers is not None and provider not in self.providers:
            runs = " or ".join(f"{p}:<model>" for p in sorted(self.providers))
            raise SdkModelMismatch(
                f"the {self.id} SDK cannot run {provider}:{model}; it runs {runs} models"
            )

    @abstractmethod
    def resolve_display_model(self, session: Session) -> DisplayModel:
        """What the UI shows as the model of this session's runs."""

    @abstractmethod
    def check_available(self) -> None:
        """Raise ``SdkNotAvailable`` (with the install command) when the SDK is missing."""

    async def execute(
        self, run: Run, emitter: RunEmitter, prepare: Callable[[], SdkRunParams]
    ) -> AttemptResult:
        """Run one attempt; ``prepare`` builds the params (lazily, so an adapter that needs
        none of them, like ``native``, costs nothing extra)."""
        return await self.run(prepare())

    @abstractmethod
    async def run(self, params: SdkRunParams) -> AttemptResult:
        """Execute one attempt of ``params.run``; report through ``params.on_history``.

        Raise ``AgiError`` subclasses for failures (``retryable`` ones are retried by the
        runtime); ``asyncio.CancelledError`` means the run was cancelled: stop the SDK."""

    async def queue_message(self, handle: object, text: str) -> None:
        """Deliver ``text`` into the running turn (only with ``queue_while_streaming``)."""
        raise NotImplementedError(f"{self.id} cannot take messages while streaming")

    async def abort(self, handle: object) -> None:
        """Stop the running turn cleanly (only with ``interrupt``)."""
        raise NotImplementedError(f"{self.id} cannot interrupt a running turn")

    async def aclose(self) -> None:  # noqa: B027 - most adapters keep nothing between runs
        """Release what the adapter keeps between runs (agent processes); the runtime closes."""

    def describe(self) -> dict[str, Any]:
        available, reason = True, None
        try:
            self.check_available()
        except Exception as e:
            available, reason = False, str(e)
        return {
            "id": self.id,
            "display_name": self.display_name,
            "capabilities": self.capabilities.to_dict(),
            "available": available,
            "reason": reason,
        }
