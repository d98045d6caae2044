"""The live event vocabulary (DESIGN.md section 4). Imports nothing from the package but its
named kinds (``kinds``).

Every consumer — the magic's display, the chat widget, NDJSON and SSE responses, the side panel,
replay from the store — sees these same events. Each is a dataclass with a literal ``type``; on
the wire it is a flat JSON object with ``type``, ``run_id``, ``seq`` (per run, increasing) and
``ts`` plus its payload. ``seq`` and ``ts`` are stamped by the run's emitter, not by producers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from agi_jupyter.kinds import DecisionDoor, ReviewMode

JSON = dict[str, Any]


@dataclass(kw_only=True)
class BaseEvent:
    run_id: str = ""
    seq: int = 0
    ts: str = ""


@dataclass(kw_only=True)
class RunMeta(BaseEvent):
    """Always the first event of a run."""

    session_id: str
    agent: str
    provider: str
    model: str
    attempt: int = 1
    type: Literal["run.meta"] = "run.meta"


@dataclass(kw_only=True)
class RunStatusEvent(BaseEvent):
    status: str
    type: Literal["run.status"] = "run.status"


@dataclass(kw_only=True)
class Iteration(BaseEvent):
    iteration: int
    max_iterations: int
    type: Literal["iteration"] = "iteration"


@dataclass(kw_only=True)
class TextDelta(BaseEvent):
    delta: str
    type: Literal["output.text.delta"] = "output.text.delta"


@dataclass(kw_only=True)
class TextDone(BaseEvent):
    text: str
    type: Literal["output.text.done"] = "output.text.done"


@dataclass(kw_only=True)
class TextReset(BaseEvent):
    """The text and reasoning streamed since the last ``output.text.done`` (or the last stored
    assistant message) are discarded: the attempt that streamed them ended (a retryable error,
    or its process stopped) and attempt ``attempt`` streams that model turn again from its
    start. A consumer that joins ``output.text.delta`` drops the last ``discarded_chars``
    characters it joined (``discarded_reasoning_chars`` of the reasoning), and ends with the
    stored answer. Sent before the new attempt's first delta, stored like the deltas it takes
    back (only with ``persist_deltas``)."""

    attempt: int
    discarded_chars: int = 0
    discarded_reasoning_chars: int = 0
    type: Literal["output.text.reset"] = "output.text.reset"


@dataclass(kw_only=True)
class ReasoningDelta(BaseEvent):
    delta: str
    type: Literal["reasoning.delta"] = "reasoning.delta"


@dataclass(kw_only=True)
class ReasoningDone(BaseEvent):
    text: str
    type: Literal["reasoning.done"] = "reasoning.done"


# ``tool.call.started``'s ``tool_type`` of a provider-hosted tool's call (``kinds.HostedTool``):
# the provider ran it inside its response; its arguments and output follow at once.
HOSTED_TOOL_TYPE = "hosted"


@dataclass(kw_only=True)
class ToolCallStarted(BaseEvent):
    tool_call_id: str
    name: str
    tool_type: str = "function"
    type: Literal["tool.call.started"] = "tool.call.started"


@dataclass(kw_only=True)
class ToolCallArgumentsDelta(BaseEvent):
    tool_call_id: str
    delta: str
    type: Literal["tool.call.arguments.delta"] = "tool.call.arguments.delta"


@dataclass(kw_only=True)
class ToolCallArgumentsDone(BaseEvent):
    tool_call_id: str
    arguments: JSON
    type: Literal["tool.call.arguments.done"] = "tool.call.arguments.done"


@dataclass(kw_only=True)
class ToolCallDelta(BaseEvent):
    """Live output of a running tool (shell stdout/stderr, patch progress)."""

    tool_call_id: str
    channel: str
    chunk: str
    type: Literal["tool.call.delta"] = "tool.call.delta"


@dataclass(kw_only=True)
class ToolCallOutput(BaseEvent):
    tool_call_id: str
    name: str
    ok: bool
    output: str
    status: str = "completed"
    artifact: JSON | None = None
    type: Literal["tool.call.output"] = "tool.call.output"


@dataclass(kw_only=True)
class ApprovalRequested(BaseEvent):
    """A tool call waits for a person's decision (the run goes to ``waiting_approval``)."""

    tool_call_id: str
    name: str
    arguments: JSON
    review_mode: ReviewMode = ReviewMode.ASK
    diff: str | None = None  # what the call would change (a unified diff), when it can tell
    type: Literal["approval.requested"] = "approval.requested"


@dataclass(kw_only=True)
class ApprovalDecided(BaseEvent):
    """The decision on a waiting call, taken up by the attempt that resumes its run: who
    decided it (``by``, where the door knows a user name) and where (``door``), so every
    door that showed the question can say so (absent: a decision stored before doors were)."""

    tool_call_id: str
    name: str
    decision: str  # approve | deny | approve_always
    message: str | None = None
    door: DecisionDoor | None = None
    by: str | None = None
    type: Literal["approval.decided"] = "approval.decided"


@dataclass(kw_only=True)
class UsageEvent(BaseEvent):
    """A model call's usage and cost; ``cached_input_tokens``: of its input, what the provider
    read from its prompt cache. The context gauge (``runtime/context.py``, native runs): the
    request's estimated ``context_tokens`` of the model's ``context_window``, and the size
    past which older messages are left out and compacted (``compacts_at``)."""

    input_tokens: int
    output_tokens: int
    cost_usd: float | None = None
    cached_input_tokens: int = 0
    context_tokens: int | None = None
    context_window: int | None = None
    compacts_at: int | None = None
    type: Literal["usage"] = "usage"


@dataclass(kw_only=True)
class CompactionEvent(BaseEvent):
    """Older messages of the session were folded into a summary the model wrote
    (``runtime/compaction.py``), sent in their place from now on: ``message_count`` messages
    through ``through_message_id``, with the usage and cost of that model call."""

    compaction_id: str
    message_count: int
    through_message_id: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    type: Literal["context.compacted"] = "context.compacted"


@dataclass(kw_only=True)
class BudgetEvent(BaseEvent):
    """A budget of the run's session or notebook: spent and remaining after a model call, or
    ``exceeded`` when the next call was refused (the run then fails ``BUDGET_EXCEEDED``), with
    ``asking`` in review mode ``ask``: the run waits (``waiting_approval``) for a person to
    raise the session's budget (``agi approve RUN --max-tokens N``) or deny (it then fails)."""

    scope: str  # session | notebook
    notebook_path: str | None = None
    max_tokens: int | None = None
    max_usd: float | None = None
    spent_tokens: int = 0
    spent_usd: float = 0.0
    remaining_tokens: int | None = None
    remaining_usd: float | None = None
    exceeded: bool = False
    asking: bool = False
    reason: str | None = None  # why the call was refused (with ``exceeded``)
    type: Literal["budget"] = "budget"


@dataclass(kw_only=True)
class MessageCompleted(BaseEvent):
    message: JSON
    type: Literal["message.completed"] = "message.completed"


@dataclass(kw_only=True)
class Notice(BaseEvent):
    """Something the person should know that does not stop the run, said once per session:
    ``TOOLS_UNSUPPORTED`` (tools were offered to a local model whose chat template has no
    place for them: its server drops them, so the model cannot call them)."""

    code: str
    message: str
    type: Literal["notice"] = "notice"


@dataclass(kw_only=True)
class ErrorEvent(BaseEvent):
    code: str
    message: str
    retryable: bool = False
    type: Literal["error"] = "error"


@dataclass(kw_only=True)
class RunFinal(BaseEvent):
    """Always the last event of a run: the whole run object."""

    run: JSON = field(default_factory=dict)
    type: Literal["run.final"] = "run.final"


@dataclass(kw_only=True)
class ChangesUndone(BaseEvent):
    """Changes of the run (record ids of ``GET /runs/{id}/changes``) were undone, after the
    run ended: the run's log is where a change's ``undone`` is read from."""

    changes: list[str] = field(default_factory=list)
    type: Literal["changes.undone"] = "changes.undone"


@dataclass(kw_only=True)
class ChangesRedone(BaseEvent):
    """Undone changes of the run were made again (redo)."""

    changes: list[str] = field(default_factory=list)
    type: Literal["changes.redone"] = "changes.redone"


@dataclass(kw_only=True)
class ChangesKept(BaseEvent):
    """Changes of the run were kept by the user (accepted after review in the notebook): no
    longer shown for review. Undo and redo still work on them."""

    changes: list[str] = field(default_factory=list)
    type: Literal["changes.kept"] = "changes.kept"


# Session-stream events (GET /sessions/{id}/stream) — not tied to one run.


@dataclass(kw_only=True)
class SessionCreated(BaseEvent):
    session: JSON
    type: Literal["session.created"] = "session.created"


@dataclass(kw_only=True)
class SessionUpdated(BaseEvent):
    session: JSON
    type: Literal["session.updated"] = "session.updated"


@dataclass(kw_only=True)
class MessageCreated(BaseEvent):
    message: JSON
    type: Literal["message.created"] = "message.created"


Event = (
    RunMeta
    | RunStatusEvent
    | Iteration
    | TextDelta
    | TextDone
    | TextReset
    | ReasoningDelta
    | ReasoningDone
    | ToolCallStarted
    | ToolCallArgumentsDelta
    | ToolCallArgumentsDone
    | ToolCallDelta
    | ToolCallOutput
    | ApprovalRequested
    | ApprovalDecided
    | UsageEvent
    | CompactionEvent
    | BudgetEvent
    | MessageCompleted
    | Notice
    | ErrorEvent
    | RunFinal
    | ChangesUndone
    | ChangesRedone
    | ChangesKept
    | SessionCreated
    | SessionUpdated
    | MessageCreated
)


def _event_types() -> dict[str, type[Any]]:
    """``type`` -> class, read from the ``Event`` union: the one list of events. A new event is
    a dataclass here plus a member of the union; ``EVENT_TYPES``, the server's OpenAPI
    ``Event`` schema and the panel's generated TypeScript types all follow from it."""
    found: dict[str, type[Any]] = {}
    for cls in get_args(Event):
        name = str(cls.__dataclass_fields__["type"].default)
        if name in found:
            raise TypeError(f"two events of type {name!r}: {found[name]} and {cls}")
        found[name] = cls
    return found


EVENT_TYPES: dict[str, type[Any]] = _event_types()

# Streaming fragments, and the reset that takes text fragments back: persisted to run_events
# only when persist_deltas is on (a reader of the stored events sees a reset only with the
# deltas it discards).
DELTA_TYPES: frozenset[str] = frozenset(
    {
        "output.text.delta",
        "output.text.reset",
        "reasoning.delta",
        "tool.call.arguments.delta",
        "tool.call.delta",
    }
)


def is_persisted(event_type: str, *, persist_deltas: bool) -> bool:
    """Whether an event of this type is written to ``run_events``."""
    return persist_deltas or event_type not in DELTA_TYPES


def event_to_dict(event: Event) -> JSON:
    """The wire form: a flat JSON object with ``type`` first.

    A shallow copy of the fields (``dataclasses.asdict`` deep-copies, which costs more than
    the rest of an event's trip together): payload values are shared, never mutated."""
    data = dict(vars(event))
    return {"type": data.pop("type"), **data}


def event_from_dict(data: JSON) -> Event:
    """Rebuild an event from its wire form; unknown keys are dropped so old rows stay readable."""
    cls = EVENT_TYPES.get(str(data.get("type")))
    if cls is None:
        raise ValueError(f"unknown event type: {data.get('type')!r}")
    fields = cls.__dataclass_fields__
    event: Event = cls(**{k: v for k, v in data.items() if k in fields and k != "type"})
    return event
