"""From stored messages to what a provider is sent, and to the simple / full history views."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from agi_jupyter.records import (
    ChatMessage,
    ImagePart,
    MentionPart,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

HistoryView = Literal["simple", "full"]

NO_RESULT = "The tool call has no result: it was interrupted. Its effects are unknown."


def conversation(messages: list[Message]) -> list[ChatMessage]:
    """The provider conversation: complete user/assistant/tool messages, in order, with every
    tool call immediately followed by its result.

    System messages are dropped (the system prompt is rebuilt each turn); error and pending
    messages (a partial answer, for one) are never sent back to a model. Results are placed by
    their call, not where they were stored: a result stored after a later user message (the
    run was cancelled during the call, and the answer to its interruption was written when
    the next run started), or results stored in the order their calls ended, still come right
    after the assistant message that made the calls, in the calls' order, as one ``tool``
    message. A call with no stored result gets an error result saying so, and a result whose
    call is not in the conversation is left out: every wire API (Chat Completions, Responses,
    Anthropic Messages) rejects a call without its result, or a result out of place.
    """
    return [chat for _, chat in conversation_entries(messages)]


def conversation_entries(messages: list[Message]) -> list[tuple[str, ChatMessage]]:
    """``conversation(messages)`` with the id of the stored message each entry comes from: a
    ``tool`` entry (the results of an assistant message's calls) has the id of that assistant
    message, so a call and its results share one id (``runtime/context.py`` never parts
    them)."""
    sendable = [
        m
        for m in messages
        if m.status == "complete" and m.role in ("user", "assistant", "tool") and m.parts
    ]
    results: dict[str, ToolResultPart] = {}
    for m in sendable:
        for p in m.parts:
            if isinstance(p, ToolResultPart):
                results.setdefault(p.tool_call_id, p)
    chat: list[tuple[str, ChatMessage]] = []
    for m in sendable:
        if m.role == "tool":
            continue  # placed after the message holding their calls
        chat.append((m.id, ChatMessage(role=m.role, parts=_sendable(m.parts))))
        calls = [p for p in m.parts if isinstance(p, ToolCallPart)] if m.role == "assistant" else []
        if calls:
            answers: list[Part] = [results.get(c.tool_call_id) or _no_result(c) for c in calls]
            chat.append((m.id, ChatMessage(role="tool", parts=answers)))
    return chat


def _sendable(parts: list[Part]) -> list[Part]:
    """A message's parts as a provider takes them: a mention becomes its text."""
    return [TextPart(text=p.for_model()) if isinstance(p, MentionPart) else p for p in parts]


def _no_result(call: ToolCallPart) -> ToolResultPart:
    return ToolResultPart(
        tool_call_id=call.tool_call_id, name=call.name, output=NO_RESULT, is_error=True
    )


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
    """``full``: every message with all its parts. ``simple``: user and assistant text only
    (and the user's ``@`` mentions and attached images, whose bytes are artifacts);
    a message that keeps all its parts is returned as it is, the others as copies."""
    if view == "full":
        return messages
    # Whether a message is undecoded (``records.undecoded``) is cheap to ask of one that is
    # and dear (~1 µs, an AttributeError inside ``Message.__getattr__``) of one that is not:
    # asked of each message only when the first one is.
    if messages and messages[0]._texts_json is not None:
        return _simple_of_undecoded(messages)
    return _simple(messages)


def _simple_of_undecoded(messages: list[Message]) -> list[Message]:
    """The simple view of messages read with ``list_messages(text_only=True, lazy=True)``
    (``Agi.history``): user and assistant messages whose parts are their non-empty text parts,
    not decoded yet; such a message has some exactly when its text (its text parts joined) is
    not empty. Kept as they are, undecoded. (A message read from ``message_parts`` is
    decoded: ``_simple``.)"""
    simple = []
    for m in messages:
        if m._texts_json is not None:
            if m.text:
                simple.append(m)
        else:
            simple.extend(_simple([m]))
    return simple


def _simple(messages: list[Message]) -> list[Message]:
    """The simple view of any messages (an undecoded one is decoded)."""
    simple = []
    for m in messages:
        if m.role not in ("user", "assistant"):
            continue
        texts: list[Part] = [
            p
            for p in m.parts
            if (isinstance(p, TextPart) and p.text)
            or isinstance(p, MentionPart)
            or (isinstance(p, ImagePart) and p.artifact_id)
        ]
        if texts:
            # Messages read with ``list_messages(text_only=True)`` (what ``Agi.history``
            # does) already hold only their texts: they are kept as they are, not copied.
            simple.append(m if len(texts) == len(m.parts) else replace(m, parts=texts))
    return simple
