"""The context of a model request: which of a session's messages it sends, within a budget.

``ContextAssembler.assemble`` builds every native model request's messages from the canonical
history (``history.conversation_entries``), whatever the wire API: the budget is the model's
context window (``models."provider:model".context_window`` in config, else the local server's
``n_ctx``, else the catalog's) minus the output reserve (``max_output_tokens``, else a quarter of
the window up to 8,192) and what the system prompt and the tools take; ``max_history_messages``
(default 50, None: tokens only) bounds the number of messages further.

The history is cut into units that are never parted: a user message, or an assistant message
with the results of its tool calls. The current turn (the latest user message and everything
after it) is always sent whole; older units are taken newest first while they fit. Large tool
outputs of older units are sent as a short reference to where they are stored (the agent reads
them back with ``sql.query``, or by the artifact named in them). What is left out is either
covered by the session's compaction (its summary is sent first, in their place) or said in a
one-line note, so the model knows there was more. The stored history is never changed.

Tokens are estimated, not counted: a character count over four (``estimate_tokens``) plus a
few tokens per message, the same for every wire API, so the window and the gauge agree from
one provider to another; an image counts as ``IMAGE_TOKENS``. English prose runs at about four
characters a token, code and JSON a little denser, so the estimate is deliberately used with a
reserve for the answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from agi_jupyter.records import (
    ChatMessage,
    Compaction,
    HostedToolPart,
    ImagePart,
    MentionPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from agi_jupyter.runtime.history import conversation_entries

if TYPE_CHECKING:
    from agi_jupyter.config import Config
    from agi_jupyter.providers.base import ToolSpec

CHARS_PER_TOKEN = 4
MESSAGE_TOKENS = 4  # a message's role and separators
IMAGE_TOKENS = 1500
DEFAULT_OUTPUT_RESERVE = 8192
# An older tool output longer than this (characters) is sent as a reference to it.
LARGE_TOOL_OUTPUT = 2000
# A compaction leaves the newest older messages that fill this share of the budget unfolded,
# so the requests after it have room to grow before the next one.
KEEP_AFTER_COMPACTION = 0.5


def estimate_tokens(text: str) -> int:
    """The estimated tokens of ``text``: its characters over four, rounded up."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def part_tokens(part: Part) -> int:
    if isinstance(part, TextPart):
        return estimate_tokens(part.text)
    if isinstance(part, ToolResultPart):
        return estimate_tokens(part.output) + estimate_tokens(part.tool_call_id)
    if isinstance(part, ToolCallPart):
        arguments = json.dumps(part.arguments, ensure_ascii=False)
        return estimate_tokens(part.name + part.tool_call_id + arguments)
    if isinstance(part, ReasoningPart):
        data = json.dumps(part.provider_data) if part.provider_data else ""
        return estimate_tokens(part.text + (part.signature or "") + data)
    if isinstance(part, HostedToolPart):  # sent back as its items/blocks
        return estimate_tokens(json.dumps(part.echo, ensure_ascii=False))
    if isinstance(part, ImagePart):
        return IMAGE_TOKENS
    if isinstance(part, MentionPart):
        return estimate_tokens(part.for_model())
    return 0


def message_tokens(message: ChatMessage) -> int:
    return MESSAGE_TOKENS + sum(part_tokens(p) for p in message.parts)


def fixed_tokens(system: str | None, tools: list[ToolSpec]) -> int:
    """What the system prompt and the tools' specs take of every request."""
    specs = [{"n": t.name, "d": t.description, "p": t.parameters} for t in tools]
    return estimate_tokens(system or "") + estimate_tokens(json.dumps(specs) if specs else "")


@dataclass(frozen=True)
class ContextLimits:
    """What bounds a model's requests: its window (None: unknown, no token budget), the
    tokens kept for its answer, the answer limit sent (configured only) and the message
    window."""

    window: int | None
    output_reserve: int
    max_output_tokens: int | None = None
    max_messages: int | None = None

    @classmethod
    def of(
        cls,
        config: Config,
        provider: str,
        model: str,
        known_window: int | None,
        max_output_tokens: int | None = None,
    ) -> ContextLimits:
        """The limits of ``provider:model``: the config's window over ``known_window`` (the
        local server's or the catalog's); ``max_output_tokens`` (an agent's) over the
        config's answer limit."""
        settings = config.model_settings(provider, model)
        window = settings.context_window or known_window
        answer_limit = max_output_tokens or settings.max_output_tokens
        reserve = answer_limit
        if reserve is None:
            reserve = (
                DEFAULT_OUTPUT_RESERVE
                if window is None
                else min(DEFAULT_OUTPUT_RESERVE, window // 4)
            )
        return cls(window, reserve, answer_limit, config.max_history_messages)


@dataclass
class Unit:
    """Messages that travel together: a user message, or an assistant message and the results
    of its calls. ``message_id``: the stored message it comes from."""

    message_id: str
    messages: list[ChatMessage]
    tokens: int = 0

    @property
    def is_user(self) -> bool:
        return self.messages[0].role == "user"


@dataclass(frozen=True)
class RequestContext:
    """What one request sends and how full it is."""

    messages: list[ChatMessage]
    tokens: int  # estimated: system prompt, tools and messages
    window: int | None
    budget: int | None  # what the messages may take (None: no token budget)
    history_messages: int  # history messages sent (the summary or note not counted)
    left_out: int  # history messages left out that no compaction covers
    stable: int  # leading messages the next requests repeat (a cache breakpoint after them)
    compaction: Compaction | None = None  # the summary sent in place of older messages
    overflow: list[Unit] = field(default_factory=list)  # the units left out, oldest first
    fixed: int = 0  # what the system prompt and the tools take

    @property
    def compacts_at(self) -> int | None:
        """The request size past which older messages are left out (and compacted)."""
        return None if self.budget is None else self.budget + self.fixed

    def gauge(self) -> dict[str, int | None]:
        """The context gauge: tokens sent, the window, when the next request compacts."""
        return {
            "tokens": self.tokens,
            "window": self.window,
            "compacts_at": self.compacts_at,
            "messages": self.history_messages,
            "left_out": self.left_out,
        }


def summary_message(compaction: Compaction) -> ChatMessage:
    text = (
        f"[Summary of the {compaction.message_count} earlier messages of this session, "
        "written when they no longer fit the context; the full history is stored]\n"
        f"{compaction.summary}"
    )
    return ChatMessage(role="user", parts=[TextPart(text=text)])


def left_out_message(count: int) -> ChatMessage:
    text = (
        f"[{count} earlier messages of this session are left out of this request to fit the "
        "context window; they are stored (sql.query on the store's messages table reads them)]"
    )
    return ChatMessage(role="user", parts=[TextPart(text=text)])


def tool_output_reference(part: ToolResultPart) -> ToolResultPart:
    """An old, large tool output as a reference to where it is stored."""
    if part.artifact_id:
        where = f"artifact {part.artifact_id}"
    else:
        where = (
            "the store: sql.query(database='store', sql=\"SELECT result FROM tool_calls "
            f"WHERE tool_call_id = '{part.tool_call_id}'\")"
        )
    head = part.output[:200].rstrip()
    output = (
        f"{head}\n[... an older output of {len(part.output)} characters, left out of this "
        f"request to save context; read it back from {where}]"
    )
    return replace(part, output=output)


class ContextAssembler:
    """Assembles the requests of one attempt: its limits, system prompt and tools are fixed."""

    def __init__(
        self, limits: ContextLimits, system: str | None = None, tools: list[ToolSpec] | None = None
    ) -> None:
        self.limits = limits
        self.fixed = fixed_tokens(system, tools or [])

    @property
    def budget(self) -> int | None:
        """The tokens the messages of a request may take (None: no window known)."""
        window = self.limits.window
        if window is None:
            return None
        return max(0, window - self.limits.output_reserve - self.fixed)

    def units(self, history: list[Message], compaction: Compaction | None) -> list[Unit]:
        """The history's units after ``compaction`` (all of them without one, or when its
        last message is not in the history)."""
        units = _units(history)
        return units[_covered(units, compaction) or 0 :]

    def assemble(self, history: list[Message], compaction: Compaction | None) -> RequestContext:
        """The messages of the next request (see the module's docstring)."""
        units = _units(history)
        covered = _covered(units, compaction)
        if covered is None:
            compaction = None
            covered = 0
        rest = units[covered:]
        turn = _turn_start(rest)
        older = [_shrunk(u) for u in rest[:turn]]
        current = rest[turn:]
        head = summary_message(compaction) if compaction is not None else None
        kept = self._fit(older, current, head)
        left = older[: len(older) - len(kept)]
        if left and head is None:
            head = left_out_message(sum(len(u.messages) for u in left))
        messages = [head] if head is not None else []
        for unit in (*kept, *current):
            messages.extend(unit.messages)
        history_count = len(messages) - (head is not None)
        stable = len(messages) - sum(len(u.messages) for u in current)
        tokens = self.fixed + sum(message_tokens(m) for m in messages)
        return RequestContext(
            messages=messages,
            tokens=tokens,
            window=self.limits.window,
            budget=self.budget,
            history_messages=history_count,
            left_out=sum(len(u.messages) for u in left),
            stable=stable,
            compaction=compaction,
            overflow=left,
            fixed=self.fixed,
        )

    def _fit(self, older: list[Unit], current: list[Unit], head: ChatMessage | None) -> list[Unit]:
        """The newest of ``older`` that fit beside the current turn and the head (or the note
        that may take its place)."""
        head_tokens = message_tokens(head if head is not None else left_out_message(10**6))
        return self._newest(
            older,
            tokens=(self.budget, head_tokens + sum(u.tokens for u in current)),
            count=(self.limits.max_messages, 1 + sum(len(u.messages) for u in current)),
        )

    def to_fold(
        self, history: list[Message], compaction: Compaction | None, *, keep: float
    ) -> list[Unit]:
        """The units a compaction now folds (with the previous summary): those before the
        current turn, but for the newest that fill ``keep`` of the budget and of the message
        window (0: all of them). Empty: nothing to fold."""
        rest = self.units(history, compaction)
        older = [_shrunk(u) for u in rest[: _turn_start(rest)]]
        budget, limit = self.budget, self.limits.max_messages
        kept = self._newest(
            older,
            tokens=(None if budget is None else int(budget * keep), 0),
            count=(None if limit is None else int(limit * keep), 0),
        )
        return older[: len(older) - len(kept)]

    @staticmethod
    def _newest(
        units: list[Unit], *, tokens: tuple[int | None, int], count: tuple[int | None, int]
    ) -> list[Unit]:
        """The newest of ``units`` that fit in (limit, already used) of tokens and messages."""
        (token_limit, used), (count_limit, sent) = tokens, count
        taken = 0
        for unit in reversed(units):
            if token_limit is not None and used + unit.tokens > token_limit:
                break
            if count_limit is not None and sent + len(unit.messages) > count_limit:
                break
            used += unit.tokens
            sent += len(unit.messages)
            taken += 1
        return units[len(units) - taken :]


def _units(history: list[Message]) -> list[Unit]:
    units: list[Unit] = []
    for message_id, chat in conversation_entries(history):
        if chat.role == "tool" and units:
            units[-1].messages.append(chat)
            units[-1].tokens += message_tokens(chat)
        else:
            units.append(Unit(message_id, [chat], message_tokens(chat)))
    return units


def _covered(units: list[Unit], compaction: Compaction | None) -> int | None:
    """How many leading units ``compaction`` covers (0 without one; None when its last message
    is not among them: it is not used)."""
    if compaction is None:
        return 0
    for i, unit in enumerate(units):
        if unit.message_id == compaction.through_message_id:
            return i + 1
    return None


def _turn_start(units: list[Unit]) -> int:
    """Where the current turn starts: the latest user message (0 when there is none)."""
    for i in range(len(units) - 1, -1, -1):
        if units[i].is_user:
            return i
    return 0


def _shrunk(unit: Unit) -> Unit:
    """``unit`` with its large tool outputs as references (the same unit when it has none)."""
    if not any(
        isinstance(p, ToolResultPart) and len(p.output) > LARGE_TOOL_OUTPUT
        for m in unit.messages
        for p in m.parts
    ):
        return unit
    messages = [
        ChatMessage(
            role=m.role,
            parts=[
                tool_output_reference(p)
                if isinstance(p, ToolResultPart) and len(p.output) > LARGE_TOOL_OUTPUT
                else p
                for p in m.parts
            ],
        )
        for m in unit.messages
    ]
    return Unit(unit.message_id, messages, sum(message_tokens(m) for m in messages))
