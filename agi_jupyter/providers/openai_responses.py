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

from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agi_jupyter.errors import ProviderDisconnected
from agi_jupyter.providers._common import (
    RETRYABLE_STREAM_CODES,
    AdapterConfig,
    SdkAdapter,
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
    Usage,
)
from agi_jupyter.providers.hosted import RESPONSES_ITEMS, responses_call
from agi_jupyter.providers.responses_mapping import (
    INCOMPLETE_REASONS,
    MAX_RESUMES,
    responses_params,
)

try:
    import httpx2
    import openai
    from openai.types.responses import (
        ResponseCompletedEvent,
        ResponseCreatedEvent,
        ResponseErrorEvent,
        ResponseFailedEvent,
        ResponseFunctionCallArgumentsDeltaEvent,
        ResponseFunctionToolCall,
        ResponseIncompleteEvent,
        ResponseOutputItemAddedEvent,
        ResponseOutputItemDoneEvent,
        ResponseReasoningItem,
        ResponseReasoningSummaryPartAddedEvent,
        ResponseReasoningSummaryTextDeltaEvent,
        ResponseReasoningTextDeltaEvent,
        ResponseRefusalDeltaEvent,
        ResponseTextDeltaEvent,
        ResponseUsage,
    )
    from openai.types.responses.response import Response
except ImportError as _import_error:
    raise ImportError(install_hint("openai", "openai")) from _import_error

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
        return responses_params(request)

    async def _stream_once(self, params: dict[str, Any]) -> AsyncGenerator[ProviderEvent, None]:
        """One attempt; a background response's stream is resumed where it dropped (as on the
        HTTP path: ``openai_responses_http.py``)."""
        background = (
            params.get("background") is True
            or (params.get("extra_body") or {}).get("background") is True
        )
        state = _ResponsesStream(self.config, resumable=background)
        resumes = 0
        while True:
            try:
                async for event in self._read(params, state):
                    yield event
                break
            except ProviderDisconnected:
                if not state.resumable or state.response_id is None or resumes >= MAX_RESUMES:
                    raise
                resumes += 1
        if not state.finished:
            raise ProviderDisconnected(f"{self.name}: the stream ended before response.completed")

    async def _read(
        self, params: dict[str, Any], state: _ResponsesStream
    ) -> AsyncGenerator[ProviderEvent, None]:
        """The response's stream: created, or resumed after the last event ``state`` read."""
        handlers = state.handlers()
        try:
            if state.response_id is None:
                events = await self.client.responses.create(**params)
            else:
                events = await self.client.responses.retrieve(
                    state.response_id, stream=True, starting_after=state.sequence_number
                )
            async with events:
                async for event in events:
                    if state.resumable:  # note where the stream is
                        number = getattr(event, "sequence_number", None)
                        if isinstance(number, int):
                            if number <= state.sequence_number:
                                continue
                            state.sequence_number = number
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


# --- stream mapping --------------------------------------------------------------------------

Handler = Callable[[Any], Sequence[ProviderEvent]]


@dataclass
class _ResponsesStream:
    """The state of one streamed response; one small handler per wire event type."""

    config: AdapterConfig
    resumable: bool = False  # a background response: a dropped stream is resumed
    calls: dict[str, ResponseFunctionToolCall] = field(default_factory=dict)  # by item id
    started: int = 0  # tool calls started, for ToolCallStart.index
    tool_calls: int = 0  # tool calls ended
    finished: bool = False
    response_id: str | None = None  # once response.created said it
    sequence_number: int = -1  # of the last event read (a resumed stream starts after it)

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
        self.response_id = event.response.id
        self.sequence_number = max(self.sequence_number, event.sequence_number)
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
        if item.type in RESPONSES_ITEMS:  # a hosted tool's call, run by the provider
            hosted = responses_call(item.to_dict())
            return _NO_EVENTS if hosted is None else (hosted,)
        return _NO_EVENTS

    def on_completed(self, event: ResponseCompletedEvent) -> Sequence[ProviderEvent]:
        reason: FinishReason = "tool_calls" if self.tool_calls else "stop"
        return self._finish(event.response, reason, "completed")

    def on_incomplete(self, event: ResponseIncompleteEvent) -> Sequence[ProviderEvent]:
        details = event.response.incomplete_details
        raw = (details.reason if details else None) or "incomplete"
        return self._finish(event.response, INCOMPLETE_REASONS.get(raw, "other"), raw)

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
