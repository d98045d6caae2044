"""Claude Agent SDK messages -> canonical history events (and a few live-only events).

What the CLI streams for one answer (``include_partial_messages``): ``StreamEvent``s with the raw
Messages API events (text and thinking deltas), then one ``AssistantMessage`` per content block
with the finished block (so text would arrive twice: the streamed deltas are kept and the
finished block only fills in what the deltas missed), ``UserMessage``s with our tools' results,
and a ``ResultMessage`` per answered user message with the usage and the session's running
cost. A failing API call shows up as a synthetic ``AssistantMessage`` (``error`` set, model
``<synthetic>``) whose text describes the error: it is no answer, so it is kept out of history.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ConversationResetMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from agi_jupyter import events as ev
from agi_jupyter.sdk.base import (
    AssistantText,
    AssistantThinking,
    HistoryEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnMeta,
)
from agi_jupyter.sdk.claude.tools import ToolNameMap

PROVIDER = "anthropic"
SYNTHETIC_MODEL = "<synthetic>"  # the CLI's model name on messages it made up (API errors)


@dataclass
class Mapped:
    """What one SDK message means: history events, and live events that have no history."""

    history: list[HistoryEvent] = field(default_factory=list)
    live: list[ev.Event] = field(default_factory=list)


class MessageMapper:
    """Maps one run's SDK messages in order. Keeps what spans messages: the text streamed per
    content block, tool names by id, the model, and the session's running cost."""

    def __init__(self, names: ToolNameMap, *, model: str | None, cost_base: float = 0.0) -> None:
        self.names = names
        self.model = model
        self.cost_base = cost_base  # total_cost_usd already accounted for (resumed session)
        self.error: tuple[str, str] | None = None  # (kind, text) of the last API error
        self._streamed: deque[list[str]] = deque()  # text blocks streamed, not yet finished
        self._tool_names: dict[str, str] = {}

    def __call__(self, message: object) -> Mapped:
        if getattr(message, "parent_tool_use_id", None):
            return Mapped()  # a subagent's message (no Agent tool is offered; never expected)
        if isinstance(message, StreamEvent):
            return self._stream_event(message.event)
        if isinstance(message, AssistantMessage):
            return Mapped(history=self._assistant(message))
        if isinstance(message, UserMessage):
            return Mapped(history=self._tool_results(message))
        if isinstance(message, ResultMessage):
            return Mapped(history=[self.turn_meta(message), TurnDone()])
        if isinstance(message, ConversationResetMessage):
            self.cost_base = 0.0  # the CLI restarts its running totals
        return Mapped()

    # --- streaming ---------------------------------------------------------------------------

    def _stream_event(self, event: dict[str, Any]) -> Mapped:
        kind = event.get("type")
        if kind == "message_start":
            self._streamed.clear()
        elif kind == "content_block_start":
            if (event.get("content_block") or {}).get("type") == "text":
                self._streamed.append([])
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta" and delta.get("text"):
                if not self._streamed:
                    self._streamed.append([])
                self._streamed[-1].append(str(delta["text"]))
                return Mapped(history=[AssistantText(text=str(delta["text"]))])
            if delta.get("type") == "thinking_delta" and delta.get("thinking"):
                return Mapped(live=[ev.ReasoningDelta(delta=str(delta["thinking"]))])
        return Mapped()

    # --- finished messages -------------------------------------------------------------------

    def _assistant(self, message: AssistantMessage) -> list[HistoryEvent]:
        if message.error is not None or message.model == SYNTHETIC_MODEL:
            text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
            self.error = (message.error or "unknown", text.strip())
            return []
        self.model = message.model or self.model
        events: list[HistoryEvent] = []
        for block in message.content:
            if isinstance(block, TextBlock):
                rest = self._unstreamed(block.text)
                if rest:
                    events.append(AssistantText(text=rest))
            elif isinstance(block, ThinkingBlock):
                signature = block.signature or None
                events.append(AssistantThinking(text=block.thinking, signature=signature))
            elif isinstance(block, ToolUseBlock):
                name = self.names.ours(block.name)
                self._tool_names[block.id] = name
                events.append(ToolCallEvent(id=block.id, name=name, arguments=dict(block.input)))
        return events

    def _unstreamed(self, text: str) -> str:
        """The part of a finished text block its streamed deltas did not already deliver."""
        if not self._streamed:
            return text
        streamed = "".join(self._streamed.popleft())
        return text[len(streamed) :] if text.startswith(streamed) else ""

    def _tool_results(self, message: UserMessage) -> list[HistoryEvent]:
        if isinstance(message.content, str):
            return []  # e.g. "[Request interrupted by user]": the CLI's note, not a message
        events: list[HistoryEvent] = []
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                name = self._tool_names.get(block.tool_use_id, "unknown")
                events.append(
                    ToolResultEvent(
                        id=block.tool_use_id,
                        name=name,
                        output=result_text(block.content),
                        is_error=bool(block.is_error),
                    )
                )
        return events

    def turn_meta(self, result: ResultMessage) -> TurnMeta:
        """Usage of the answer; the cost is this answer's share of the session's running
        ``total_cost_usd`` (the CLI reports totals, also across resumes)."""
        input_tokens, output_tokens = usage_tokens(result.usage)
        cost: float | None = None
        if result.total_cost_usd is not None:
            total = float(result.total_cost_usd)
            cost = max(total - self.cost_base, 0.0)
            self.cost_base = max(total, self.cost_base)
        model = self.model if self.model and self.model != SYNTHETIC_MODEL else None
        return TurnMeta(
            provider=PROVIDER,
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
            stop_reason=result.subtype,
            extra={"claude": {"session_id": result.session_id, "num_turns": result.num_turns}},
        )


def usage_tokens(usage: dict[str, Any] | None) -> tuple[int, int]:
    """``(input, output)`` tokens; input counts cache reads and writes, as the native
    Anthropic provider does."""
    if not usage:
        return 0, 0
    inputs = sum(
        int(usage.get(key) or 0)
        for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    return inputs, int(usage.get("output_tokens") or 0)


def result_text(content: str | list[dict[str, Any]] | None) -> str:
    """The text of a tool result's content (non-text blocks are named, not dropped)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if block.get("type") == "text":
            parts.append(str(block.get("text") or ""))
        else:
            parts.append(f"[{block.get('type', 'content')}]")
    return "\n".join(parts)


def session_id_of(message: object) -> str | None:
    """The CLI's session id announced by an ``init`` system message."""
    if isinstance(message, SystemMessage) and message.subtype == "init":
        value = message.data.get("session_id")
        return str(value) if value else None
    return None


def taken_uuids(message: object) -> list[str]:
    """The uuids of user messages the CLI says it has taken into the running turn."""
    found: list[str] = []
    if isinstance(message, SystemMessage):
        found += [str(u) for u in message.data.get("user_message_uuids") or []]
    elif isinstance(message, StreamEvent | AssistantMessage | ResultMessage):
        found += message.user_message_uuids or []
        if message.user_message_uuid:
            found.append(message.user_message_uuid)
    return found


def starts_answer(message: object) -> bool:
    """Whether ``message`` is the first sign of the model answering (a new API message)."""
    if isinstance(message, StreamEvent):
        return message.event.get("type") == "message_start"
    return isinstance(message, AssistantMessage) and message.error is None
