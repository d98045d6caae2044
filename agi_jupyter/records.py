"""The records of the store: sessions, messages and their parts, runs, tool calls, artifacts.

Plain dataclasses that import nothing from the package, so every layer can use them. Message
parts carry a literal ``type`` so they round-trip losslessly through JSON (``part_to_dict`` /
``part_from_dict``); the same part types make up the conversation sent to a provider.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, ClassVar, Generic, Literal, TypeVar

JSON = dict[str, Any]

Role = Literal["system", "user", "assistant", "tool"]
MessageStatus = Literal["pending", "complete", "error"]
RunType = Literal["agent", "deep_research"]
ExecutionMode = Literal["foreground_stream", "background", "kernel"]
RunStatus = Literal[
    "queued",
    "running",
    "waiting_webhook",
    "processing_webhook",
    "waiting_approval",
    "succeeded",
    "failed",
    "cancelled",
]
TERMINAL_RUN_STATUSES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
ACTIVE_RUN_STATUSES: frozenset[str] = frozenset(
    {"queued", "running", "waiting_webhook", "processing_webhook", "waiting_approval"}
)
ToolCallStatus = Literal[
    "pending",
    "waiting_approval",
    "running",
    "completed",
    "failed",
    "skipped",
    "denied",
    "cancelled",
]
QueueMode = Literal["queue", "interrupt"]
TaskStatus = Literal["pending", "in_progress", "done", "cancelled"]

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def new_id(prefix: str) -> str:
    """A prefixed, time-ordered random id such as ``ses_01jd3k...``.

    The first 10 characters encode the creation time in milliseconds (Crockford base32), so ids
    sort by creation time, which keeps cursor pagination and "newest first" listings cheap.
    """
    millis = time.time_ns() // 1_000_000
    stamp = "".join(_CROCKFORD[(millis >> shift) & 31] for shift in range(45, -1, -5))
    rand = int.from_bytes(os.urandom(10), "big")
    tail = "".join(_CROCKFORD[(rand >> shift) & 31] for shift in range(75, -1, -5))
    return f"{prefix}_{stamp}{tail}"


NON_BLANK = r"[^ \t\n\r\f\v]"
"""A text with something in it: a character other than ASCII whitespace (the same test in
Python, in pydantic and in JSON Schema, unlike ``str.strip``, whose whitespace is Unicode's)."""


def is_blank(text: str) -> bool:
    return not any(c not in " \t\n\r\f\v" for c in text)


def utc_now() -> str:
    """The current time as ISO-8601 UTC with milliseconds: ``2026-11-22T01:53:03.123Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- message parts ---------------------------------------------------------------------------


@dataclass(kw_only=True)
class TextPart:
    text: str
    type: Literal["text"] = "text"


@dataclass(kw_only=True)
class ReasoningPart:
    """Model reasoning. ``signature`` / ``provider_data`` keep what a provider needs echoed back
    (Anthropic thinking signatures, OpenAI encrypted reasoning items)."""

    text: str
    signature: str | None = None
    provider_data: JSON | None = None
    type: Literal["reasoning"] = "reasoning"


@dataclass(kw_only=True)
class ToolCallPart:
    tool_call_id: str
    name: str
    arguments: JSON = field(default_factory=dict)
    type: Literal["tool_call"] = "tool_call"


@dataclass(kw_only=True)
class ToolResultPart:
    tool_call_id: str
    name: str
    output: str
    is_error: bool = False
    artifact_id: str | None = None
    # The tool call's final status (completed, failed, denied, skipped); None in parts
    # stored before it was recorded here: read ``is_error`` then.
    status: ToolCallStatus | None = None
    type: Literal["tool_result"] = "tool_result"


@dataclass(kw_only=True)
class ImagePart:
    mime: str
    data_base64: str | None = None
    url: str | None = None
    type: Literal["image"] = "image"


@dataclass(kw_only=True)
class ErrorPart:
    code: str
    message: str
    type: Literal["error"] = "error"


@dataclass(kw_only=True)
class ArtifactRefPart:
    artifact_id: str
    kind: str
    title: str | None = None
    type: Literal["artifact_ref"] = "artifact_ref"


Part = (
    TextPart
    | ReasoningPart
    | ToolCallPart
    | ToolResultPart
    | ImagePart
    | ErrorPart
    | ArtifactRefPart
)

_PART_TYPES: dict[str, type[Any]] = {
    "text": TextPart,
    "reasoning": ReasoningPart,
    "tool_call": ToolCallPart,
    "tool_result": ToolResultPart,
    "image": ImagePart,
    "error": ErrorPart,
    "artifact_ref": ArtifactRefPart,
}


def part_to_dict(part: Part) -> JSON:
    return asdict(part)


def part_from_dict(data: JSON) -> Part:
    """Rebuild a part from its JSON form; unknown keys are dropped so old rows stay readable."""
    kind = data.get("type")
    cls = _PART_TYPES.get(str(kind))
    if cls is None:
        raise ValueError(f"unknown message part type: {kind!r}")
    fields = cls.__dataclass_fields__
    part: Part = cls(**{k: v for k, v in data.items() if k in fields and k != "type"})
    return part


def parts_text(parts: list[Part]) -> str:
    """The plain text of a list of parts (text parts only), for previews and search."""
    return "".join(p.text for p in parts if isinstance(p, TextPart))


@dataclass(kw_only=True)
class ChatMessage:
    """One message of the conversation sent to a provider (no persistence fields)."""

    role: Role
    parts: list[Part]


# --- rows ------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Session:
    id: str
    title: str | None = None
    agent: str = "general"
    sdk: str = "native"
    provider: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    thinking_level: str | None = None
    queue_mode: QueueMode = "queue"
    tool_config: JSON = field(default_factory=dict)
    metadata: JSON = field(default_factory=dict)
    notebook_path: str | None = None
    # The session's token/cost budget ({"max_tokens": N, "max_usd": X}; see budget.py).
    budget: JSON | None = None
    message_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    created_at: str = ""
    updated_at: str = ""


@dataclass(kw_only=True)
class Message:
    id: str
    session_id: str
    role: Role
    run_id: str | None = None
    status: MessageStatus = "complete"
    text: str = ""
    meta: JSON = field(default_factory=dict)
    parts: list[Part] = field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""

    def __getstate__(self) -> dict[str, Any]:
        """Its ``__dict__``, decoded first if the store left it undecoded (``Deferred``): a
        pickle or a copy holds plain values, and unpickles without the store's decoder."""
        _ = self.meta, self.parts
        return self.__dict__


# --- fields decoded on first read ------------------------------------------------------------
#
# A stored message's ``meta`` and ``parts`` are JSON texts in the store. Most readers of a
# history look at roles and texts only, and decoding those texts into dicts and part records
# for every message was most of what loading a long history cost (benchmarks/README.md,
# history_floor.py). So a store may leave them undecoded (``list_messages(lazy=True)``): the
# record's ``__dict__`` then holds the text it read under one of the keys below instead of
# those two fields, and the first read of either field swaps in the whole ``__dict__``
# decoded, as ``__init__`` would have made it. Equality, ``repr``, ``dataclasses.asdict`` /
# ``replace``, pickling and copying all read the fields, so they see decoded values.

PARTS_JSON = "_parts_json"
"""``Message.meta`` and ``Message.parts`` not decoded yet: the JSON texts of the meta object
(``null`` for none) and of the array of all its parts, joined by a comma."""
TEXTS_JSON = "_texts_json"
"""As ``PARTS_JSON``, for a message that keeps only its non-empty text parts (the simple
history view). Such a message has one exactly when its ``text`` (its text parts joined, stored
with them) is not empty."""


class Deferred:
    """A record field that may be left undecoded until it is first read.

    A non-data descriptor (no ``__set__``): once the field is in the instance ``__dict__``
    (put there by ``__init__``, an assignment or the decoding), attribute lookup finds it there
    and this is never called again, so a decoded record costs nothing extra. Until then, the
    decoder registered for the record's class (by the store, which knows the stored form) makes
    the record's decoded ``__dict__`` from the undecoded one, or returns None when that holds
    nothing undecoded. Two threads reading the same undecoded record for the first time may
    each decode it; the records stay equal.
    """

    decoders: ClassVar[dict[type[Any], Callable[[dict[str, Any]], dict[str, Any] | None]]] = {}

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, record: object | None, owner: type | None = None) -> Any:
        if record is None:
            return self
        decode = self.decoders.get(type(record))
        state = None if decode is None else decode(record.__dict__)
        if state is None:
            raise AttributeError(f"{type(record).__name__!r} object has no attribute {self.name!r}")
        record.__dict__ = state
        return state[self.name]


# Set after @dataclass made the class, so that the fields keep their default_factory.
Message.meta = Deferred("meta")  # type: ignore[assignment]
Message.parts = Deferred("parts")  # type: ignore[assignment]


def undecoded(record: object, key: str) -> bool:
    """Whether ``record`` still holds fields in the stored form ``key`` (``PARTS_JSON``...)."""
    return key in record.__dict__


@dataclass(kw_only=True)
class Run:
    id: str
    session_id: str
    type: RunType = "agent"
    execution_mode: ExecutionMode = "foreground_stream"
    status: RunStatus = "queued"
    provider: str | None = None
    model: str | None = None
    # The agent of this run when it is not the session's (``%%agi -a X`` is for one cell).
    agent: str | None = None
    thinking_level: str | None = None
    system_prompt: str | None = None
    input_message_id: str | None = None
    error: JSON | None = None
    attempt: int = 0
    max_attempts: int = 4
    next_attempt_at: str | None = None
    provider_response_id: str | None = None
    last_webhook_event_id: str | None = None
    loop_state: JSON | None = None
    version: int = 0
    owner: str | None = None
    epoch: int = 0  # bumped whenever ownership changes hands (claim, takeover, release)
    heartbeat_at: str | None = None
    usage: JSON = field(default_factory=dict)
    cost_usd: float = 0.0
    notebook_path: str | None = None
    cell_id: str | None = None
    execution_count: int | None = None
    request_hash: str | None = None
    replayed_from: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    created_at: str = ""
    updated_at: str = ""

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_RUN_STATUSES

    @property
    def fence(self) -> RunFence:
        """The fence of the run's current owner (as read: it may have changed since)."""
        return RunFence(self.id, self.owner or "", self.epoch)


@dataclass(frozen=True)
class RunFence:
    """What a run's owner holds while it executes the run: every write it makes is checked
    against it in the write's own transaction (``Store`` methods taking ``fence=``), and fails
    with ``RunLost`` once the run's ``owner`` or ``epoch`` changed (another process took the run
    over, or it was released)."""

    run_id: str
    owner: str
    epoch: int


def session_for_run(session: Session, run: Run) -> Session:
    """The session as one of its runs sees it: with the run's own agent, if it has one."""
    if run.agent and run.agent != session.agent:
        return replace(session, agent=run.agent)
    return session


@dataclass(kw_only=True)
class RunEvent:
    id: str
    run_id: str
    seq: int
    type: str
    payload: JSON = field(default_factory=dict)
    created_at: str = ""


@dataclass(kw_only=True)
class ToolCall:
    id: str
    run_id: str
    tool_call_id: str
    name: str
    message_id: str | None = None
    args: JSON = field(default_factory=dict)
    status: ToolCallStatus = "pending"
    result: Any = None
    is_error: bool = False
    started_at: str | None = None
    finished_at: str | None = None
    # A person's decision on a call that waited for one: {decision: approve | deny |
    # approve_always, message, decided_at}; None while undecided or never asked.
    approval: JSON | None = None
    created_at: str = ""
    updated_at: str = ""


@dataclass(kw_only=True)
class Artifact:
    """Metadata of an artifact. Small payloads live in ``data``/``text``; large ones in a file
    under ``.agi/artifacts/<id>/`` named by ``path`` (relative to the project), with ``size`` and
    ``sha256`` of its bytes."""

    id: str
    kind: str
    run_id: str | None = None
    session_id: str | None = None
    message_part_id: str | None = None
    title: str | None = None
    mime: str | None = None
    path: str | None = None
    size: int = 0
    sha256: str | None = None
    data: JSON | None = None
    text: str | None = None
    created_at: str = ""
    updated_at: str = ""


@dataclass(kw_only=True)
class WebhookEvent:
    id: str
    provider: str
    event_id: str
    type: str
    response_id: str | None = None
    payload: JSON = field(default_factory=dict)
    received_at: str = ""
    processed_at: str | None = None
    processing_error: str | None = None
    created_at: str = ""
    updated_at: str = ""
    delivery_id: str | None = None  # the webhook-id header of the delivery


@dataclass(kw_only=True)
class Task:
    id: str
    title: str
    details: str | None = None
    status: TaskStatus = "pending"
    due_at: str | None = None
    created_at: str = ""
    updated_at: str = ""


@dataclass(kw_only=True)
class Capability:
    id: str
    name: str
    description: str = ""
    file_path: str = ""
    tool_schema: JSON = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""


ChangeKind = Literal["notebook", "file"]


@dataclass(kw_only=True)
class Change:
    """One change a run made to a notebook or a file, as content-addressed snapshots: the
    sha256 of the whole content before and after (``store.get_blob``); None where the content
    did not exist (a created or deleted file). ``turn`` is the run's model turn, if known."""

    id: str
    run_id: str | None = None
    turn: int | None = None
    tool_call_id: str | None = None
    kind: ChangeKind = "notebook"
    path: str
    before_sha: str | None = None
    after_sha: str | None = None
    created_at: str = ""


T = TypeVar("T")


@dataclass(kw_only=True)
class QueryResult:
    """What one read-only SQL statement on a store returned (``Store.query``): the column names
    and at most ``max_rows`` rows (``truncated`` when there were more)."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False


@dataclass(kw_only=True)
class Page(Generic[T]):
    """One page of a listing; pass ``next_cursor`` back to get the next page (None at the end)."""

    items: list[T]
    next_cursor: str | None = None
