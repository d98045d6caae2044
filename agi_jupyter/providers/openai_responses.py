"""OpenAI Responses (``POST /responses``, streamed) -> ``ProviderEvent``s.

The system prompt goes in ``instructions``; the history becomes ``input`` items: messages,
``function_call`` and ``function_call_output`` items, and the ``reasoning`` items of earlier
turns echoed back as the API returned them (kept in ``ReasoningPart.provider_data``).
``thinking_level`` becomes ``reasoning: {effort, summary: "auto"}`` and asks for the encrypted
reasoning content so it can be echoed back. The response id is yielded with
``response.created``, the first event on the wire. A stream without ``response.completed`` /
``response.incomplete`` is a ``ProviderDisconnected``; ``response.failed`` and ``error`` events
raise a ``ProviderError``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agi_jupyter.errors import ProviderDisconnected
from agi_jupyter.providers._common import (
    RETRYABLE_STREAM_CODES,
    AdapterConfig,
    SdkAdapter,
    dump_arguments,
    image_url,
    install_hint,
    stream_error,
    tool_call_end,
)
from agi_jupyter.providers._openai_common import make_client, map_error
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
    ToolCallStart,
    ToolSpec,
    Usage,
)
from agi_jupyter.records import (
    ChatMessage,
    ImagePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

try:
    import httpx2
    import openai
    from openai.types.responses import (
        EasyInputMessageParam,
        FunctionToolParam,
        ResponseCompletedEvent,
        ResponseCreatedEvent,
        ResponseErrorEvent,
        ResponseFailedEvent,
        ResponseFunctionCallArgumentsDeltaEvent,
        ResponseFunctionToolCall,
        ResponseFunctionToolCallParam,
        ResponseIncompleteEvent,
        ResponseInputContentParam,
        ResponseInputItemParam,
        ResponseOutputItemAddedEvent,
        ResponseOutputItemDoneEvent,
        ResponseReasoningItem,
        ResponseReasoningItemParam,
        ResponseReasoningSummaryPartAddedEvent,
        ResponseReasoningSummaryTextDeltaEvent,
        ResponseReasoningTextDeltaEvent,
        ResponseRefusalDeltaEvent,
        ResponseTextDeltaEvent,
        ResponseUsage,
    )
    from openai.types.responses.response import Response
    from openai.types.responses.response_input_param import FunctionCallOutput
except ImportError as _import_error:
    raise ImportError(install_hint("openai", "openai")) from _import_error

_REASONING_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})
_INCOMPLETE_REASONS: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}
_NO_EVENTS: tuple[ProviderEvent, ...] = ()


class OpenAIResponsesProvider(SdkAdapter):
    """The OpenAI Responses API (provider ``openai``). ``http_client``: an
    ``httpx2.AsyncClient`` to send through (a proxy, a custom transport, tests)."""

    def __init__(
        self, config: AdapterConfig, *, http_client: httpx2.AsyncClient | None = None
    ) -> None:
        self.name = config.name
        self.config = config
        self.client = make_client(config, http_client)

    def request_params(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments of ``responses.create`` for ``request``."""
        params: dict[str, Any] = {
            "model": request.model,
            "input": input_items(request.messages),
            "stream": True,
        }
        if request.system:
            params["instructions"] = request.system
        if request.tools:
            params["tools"] = [function_tool(tool) for tool in request.tools]
        level = (request.thinking_level or "off").lower()
        if level in _REASONING_EFFORTS:
            params["reasoning"] = {"effort": level, "summary": "auto"}
            params["include"] = ["reasoning.encrypted_content"]
        if request.max_output_tokens is not None:
            params["max_output_tokens"] = request.max_output_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.idempotency_key:
            params["extra_headers"] = {"Idempotency-Key": request.idempotency_key}
        if request.extra_body:
            params["extra_body"] = dict(request.extra_body)
        return params

    async def _stream_once(self, params: dict[str, Any]) -> AsyncGenerator[ProviderEvent, None]:
        state = _ResponsesStream(self.config)
        handlers = state.handlers()
        try:
            events = await self.client.responses.create(**params)
            async with events:
                async for event in events:
                    if event.type == "response.output_text.delta":
                        yield TextDelta(text=event.delta)  # the hot path, inlined
                        continue
                    handler = handlers.get(event.type)
                    if handler is not None:
                        for mapped in handler(event):
                            yield mapped
        except openai.OpenAIError as error:
            raise map_error(self.config, error) from error
        if not state.finished:
            raise ProviderDisconnected(f"{self.name}: the stream ended before response.completed")


# --- request mapping -------------------------------------------------------------------------


def function_tool(tool: ToolSpec) -> FunctionToolParam:
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": False,
    }


def input_items(messages: Iterable[ChatMessage]) -> list[ResponseInputItemParam]:
    items: list[ResponseInputItemParam] = []
    for message in messages:
        if message.role == "assistant":
            items.extend(assistant_items(message.parts))
        else:
            items.extend(user_items(message))
    return items


def user_items(message: ChatMessage) -> list[ResponseInputItemParam]:
    """A user/system/tool message: its tool results, then its text and images."""
    items: list[ResponseInputItemParam] = [
        function_call_output(p) for p in message.parts if isinstance(p, ToolResultPart)
    ]
    content: list[ResponseInputContentParam] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            content.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart):
            content.append({"type": "input_image", "image_url": image_url(part), "detail": "auto"})
    if content:
        role: Literal["system", "user"] = "system" if message.role == "system" else "user"
        item: EasyInputMessageParam = {"type": "message", "role": role, "content": content}
        items.append(item)
    return items


def assistant_items(parts: Sequence[Part]) -> list[ResponseInputItemParam]:
    """An assistant message in output order: reasoning, text, function calls."""
    items: list[ResponseInputItemParam] = []
    text: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            text.append(part.text)
            continue
        _flush_text(text, items)
        if isinstance(part, ReasoningPart):
            reasoning = reasoning_item(part)
            if reasoning is not None:
                items.append(reasoning)
        elif isinstance(part, ToolCallPart):
            items.append(function_call(part))
        elif isinstance(part, ToolResultPart):
            items.append(function_call_output(part))
    _flush_text(text, items)
    return items


def _flush_text(text: list[str], items: list[ResponseInputItemParam]) -> None:
    joined = "".join(text)
    text.clear()
    if joined:
        message: EasyInputMessageParam = {"type": "message", "role": "assistant", "content": joined}
        items.append(message)


def reasoning_item(part: ReasoningPart) -> ResponseReasoningItemParam | None:
    """The reasoning item to echo back, or None when it did not come from this API."""
    data = part.provider_data
    if not data or data.get("type") != "reasoning" or not data.get("id"):
        return None
    item: ResponseReasoningItemParam = {
        "type": "reasoning",
        "id": str(data["id"]),
        "summary": list(data.get("summary") or []),
    }
    if data.get("encrypted_content"):
        item["encrypted_content"] = str(data["encrypted_content"])
    return item


def function_call(part: ToolCallPart) -> ResponseFunctionToolCallParam:
    return {
        "type": "function_call",
        "call_id": part.tool_call_id,
        "name": part.name,
        "arguments": dump_arguments(part.arguments),
    }


def function_call_output(part: ToolResultPart) -> FunctionCallOutput:
    return {"type": "function_call_output", "call_id": part.tool_call_id, "output": part.output}


# --- stream mapping --------------------------------------------------------------------------

Handler = Callable[[Any], Sequence[ProviderEvent]]


@dataclass
class _ResponsesStream:
    """The state of one streamed response; one small handler per wire event type."""

    config: AdapterConfig
    calls: dict[str, ResponseFunctionToolCall] = field(default_factory=dict)  # by item id
    started: int = 0  # tool calls started, for ToolCallStart.index
    tool_calls: int = 0  # tool calls ended
    finished: bool = False

    def handlers(self) -> dict[str, Handler]:
        return {
            "response.created": self.on_created,
            "response.output_text.delta": self.on_text,
            "response.refusal.delta": self.on_refusal,
            "response.reasoning_summary_part.added": self.on_summary_part,
            "response.reasoning_summary_text.delta": self.on_reasoning,
            "response.reasoning_text.delta": self.on_reasoning,
            "response.output_item.added": self.on_item_added,
            "response.function_call_arguments.delta": self.on_arguments,
            "response.output_item.done": self.on_item_done,
            "response.completed": self.on_completed,
            "response.incomplete": self.on_incomplete,
            "response.failed": self.on_failed,
            "error": self.on_error,
        }

    def on_created(self, event: ResponseCreatedEvent) -> Sequence[ProviderEvent]:
        return (ResponseId(id=event.response.id),)

    def on_text(self, event: ResponseTextDeltaEvent) -> Sequence[ProviderEvent]:
        return (TextDelta(text=event.delta),)

    def on_refusal(self, event: ResponseRefusalDeltaEvent) -> Sequence[ProviderEvent]:
        return (TextDelta(text=event.delta),)

    def on_summary_part(
        self, event: ResponseReasoningSummaryPartAddedEvent
    ) -> Sequence[ProviderEvent]:
        # summary parts are joined by a blank line, as in ReasoningDone.text
        return (ReasoningDelta(text="\n\n"),) if event.summary_index > 0 else _NO_EVENTS

    def on_reasoning(
        self, event: ResponseReasoningSummaryTextDeltaEvent | ResponseReasoningTextDeltaEvent
    ) -> Sequence[ProviderEvent]:
        return (ReasoningDelta(text=event.delta),)

    def on_item_added(self, event: ResponseOutputItemAddedEvent) -> Sequence[ProviderEvent]:
        item = event.item
        if not isinstance(item, ResponseFunctionToolCall):
            return _NO_EVENTS
        self.calls[item.id or item.call_id] = item
        self.started += 1
        return (ToolCallStart(tool_call_id=item.call_id, name=item.name, index=self.started - 1),)

    def on_arguments(
        self, event: ResponseFunctionCallArgumentsDeltaEvent
    ) -> Sequence[ProviderEvent]:
        call = self.calls.get(event.item_id)
        if call is None or not event.delta:
            return _NO_EVENTS
        return (ToolCallArgsDelta(tool_call_id=call.call_id, delta=event.delta),)

    def on_item_done(self, event: ResponseOutputItemDoneEvent) -> Sequence[ProviderEvent]:
        item = event.item
        if isinstance(item, ResponseFunctionToolCall):
            self.calls.pop(item.id or item.call_id, None)
            self.tool_calls += 1
            return (tool_call_end(item.call_id, item.name, item.arguments),)
        if isinstance(item, ResponseReasoningItem):
            return (reasoning_done(item),)
        return _NO_EVENTS

    def on_completed(self, event: ResponseCompletedEvent) -> Sequence[ProviderEvent]:
        reason: FinishReason = "tool_calls" if self.tool_calls else "stop"
        return self._finish(event.response, reason, "completed")

    def on_incomplete(self, event: ResponseIncompleteEvent) -> Sequence[ProviderEvent]:
        details = event.response.incomplete_details
        raw = (details.reason if details else None) or "incomplete"
        return self._finish(event.response, _INCOMPLETE_REASONS.get(raw, "other"), raw)

    def _finish(
        self, response: Response, reason: FinishReason, raw: str
    ) -> Sequence[ProviderEvent]:
        self.finished = True
        finish = Finish(reason=reason, raw_reason=raw)
        if response.usage is None:
            return (finish,)
        return (responses_usage(response.usage), finish)

    def on_failed(self, event: ResponseFailedEvent) -> Sequence[ProviderEvent]:
        error = event.response.error
        code = error.code if error else None
        message = error.message if error else "response.failed without details"
        raise stream_error(self.config, code, message, retryable=code in RETRYABLE_STREAM_CODES)

    def on_error(self, event: ResponseErrorEvent) -> Sequence[ProviderEvent]:
        retryable = event.code in RETRYABLE_STREAM_CODES
        raise stream_error(self.config, event.code, event.message, retryable=retryable)


def reasoning_done(item: ResponseReasoningItem) -> ReasoningDone:
    """A finished reasoning item, with what the API needs echoed back on the next turn."""
    texts = [s.text for s in item.summary] or [c.text for c in item.content or []]
    data: dict[str, Any] = {
        "type": "reasoning",
        "id": item.id,
        "summary": [{"type": "summary_text", "text": s.text} for s in item.summary],
    }
    if item.encrypted_content:
        data["encrypted_content"] = item.encrypted_content
    return ReasoningDone(text="\n\n".join(texts), provider_data=data)


def responses_usage(usage: ResponseUsage) -> Usage:
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.input_tokens_details.cached_tokens,
        reasoning_tokens=usage.output_tokens_details.reasoning_tokens,
    )
