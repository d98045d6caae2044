"""The records of the store: sessions, messages and their parts, runs, tool calls, artifacts.

Plain dataclasses that import nothing from the package but its named kinds (``kinds``) and
``run_state`` (the typed state of a run, which imports nothing either), so every layer can
use them. Message
parts carry a literal ``type`` so they round-trip losslessly through JSON (``part_to_dict`` /
``part_from_dict``); the same part types make up the conversation sent to a provider.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar, get_args

from agi_jupyter.kinds import SdkName
from agi_jupyter.run_state import LoopState

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
    "waiting_execution",
    "succeeded",
    "failed",
    "cancelled",
]
TERMINAL_RUN_STATUSES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
ACTIVE_RUN_STATUSES: frozenset[str] = frozenset(get_args(RunStatus)) - TERMINAL_RUN_STATUSES
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
_TO_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", _CROCKFORD.encode())
_STAMP_MASK = (1 << 50) - 1  # the 10 characters of the time


def new_id(prefix: str) -> str:
    """A prefixed, time-ordered random id such as ``ses_01jd3k...``.

    The first 10 characters encode the creation time in milliseconds (Crockford base32), so ids
    sort by creation time, which keeps cursor pagination and "newest first" listings cheap.
    """
    # 10 characters of time and 16 of randomness, 5 bits each: the low 130 bits of a 160-bit
    # number, base32-encoded in C (a character per 5 bits, the most significant first) and
    # mapped onto Crockford's alphabet. The store makes one per event: a token's worth of CPU.
    millis = time.time_ns() // 1_000_000
    number = ((millis & _STAMP_MASK) << 80) | int.from_bytes(os.urandom(10), "big")
    encoded = base64.b32encode(number.to_bytes(20, "big"))[6:].translate(_TO_CROCKFORD)
    return f"{prefix}_{encoded.decode('ascii')}"


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
class HostedToolPart:
    """A call of a provider-hosted tool (``kinds.HostedTool``) that the provider ran inside its
    response, with its result: ``name`` as the provider named it (``web_search``,
    ``code_interpreter``, ``bash_code_execution``...), its ``input`` and a text ``output``; the
    wire API it came from (``api``: ``responses`` or ``anthropic``) and ``echo``, its items or
    blocks exactly as received, sent back verbatim in later requests to that API (another API
    is sent nothing of it). Not a ``ToolCallPart``: nothing of ours answers it."""

    tool_call_id: str
    name: str
    api: str
    input: JSON = field(default_factory=dict)
    output: str = ""
    is_error: bool = False
    echo: list[JSON] = field(default_factory=list)
    type: Literal["hosted_tool"] = "hosted_tool"


# Images attached to a user message (``app.attachments``): how many one message holds, and how
# large one may be as attached (before it is scaled down). Here, beside ``ImagePart``, so the
# REST models and handlers bound a body without importing the application layer.
MAX_ATTACHED_IMAGES = 4
MAX_ATTACHED_BYTES = 5_000_000
# The base64 length of ``MAX_ATTACHED_BYTES`` bytes.
MAX_ATTACHED_BASE64 = (MAX_ATTACHED_BYTES + 2) // 3 * 4


@dataclass(kw_only=True)
class ImagePart:
    """An image: inline (``data_base64``), at a ``url``, or stored as an artifact
    (``artifact_id``: a tool result's image, read from the store before it is sent)."""

    mime: str
    data_base64: str | None = None
    url: str | None = None
    artifact_id: str | None = None
    type: Literal["image"] = "image"


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
    # What the call showed (a cell's plots), for models that read images.
    images: list[ImagePart] = field(default_factory=list)
    type: Literal["tool_result"] = "tool_result"

    def __post_init__(self) -> None:
        # Read back from JSON, the images are dicts.
        if self.images:
            self.images = [
                i if isinstance(i, ImagePart) else ImagePart(**_known(ImagePart, i))
                for i in self.images
            ]


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


@dataclass(kw_only=True)
class MentionPart:
    """What an ``@`` mention of a user message pointed at, resolved when the message was
    written and stored with it (so a replay sends the same context): ``kind`` (a
    ``MentionKind``), ``ref`` (a path, ``notebook#cell-id``, a variable name) and ``text``,
    the bounded context the model reads."""

    kind: str
    ref: str
    text: str
    type: Literal["mention"] = "mention"

    def for_model(self) -> str:
        """The text a model is sent for this mention (every wire API takes it as text)."""
        return f'<mention kind="{self.kind}" ref="{self.ref}">\n{self.text}\n</mention>'


Part = (
    TextPart
    | ReasoningPart
    | ToolCallPart
    | ToolResultPart
    | HostedToolPart
    | ImagePart
    | ErrorPart
    | ArtifactRefPart
    | MentionPart
)

_PART_TYPES: dict[str, type[Any]] = {
    "text": TextPart,
    "reasoning": ReasoningPart,
    "tool_call": ToolCallPart,
    "tool_result": ToolResultPart,
    "hosted_tool": HostedToolPart,
    "image": ImagePart,
    "error": ErrorPart,
    "artifact_ref": ArtifactRefPart,
    "mention": MentionPart,
}


def part_to_dict(part: Part) -> JSON:
    """A part's JSON form; fields added later are left out while they hold their default, so
    every part stored before them keeps the form it had (``run_state_codec`` pins it)."""
    data = asdict(part)
    if isinstance(part, ImagePart) and part.artifact_id is None:
        del data["artifact_id"]
    elif isinstance(part, ToolResultPart) and not part.images:
        del data["images"]
    return data


def part_from_dict(data: JSON) -> Part:
    """Rebuild a part from its JSON form; unknown keys are dropped so old rows stay readable."""
    kind = data.get("type")
    cls = _PART_TYPES.get(str(kind))
    if cls is None:
        raise ValueError(f"unknown message part type: {kind!r}")
    fields = cls.__dataclass_fields__
    part: Part = cls(**{k: v for k, v in data.items() if k in fields and k != "type"})
    return part


def _known(cls: type[Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of ``data`` that are fields of ``cls`` (``type`` apart)."""
    return {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "type"}


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
    sdk: str = SdkName.NATIVE
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
    # Of ``input_tokens``, those read from the provider's prompt cache.
    cached_input_tokens: int = 0


# --- fields decoded on first read ------------------------------------------------------------
#
# A stored message's ``meta`` and ``parts`` are JSON texts in the store. Most readers of a
# history look at roles and texts only, and decoding those texts into dicts and part records
# for every message was most of what loading a long history cost (benchmarks/README.md,
# history_floor.py). So a store may leave them undecoded (``list_messages(lazy=True)``): the
# record then holds the text it read in one of the slots below, its ``meta`` and ``parts``
# slots unset, and the first read of either field decodes both (``Message.__getattr__``, which
# Python calls only when a slot is unset, so a decoded record costs nothing extra). Equality,
# ``repr``, ``dataclasses.asdict`` / ``replace``, pickling and copying all read the fields, so
# they see decoded values.

PARTS_JSON = "_parts_json"
"""``Message.meta`` and ``Message.parts`` not decoded yet: the JSON texts of the meta object
(``null`` for none) and of the array of all its parts, joined by a comma."""
TEXTS_JSON = "_texts_json"
"""As ``PARTS_JSON``, for a message that keeps only its non-empty text parts (the simple
history view). Such a message has one exactly when its ``text`` (its text parts joined, stored
with them) is not empty."""

MessageDecoder = Callable[[str, bool], tuple[JSON, list[Part]]]
"""Decodes a message's stored ``meta,parts`` text (``PARTS_JSON``) into its meta and parts;
``True``: only its non-empty text parts (``TEXTS_JSON``). Registered by the store, which knows
the stored form (``Message.decoder``)."""


class _Undecoded:
    """The slots of the stored texts of a ``Message`` left undecoded (``PARTS_JSON`` or
    ``TEXTS_JSON``); unset in a decoded one."""

    __slots__ = (PARTS_JSON, TEXTS_JSON)
    # Read as None when unset (``Message.__getattr__``).
    _parts_json: str | None
    _texts_json: str | None


# Slotted: a long history is tens of thousands of these, and a record without an instance
# dict is cheaper to make, to free and to hold (benchmarks/README.md, history_floor.py). So a
# message takes no attributes besides its fields.
@dataclass(kw_only=True, slots=True)
class Message(_Undecoded):
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

    decoder: ClassVar[MessageDecoder | None] = None

    if not TYPE_CHECKING:  # to mypy, a __getattr__ would make any attribute of a message valid

        def __getattr__(self, name: str) -> Any:
            """``meta`` or ``parts`` read while unset: decoded from the stored text, both at
            once, and set, so that later reads are ordinary slot reads. A field assigned since
            the record was read is kept. Two threads may both decode a record; each sets equal
            values, and the text is dropped once either finished. (Hot for a caller reading
            every message of a lazy history: a call as few as can be.)"""
            if name in ("meta", "parts"):
                stored = self._parts_json  # None when unset (below)
                text_only = stored is None
                if text_only:
                    stored = self._texts_json
                decoder = Message.decoder
                if stored is not None and decoder is not None:
                    meta, parts = decoder(stored, text_only)
                    if name == "meta":
                        self.meta = value = meta
                        try:  # assigned since it was read?
                            object.__getattribute__(self, "parts")
                        except AttributeError:
                            self.parts = parts
                    else:
                        self.parts = value = parts
                        try:
                            object.__getattribute__(self, "meta")
                        except AttributeError:
                            self.meta = meta
                    try:
                        delattr(self, TEXTS_JSON if text_only else PARTS_JSON)
                    except AttributeError:  # another thread decoded it meanwhile
                        return object.__getattribute__(self, name)
                    return value
                if _is_set(self, name):  # decoded by another thread meanwhile
                    return object.__getattribute__(self, name)
            elif name in (PARTS_JSON, TEXTS_JSON):
                return None  # not undecoded (``undecoded``): a hot test, so it does not raise
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        """Its fields, decoded first if the store left them undecoded: a pickle or a copy
        holds plain values, and unpickles without the store's decoder."""
        _ = self.meta, self.parts
        return None, {f: getattr(self, f) for f in _MESSAGE_FIELDS if _is_set(self, f)}


_MESSAGE_FIELDS = tuple(f.name for f in fields(Message))


def _is_set(record: object, name: str) -> bool:
    """Whether slot ``name`` of ``record`` holds a value (without calling ``__getattr__``)."""
    try:
        object.__getattribute__(record, name)
    except AttributeError:
        return False
    return True


def undecoded(record: Message, key: str) -> bool:
    """Whether ``record`` still holds fields in the stored form ``key`` (``PARTS_JSON``...)."""
    return getattr(record, key) is not None


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
    # What the run keeps between attempts (typed; stored as JSON by ``run_state_codec``).
    loop_state: LoopState | None = None
    version: int = 0
    owner: str | None = None
    epoch: int = 0  # bumped whenever ownership changes hands (claim, takeover, release)
    heartbeat_at: str | None = None
    usage: JSON = field(default_factory=dict)
    # USD at list price; None: unknown (a model turn without usage, or a model without a
    # catalog price), never counted as 0.
    cost_usd: float | None = 0.0
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
    # approve_always, message, decided_at, door (kinds.DecisionDoor), by (a user name, when
    # the door knows it)}; None while undecided or never asked.
    approval: JSON | None = None
    # Who ran it when not us: ``kinds.ToolRunner.PROVIDER``, a hosted tool the model's
    # provider ran inside its response (never asked about, never run here).
    executed_by: str | None = None
    created_at: str = ""
    updated_at: str = ""

    @property
    def decided(self) -> str:
        """Who decided the call, in words ("approved in the panel by alice"); "" if no one."""
        return decided_text(self.approval) if self.approval else ""


_DECISION_WORDS = {"approve": "approved", "deny": "denied", "approve_always": "always approved"}
_DOOR_WORDS = {
    "panel": "in the panel",
    "widget": "in the chat widget",
    "cell": "in the notebook cell",
    "cli": "from the command line",
    "rest": "through the REST API",
    "policy": "by the session's rules",
}


def decided_text(decision: Mapping[str, Any]) -> str:
    """A decision (a call's ``approval``, or an ``approval.decided`` event) in words, as every
    door shows it: "approved in the panel by alice", "denied from the command line"."""
    kind = str(decision.get("decision") or "")
    words = [_DECISION_WORDS.get(kind, kind.replace("_", " "))]
    door = decision.get("door")
    if door:
        words.append(_DOOR_WORDS.get(str(door), f"in the {door}"))
    if decision.get("by"):
        words.append(f"by {decision['by']}")
    return " ".join(words)


@dataclass(kw_only=True)
class Compaction:
    """A summary the model wrote of a session's older messages (``runtime/compaction.py``),
    sent in their place: it covers every sendable message from ``first_message_id`` through
    ``through_message_id`` (``message_count`` of them). The history is never changed."""

    id: str
    session_id: str
    first_message_id: str
    through_message_id: str
    message_count: int
    summary: str
    run_id: str | None = None
    provider: str | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None  # None: unknown (no usage, or no catalog price)
    created_at: str = ""


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


ExecutionOrigin = Literal["user", "agent"]
ExecutionStatus = Literal["running", "ok", "error", "interrupted"]


@dataclass(kw_only=True)
class KernelExecution:
    """One cell execution a notebook's kernel ran (the ledger): who ran it (``origin``
    ``user``, or ``agent`` with its run and tool call), which cell and source (hash), its
    execution count, when, how it ended and a summary of its outputs. ``path`` is the
    notebook's, relative to the project."""

    id: str
    path: str
    cell_id: str | None = None
    source_hash: str | None = None
    execution_count: int | None = None
    origin: ExecutionOrigin = "user"
    run_id: str | None = None
    tool_call_id: str | None = None
    status: ExecutionStatus = "running"
    started_at: str = ""
    ended_at: str | None = None
    summary: str | None = None


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
