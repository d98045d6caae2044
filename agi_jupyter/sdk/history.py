"""Canonical history: one SDK-agnostic transcript per session, built from history events.

Seed 003's merge rules, applied to the store's messages (the same rows the native runner
writes, so the simple and full views look the same whatever SDK ran a session):

- text chunks and thinking blocks collect in the current assistant message; tool calls are
  appended to it in order;
- a tool result is its own ``tool`` message; the assistant message holding the call is written
  first, so every stored conversation stays valid to send to any provider (a departure from the
  seed, which writes one assistant message per whole turn *after* its tool results);
- meta (provider, model, usage, stop reason) attaches to the current assistant message;
- ``TurnDone`` flushes the assistant message: thinking, then text, then tool calls.

Each history event also becomes the matching section-4 live event (``iteration`` when an
assistant message starts, text deltas, ``tool.call.*``, ``usage``, ``message.completed``), and
tool calls get their ``tool_calls`` rows, so the panel, the magic and replays need nothing
SDK-specific. Tool arguments, outputs and errors, and the agent's own text and thinking (an SDK
agent may hold secrets we handed it, such as an ACP agent's env), are redacted before they are
stored.

Nothing here calls the store on the runtime loop: each step of the history (an assistant
message with its tool-call rows, a tool result with its artifact, a user message taken into
the turn, usage) is one trip to the store thread, awaited, and its events are emitted after
it. A step runs whole under a cancellation (``aio.complete``), and steps run one at a time in
the order the adapter reported them; text chunks and tool calls, which store nothing yet, go
out at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from agi_jupyter import events as ev
from agi_jupyter.aio import complete
from agi_jupyter.providers.base import Usage
from agi_jupyter.providers.catalog import cost_usd
from agi_jupyter.records import (
    JSON,
    Artifact,
    Message,
    Part,
    ReasoningPart,
    Run,
    TextPart,
    ToolCallPart,
    ToolCallStatus,
    ToolResultPart,
    utc_now,
)
from agi_jupyter.run_state import UsageTotals
from agi_jupyter.run_state_codec import usage_to_json
from agi_jupyter.runtime.agent_loop import AttemptResult, add_turn_cost, message_to_dict
from agi_jupyter.sdk.base import (
    AssistantText,
    AssistantThinking,
    HistoryEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnMeta,
    UserInput,
)
from agi_jupyter.tools.base import ArtifactDraft
from agi_jupyter.tools.diffs import DIFF_KINDS

if TYPE_CHECKING:
    from agi_jupyter.records import RunFence
    from agi_jupyter.runtime.emitter import RunEmitter
    from agi_jupyter.store import Store
    from agi_jupyter.tools import Redactor, ToolOutcome

P = ParamSpec("P")
T = TypeVar("T")


class StoreCalls(Protocol):
    """Makes a store call off the runtime loop and awaits it (``RuntimeDeps.stored``)."""

    def __call__(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> Awaitable[T]: ...


# The meta every assistant message carries, whatever ran it (providers may add their own keys,
# such as the native runner's ``response_id``).
META_KEYS = frozenset({"provider", "model", "usage", "cost_usd", "stop_reason", "sdk"})


@dataclass
class _Draft:
    """The assistant message being assembled."""

    thinking: list[ReasoningPart] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    calls: list[ToolCallEvent] = field(default_factory=list)
    meta: TurnMeta | None = None

    def empty(self) -> bool:
        return not (self.thinking or self.text or self.calls)


# What stores nothing when it arrives (a tool call is stored with its message, at the flush).
_UNSTORED = (AssistantText, AssistantThinking, ToolCallEvent)


class CanonicalHistory:
    """Receives one run's history events (``await history(event)``) and writes history + live
    events.

    Used on the runtime loop only. ``result()`` gives the attempt's result for the run manager.
    """

    def __init__(
        self,
        store: Store,
        emitter: RunEmitter,
        run: Run,
        *,
        stored: StoreCalls,
        sdk: str,
        redactor: Redactor,
        max_iterations: int,
    ) -> None:
        self.store = store
        self.stored = stored
        self.emitter = emitter
        self.run = run
        self.sdk = sdk
        self.redactor = redactor
        self.max_iterations = max_iterations
        self.iterations = 0
        self.usage = UsageTotals()  # unknown (None) once a turn's tokens are not reported
        self.cost_usd: float | None = 0.0  # None once a turn's cost is unknown (add_turn_cost)
        self.final_text = ""
        self._draft: _Draft | None = None
        self._pending_meta: TurnMeta | None = None
        # (provider, model) the SDK's last answer says ran it (None: no answer named a model)
        self.reported: tuple[str | None, str | None] | None = None
        self._call_rows: dict[str, str] = {}  # tool_call_id -> tool_calls row id
        self._call_names: dict[str, str] = {}
        self._outcomes: dict[str, ToolOutcome] = {}  # results of our own tools, by call id
        self._answered: set[str] = set()
        self._steps = asyncio.Lock()  # one step at a time, in the order they were reported
        self._waiting = 0  # steps asked for and not done (a chunk then waits behind them)

    # --- intake ------------------------------------------------------------------------------

    async def __call__(self, event: HistoryEvent) -> None:
        if self._waiting == 0 and isinstance(event, _UNSTORED):
            await self._handle(event)  # the per-token path: stores nothing, never waits
            return
        await self._step(self._handle, event)

    def record_outcome(self, outcome: ToolOutcome) -> None:
        """Remember what one of our own tools did, for its ``tool_calls`` row and artifact."""
        self._outcomes[outcome.tool_call_id] = outcome

    async def flush(self) -> None:
        """Write the assistant message being assembled (if any)."""
        await self._step(self._flush)

    async def result(self) -> AttemptResult:
        await self.flush()
        return AttemptResult(
            self.final_text, usage_to_json(self.usage), self.cost_usd, max(self.iterations, 1)
        )

    async def _step(
        self, fn: Callable[P, Awaitable[None]], /, *args: P.args, **kwargs: P.kwargs
    ) -> None:
        """``fn`` after the steps before it, whole even when the task is cancelled meanwhile
        (the cancellation is delivered after it)."""
        self._waiting += 1
        try:
            await complete(self._serially(fn(*args, **kwargs)))
        finally:
            self._waiting -= 1

    async def _serially(self, work: Awaitable[None]) -> None:
        async with self._steps:
            await work

    async def _handle(self, event: HistoryEvent) -> None:
        if isinstance(event, AssistantText | AssistantThinking):
            self._take(event)
        elif isinstance(event, ToolCallEvent):
            self._tool_call(event)
        elif isinstance(event, ToolResultEvent):
            await self._tool_result(event)
        elif isinstance(event, TurnMeta):
            await self._meta(event)
        elif isinstance(event, UserInput):
            await self._flush()
            message = await self.stored(
                self.store.add_message,
                self.run.session_id,
                "user",
                [TextPart(text=event.text)],
                run_id=self.run.id,
                fence=self.emitter.fence,
            )
            self.emitter.emit(ev.MessageCompleted(message=message_to_dict(message)))
        elif isinstance(event, TurnDone):
            await self._flush()

    def _take(self, event: AssistantText | AssistantThinking) -> None:
        if isinstance(event, AssistantText):
            if event.text:
                self._current().text.append(event.text)
                # Per chunk for the live view; the stored text is redacted whole (flush).
                self.emitter.emit(ev.TextDelta(delta=self.redactor.redact_text(event.text)))
            return
        text = self.redactor.redact_text(event.text)
        self._current().thinking.append(ReasoningPart(text=text, signature=event.signature))
        self.emitter.emit(ev.ReasoningDone(text=text))

    # --- assembling --------------------------------------------------------------------------

    def _current(self) -> _Draft:
        if self._draft is None:
            self._draft = _Draft()
            self.iterations += 1
            self.emitter.emit(
                ev.Iteration(
                    iteration=self.iterations,
                    max_iterations=max(self.max_iterations, self.iterations),
                )
            )
        return self._draft

    def _tool_call(self, event: ToolCallEvent) -> None:
        arguments = self.redactor.redact_json(event.arguments)
        call = ToolCallEvent(
            id=event.id, name=event.name, arguments=arguments, tool_type=event.tool_type
        )
        self._current().calls.append(call)
        self._call_names[event.id] = event.name
        self.emitter.emit(
            ev.ToolCallStarted(tool_call_id=event.id, name=event.name, tool_type=event.tool_type)
        )
        self.emitter.emit(ev.ToolCallArgumentsDone(tool_call_id=event.id, arguments=arguments))

    async def _tool_result(self, event: ToolResultEvent) -> None:
        if event.id not in self._call_names:
            # A result whose call was never reported: record the call, so history stays valid.
            self._tool_call(ToolCallEvent(id=event.id, name=event.name))
        if event.id not in self._call_rows:
            await self._flush()
        name = self._call_names.get(event.id, event.name)
        outcome = self._outcomes.pop(event.id, None)
        # Our own tool's output as it produced it (the SDK's copy may be wrapped or trimmed).
        output = outcome.output if outcome is not None else self.redactor.redact_text(event.output)
        artifact = outcome.artifact if outcome is not None else None
        draft = None
        if artifact is None and event.artifact is not None:
            draft = self._redacted(event.artifact)
        ok = not event.is_error
        status = outcome.status if outcome is not None else _status(event)
        result: Any = outcome.result if outcome is not None else (event.result or output)
        if isinstance(result, dict):
            result = self.redactor.redact_json(result)
        row = self._call_rows.get(event.id)
        change: JSON | None = None
        if row is not None and event.id not in self._answered:
            change = {
                "status": status,
                "result": result,
                "is_error": not ok,
                "started_at": outcome.started_at if outcome is not None else None,
            }
        self._answered.add(event.id)
        part = ToolResultPart(
            tool_call_id=event.id, name=name, output=output, is_error=not ok, status=status
        )
        artifact = await self.stored(self._write_result, part, artifact, draft, row, change)
        summary: JSON | None = None
        if artifact is not None:
            summary = {
                "id": artifact.id,
                "kind": artifact.kind,
                "title": artifact.title,
                "size": artifact.size,
            }
            if artifact.kind in DIFF_KINDS and artifact.data:
                summary["summary"] = artifact.data.get("summary")
        self.emitter.emit(
            ev.ToolCallOutput(
                tool_call_id=event.id,
                name=name,
                ok=ok,
                output=output,
                status=status,
                artifact=summary,
            )
        )

    def _redacted(self, draft: ArtifactDraft) -> ArtifactDraft:
        return replace(
            draft,
            data=self.redactor.redact_json(draft.data) if draft.data else None,
            text=self.redactor.redact_text(draft.text) if draft.text else None,
        )

    def _write_result(
        self,
        part: ToolResultPart,
        artifact: Artifact | None,
        draft: ArtifactDraft | None,
        row: str | None,
        change: JSON | None,
    ) -> Artifact | None:
        """A tool's result in one trip (store thread): the artifact the SDK reported, the
        call's row, the ``tool`` message."""
        store, fence = self.store, self.emitter.fence
        if draft is not None:
            artifact = store.create_artifact(
                draft.kind,
                run_id=self.run.id,
                session_id=self.run.session_id,
                title=draft.title,
                mime=draft.mime,
                data=draft.data,
                text=draft.text,
            )
        if artifact is not None:
            part.artifact_id = artifact.id
        if row is not None and change is not None:
            store.update_tool_call(row, finished_at=utc_now(), fence=fence, **change)
        store.add_message(self.run.session_id, "tool", [part], run_id=self.run.id, fence=fence)
        return artifact

    async def _meta(self, meta: TurnMeta) -> None:
        tokens = meta.tokens
        cost = meta.cost_usd
        if cost is None and tokens is not None:
            usage = Usage(input_tokens=tokens[0], output_tokens=tokens[1])
            cost = cost_usd(meta.provider or "", meta.model or "", usage)
        self.usage = self.usage.add(tokens)
        self.cost_usd = add_turn_cost(self.cost_usd, cost)
        stamped = replace(meta, cost_usd=cost)
        if self._draft is not None and not self._draft.empty():
            self._draft.meta = stamped
        else:
            self._pending_meta = stamped  # usage reported before any content: keep it for later
        if meta.model:
            self.reported = (meta.provider or self.run.provider, meta.model)
        if tokens is None and cost is None:
            return  # nothing measured: the session's totals stay as they are
        await self.stored(
            self.store.add_session_usage,
            self.run.session_id,
            input_tokens=tokens[0] if tokens else 0,
            output_tokens=tokens[1] if tokens else 0,
            cost_usd=cost or 0.0,
            fence=self.emitter.fence,
        )
        if tokens is not None:
            self.emitter.emit(
                ev.UsageEvent(input_tokens=tokens[0], output_tokens=tokens[1], cost_usd=cost)
            )

    async def _flush(self) -> None:
        draft, self._draft = self._draft, None
        if draft is None or draft.empty():
            return
        # An SDK agent knows secrets we gave it (an ACP agent's env): none is stored.
        text = self.redactor.redact_text("".join(draft.text))
        if text:
            self.emitter.emit(ev.TextDone(text=text))
            self.final_text = text
        parts: list[Part] = [*draft.thinking]
        if text:
            parts.append(TextPart(text=text))
        parts.extend(
            ToolCallPart(tool_call_id=c.id, name=c.name, arguments=c.arguments) for c in draft.calls
        )
        meta = draft.meta or self._pending_meta
        self._pending_meta = None
        message, rows = await self.stored(
            _write_assistant,
            self.store,
            self.run,
            parts,
            self._meta_dict(meta),
            draft.calls,
            self.emitter.fence,
        )
        self._call_rows.update(rows)
        self.emitter.emit(ev.MessageCompleted(message=message_to_dict(message)))

    def _meta_dict(self, meta: TurnMeta | None) -> JSON:
        """The same keys as the native runner's assistant meta, plus ``sdk``."""
        data: JSON = {
            "provider": self.run.provider,
            "model": self.run.model,
            "usage": {"input_tokens": 0, "output_tokens": 0},
            "cost_usd": None,
            "stop_reason": None,
            "sdk": self.sdk,
        }
        if meta is not None:
            data.update(
                provider=meta.provider or self.run.provider,
                model=meta.model or self.run.model,
                usage=None
                if meta.tokens is None
                else {"input_tokens": meta.input_tokens, "output_tokens": meta.output_tokens},
                cost_usd=meta.cost_usd,
                stop_reason=meta.stop_reason,
            )
            data.update(meta.extra)
        return data


def _write_assistant(
    store: Store,
    run: Run,
    parts: list[Part],
    meta: JSON,
    calls: list[ToolCallEvent],
    fence: RunFence | None,
) -> tuple[Message, dict[str, str]]:
    """An assistant message and its calls' ``tool_calls`` rows in one trip (store thread);
    the rows by call id."""
    message = store.add_message(
        run.session_id, "assistant", parts, run_id=run.id, meta=meta, fence=fence
    )
    rows = {}
    for call in calls:
        row = store.create_tool_call(
            run.id,
            call.id,
            call.name,
            call.arguments,
            message_id=message.id,
            status="running",
            fence=fence,
        )
        rows[call.id] = row.id
    return message, rows


def _status(event: ToolResultEvent) -> ToolCallStatus:
    """The status of a call whose result the SDK reported (not one of our own tools)."""
    if event.denied:
        return "denied"
    return "failed" if event.is_error else "completed"
