"""Chat Completions request and stream mapping shared by both wire paths (no SDK import).

``chat_params`` is the request both paths send (the SDK path as ``create``'s keyword
arguments, the HTTP path as the JSON body with ``extra_body`` merged in); ``ChatChunks`` maps
decoded stream chunks (plain dicts) onto ``ProviderEvent``s for the HTTP path, with the same
rules as the SDK path's ``openai_chat._ChatStream`` (the reference: the differential test in
``tests/providers/test_providers_wire.py`` runs recorded streams through both). The openai
package's TypedDicts are imported for the type checker only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agi_jupyter.errors import ProviderDisconnected
from agi_jupyter.providers._common import dump_arguments, image_url, new_tool_call_id, tool_call_end
from agi_jupyter.providers.base import (
    Finish,
    FinishReason,
    ProviderEvent,
    ProviderRequest,
    ReasoningDelta,
    ReasoningDone,
    ResponseId,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    Usage,
)
from agi_jupyter.records import ChatMessage, ImagePart, TextPart, ToolCallPart, ToolResultPart

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionContentPartParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
        ChatCompletionToolMessageParam,
        ChatCompletionToolUnionParam,
        ChatCompletionUserMessageParam,
    )

FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}
_REASONING_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})


def chat_params(request: ProviderRequest, *, openai_native: bool) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` for ``request``. ``openai_native``
    turns on OpenAI-only fields (``reasoning_effort``, ``max_completion_tokens``,
    ``prompt_cache_key``)."""
    params: dict[str, Any] = {
        "model": request.model,
        "messages": chat_messages(request.system, request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        params["tools"] = [chat_tool(tool) for tool in request.tools]
    if request.max_output_tokens is not None:
        key = "max_completion_tokens" if openai_native else "max_tokens"
        params[key] = request.max_output_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    level = (request.thinking_level or "off").lower()
    if openai_native and level in _REASONING_EFFORTS:
        params["reasoning_effort"] = level
    if openai_native and request.cache_key:
        params["prompt_cache_key"] = request.cache_key
    if request.idempotency_key:
        params["extra_headers"] = {"Idempotency-Key": request.idempotency_key}
    if request.extra_body:
        params["extra_body"] = dict(request.extra_body)
    return params


def chat_tool(tool: ToolSpec) -> ChatCompletionToolUnionParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def chat_messages(
    system: str | None, messages: Iterable[ChatMessage]
) -> list[ChatCompletionMessageParam]:
    result: list[ChatCompletionMessageParam] = []
    if system:
        result.append({"role": "system", "content": system})
    for message in messages:
        result.extend(chat_message(message))
    return result


def chat_message(message: ChatMessage) -> list[ChatCompletionMessageParam]:
    """One history message as Chat Completions messages (tool results become their own)."""
    results: list[ChatCompletionMessageParam] = [
        tool_message(p) for p in message.parts if isinstance(p, ToolResultPart)
    ]
    shown = tool_images_message(message)
    if shown is not None:
        results.append(shown)
    if message.role == "assistant":
        assistant = assistant_message(message)
        return [assistant, *results] if assistant is not None else results
    content = user_content(message)
    if not content:
        return results
    text = "".join(p["text"] for p in content if p["type"] == "text")
    if message.role == "system":
        results.append({"role": "system", "content": text})
    elif all(p["type"] == "text" for p in content):
        results.append({"role": "user", "content": text})  # plain text: the widest support
    else:
        user: ChatCompletionUserMessageParam = {"role": "user", "content": content}
        results.append(user)
    return results


def user_content(message: ChatMessage) -> list[ChatCompletionContentPartParam]:
    content: list[ChatCompletionContentPartParam] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            content.append({"type": "image_url", "image_url": {"url": image_url(part)}})
    return content


def assistant_message(message: ChatMessage) -> ChatCompletionAssistantMessageParam | None:
    text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
    calls = [tool_call(p) for p in message.parts if isinstance(p, ToolCallPart)]
    if not text and not calls:
        return None
    # ``""``, never ``null``, with tool calls: llama-cpp-python answers 500 to ``null``.
    result: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": text}
    if calls:
        result["tool_calls"] = calls
    return result


def tool_call(part: ToolCallPart) -> ChatCompletionMessageFunctionToolCallParam:
    return {
        "id": part.tool_call_id,
        "type": "function",
        "function": {"name": part.name, "arguments": dump_arguments(part.arguments)},
    }


def tool_images_message(message: ChatMessage) -> ChatCompletionUserMessageParam | None:
    """The images of tool results (a cell's plots): tool messages carry text only, so they
    follow the results as one user message, each after a line naming its call."""
    content: list[ChatCompletionContentPartParam] = []
    for part in message.parts:
        if not isinstance(part, ToolResultPart):
            continue
        sent = [image for image in part.images if image.data_base64 or image.url]
        if sent:
            text = f"Images shown by tool call {part.tool_call_id} ({part.name}):"
            content.append({"type": "text", "text": text})
            content.extend(
                {"type": "image_url", "image_url": {"url": image_url(image)}} for image in sent
            )
    return {"role": "user", "content": content} if content else None


def tool_message(part: ToolResultPart) -> ChatCompletionToolMessageParam:
    return {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.output}


# --- stream mapping (decoded chunks as dicts: the HTTP path) ---------------------------------

# ``ChoiceDelta``'s own fields: any other key is what the SDK keeps in ``model_extra``.
_DELTA_FIELDS = frozenset({"content", "function_call", "refusal", "role", "tool_calls"})


@dataclass
class _Call:
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)


@dataclass
class ChatStreamState:
    """What one streamed completion keeps, on both paths: open tool calls, reasoning, the
    finish reason and usage. Each path reads chunks in its own form (the SDK's models, or
    dicts) and feeds them here, so the two differ only in how they read a chunk."""

    calls: dict[int, _Call] = field(default_factory=dict)
    reasoning: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    ended_calls: int = 0
    started: bool = False

    def add_reasoning(self, text: object, events: list[ProviderEvent]) -> None:
        if isinstance(text, str) and text:
            self.reasoning.append(text)
            events.append(ReasoningDelta(text=text))

    def end_reasoning(self, events: list[ProviderEvent]) -> None:
        if self.reasoning:
            events.append(ReasoningDone(text="".join(self.reasoning)))
            self.reasoning = []

    def add_tool_call(
        self,
        index: int,
        call_id: str | None,
        name: str | None,
        arguments: str | None,
        events: list[ProviderEvent],
    ) -> None:
        """A tool call delta: the first of an index starts the call, each adds arguments."""
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = _Call(call_id or new_tool_call_id(), name or "")
            events.append(ToolCallStart(tool_call_id=call.id, name=call.name, index=index))
        if arguments:
            call.arguments.append(arguments)
            events.append(ToolCallArgsDelta(tool_call_id=call.id, delta=arguments))

    def on_finish(self, reason: str, events: list[ProviderEvent]) -> None:
        self.end_reasoning(events)
        events.extend(self.end_calls())
        self.finish_reason = reason

    def end_calls(self) -> list[ToolCallEnd]:
        ends = [tool_call_end(c.id, c.name, "".join(c.arguments)) for c in self.calls.values()]
        self.calls.clear()
        self.ended_calls += len(ends)
        return ends

    def finish(self, provider: str) -> list[ProviderEvent]:
        """The closing events; a stream without a finish reason is a disconnect."""
        return finish_events(provider, self.finish_reason, self.usage, self.ended_calls)


@dataclass
class ChatChunks(ChatStreamState):
    """One streamed completion read as dicts (the HTTP path). ``plain_text`` is the hot path
    (a chunk carrying only text)."""

    def plain_text(self, chunk: dict[str, Any]) -> str | None:
        """The text of a chunk that carries only text (most of them), else None."""
        if not self.started or self.reasoning or chunk.get("usage") is not None:
            return None
        choices = chunk.get("choices")
        if not choices:
            return None
        choice = choices[0]
        delta = choice.get("delta") or {}
        plain = choice.get("finish_reason") is None and delta.keys() <= _DELTA_FIELDS
        if plain and not delta.get("tool_calls"):
            return delta.get("content") or None
        return None

    def on_chunk(self, chunk: dict[str, Any]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        if not self.started:
            self.started = True
            if chunk.get("id"):
                events.append(ResponseId(id=str(chunk["id"])))
        usage = chunk.get("usage")
        if usage is not None:
            self.usage = chat_usage(usage)
        choices = chunk.get("choices")
        if not choices:
            return events
        choice = choices[0]
        delta = choice.get("delta") or {}
        if not delta.keys() <= _DELTA_FIELDS:
            self.add_reasoning(delta.get("reasoning_content") or delta.get("reasoning"), events)
        content = delta.get("content")
        if content:
            self.end_reasoning(events)
            events.append(TextDelta(text=content))
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            self.end_reasoning(events)
            for call in tool_calls:
                function = call.get("function") or {}
                self.add_tool_call(
                    call.get("index", 0),
                    call.get("id"),
                    function.get("name"),
                    function.get("arguments"),
                    events,
                )
        if choice.get("finish_reason") is not None:
            self.on_finish(choice["finish_reason"], events)
        return events


def finish_events(
    provider: str, finish_reason: str | None, usage: Usage | None, ended_calls: int
) -> list[ProviderEvent]:
    """The closing events of a stream (both paths); none with a finish reason: a disconnect."""
    if finish_reason is None:
        raise ProviderDisconnected(f"{provider}: the stream ended without a finish reason")
    events: list[ProviderEvent] = []
    if usage is not None:
        events.append(usage)
    reason = FINISH_REASONS.get(finish_reason, "other")
    if reason == "stop" and ended_calls:
        reason = "tool_calls"  # some compatible servers say "stop" after tool calls
    events.append(Finish(reason=reason, raw_reason=finish_reason))
    return events


def chat_usage(usage: dict[str, Any]) -> Usage:
    prompt = usage.get("prompt_tokens_details") or {}
    completion = usage.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        cached_input_tokens=prompt.get("cached_tokens") or 0,
        reasoning_tokens=completion.get("reasoning_tokens") or 0,
    )
