"""From stored messages to what a provider is sent, and to the simple / full history views."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from agi_jupyter.records import (
    ChatMessage,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

HistoryView = Literal["simple", "full"]


def conversation(messages: list[Message]) -> list[ChatMessage]:
    """The provider conversation: complete user/assistant/tool messages, in order.

    System messages are dropped (the system prompt is rebuilt each turn); error and pending
    messages are never sent back to a model.
    """
    return [
        ChatMessage(role=m.role, parts=list(m.parts))
        for m in messages
        if m.status == "complete" and m.role in ("user", "assistant", "tool") and m.parts
    ]


def unanswered_tool_calls(messages: list[Message]) -> list[tuple[Message, ToolCallPart]]:
    """Tool calls of the newest assistant message that have no result yet.

    These are left behind when a process dies mid-tool; the runner answers them with an error
    result on recovery, so the conversation stays valid for every provider.
    """
    answered = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolResultPart)}
    for message in reversed(messages):
        if message.role == "assistant" and message.status == "complete":
            return [
                (message, p)
                for p in message.parts
                if isinstance(p, ToolCallPart) and p.tool_call_id not in answered
            ]
    return []


def history_view(messages: list[Message], view: HistoryView) -> list[Message]:
    """``full``: every message with all its parts. ``simple``: user and assistant text only;
    a message that keeps all its parts is returned as it is, the others as copies."""
    if view == "full":
        return messages
    simple = []
    for m in messages:
        if m.role not in ("user", "assistant"):
            continue
        texts: list[Part] = [p for p in m.parts if isinstance(p, TextPart) and p.text]
        if texts:
            # Messages read with ``list_messages(text_only=True)`` (what ``Agi.history``
            # does) already hold only their texts: they are kept as they are, not copied.
            simple.append(m if len(texts) == len(m.parts) else replace(m, parts=texts))
    return simple
