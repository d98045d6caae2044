"""Anthropic Messages (``POST /v1/messages``, streamed raw events) -> ``ProviderEvent``s.

This is the SDK wire path (``wire = "sdk"``), the reference for the HTTP path
(``anthropic_http.py``); the request both send (history, tools, thinking budgets) is built by
``anthropic_mapping.messages_params``. The message id is yielded with ``message_start``. A stream
without ``message_stop`` is a ``ProviderDisconnected``, and so is a dropped connection (the SDK
raises a bare ``httpx2`` error for it).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agi_jupyter.errors import ProviderDisconnected, ProviderError
from agi_jupyter.providers._common import (
    AdapterConfig,
    SdkAdapter,
    connection_error,
    dump_arguments,
    http_error,
    install_hint,
    tool_call_end,
)
from agi_jupyter.providers.anthropic_mapping import (
    STOP_REASONS,
    STREAM_ERROR_STATUS,
    Block,
    messages_params,
)
from agi_jupyter.providers.base import (
    Finish,
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
from agi_jupyter.providers.hosted import ServerToolUses, is_result_block

try:
    import anthropic
    import httpx2
    from anthropic.types import (
        RawContentBlockDeltaEvent,
        RawContentBlockStartEvent,
        RawContentBlockStopEvent,
        RawMessageDeltaEvent,
        RawMessageStartEvent,
        RawMessageStopEvent,
        ServerToolUseBlock,
    )
except ImportError as _import_error:
    raise ImportError(install_hint("anthropic", "anthropic")) from _import_error

_NO_EVENTS: tuple[ProviderEvent, ...] = ()

Handler = Callable[[Any], Sequence[ProviderEvent]]


class AnthropicProvider(SdkAdapter):
    """The Anthropic Messages API (provider ``anthropic``). ``http_client``: an
    ``httpx2.AsyncClient`` to send through (a proxy, a custom transport, tests)."""

    def __init__(
        self, config: AdapterConfig, *, http_client: httpx2.AsyncClient | None = None
    ) -> None:
        self.name = config.name
        self.config = config
        self.client = anthropic.AsyncAnthropic(
            api_key=config.api_key,
            base_url=config.base_url,
            timeout=config.timeout,
            max_retries=0,
            http_client=http_client,
        )

    def request_params(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``."""
        return messages_params(request)

    async def _stream_once(self, params: dict[str, Any]) -> AsyncGenerator[ProviderEvent, None]:
        state = _MessagesStream()
        handlers = state.handlers()
        try:
            events = await self.client.messages.create(**params)
            async with events:
                async for event in events:
                    if event.type == "content_block_delta" and event.delta.type == "text_delta":
                        yield TextDelta(text=event.delta.text)  # the hot path, inlined
                        continue
                    handler = handlers.get(event.type)
                    if handler is not None:
                        for mapped in handler(event):
                            yield mapped
        except (anthropic.AnthropicError, httpx2.RequestError) as error:
            raise map_error(self.config, error) from error
        if not state.stopped:
            raise ProviderDisconnected(f"{self.name}: the stream ended before message_stop")


def map_error(config: AdapterConfig, error: Exception) -> ProviderError:
    """The typed error of an SDK exception, a dropped connection or an in-stream error event."""
    if isinstance(error, anthropic.APIStatusError):
        status = error.status_code
        if status < 400:  # an ``event: error`` inside the stream
            status = STREAM_ERROR_STATUS.get(error.type or "", 500)
        return http_error(config, status, error.response.headers, error.body, error.message)
    if isinstance(error, anthropic.APIConnectionError | httpx2.RequestError):
        cause = error.__cause__ if isinstance(error, anthropic.APIConnectionError) else error
        return connection_error(config, error, type(cause).__name__ if cause else "connection")
    return ProviderError(f"{config.name}: {config.redact(str(error))}")


# --- stream mapping --------------------------------------------------------------------------


@dataclass
class _MessagesStream:
    """The state of one streamed message."""

    blocks: dict[int, Block] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    tool_calls: int = 0
    cache_written: int = 0
    stopped: bool = False
    server_tools: ServerToolUses = field(default_factory=ServerToolUses)

    def handlers(self) -> dict[str, Handler]:
        return {
            "content_block_delta": self.on_delta,
            "content_block_start": self.on_block_start,
            "content_block_stop": self.on_block_stop,
            "message_start": self.on_message_start,
            "message_delta": self.on_message_delta,
            "message_stop": self.on_message_stop,
        }

    def on_message_start(self, event: RawMessageStartEvent) -> Sequence[ProviderEvent]:
        usage = event.message.usage
        cached = usage.cache_read_input_tokens or 0
        self.cache_written = usage.cache_creation_input_tokens or 0
        self.usage.input_tokens = usage.input_tokens + cached + self.cache_written
        self.usage.cached_input_tokens = cached
        self.usage.output_tokens = usage.output_tokens
        return (ResponseId(id=event.message.id),)

    def on_block_start(self, event: RawContentBlockStartEvent) -> Sequence[ProviderEvent]:
        block = event.content_block
        if block.type == "tool_use":
            self.blocks[event.index] = Block(
                "tool_use", id=block.id, name=block.name, initial_input=block.input
            )
            self.tool_calls += 1
            return (
                ToolCallStart(tool_call_id=block.id, name=block.name, index=self.tool_calls - 1),
            )
        if block.type == "thinking":
            self.blocks[event.index] = Block("thinking", chunks=[block.thinking])
            return (ReasoningDelta(text=block.thinking),) if block.thinking else _NO_EVENTS
        if block.type == "redacted_thinking":
            data = {"type": "redacted_thinking", "data": block.data}
            return (ReasoningDone(text="", provider_data=data),)
        if block.type == "text" and block.text:
            return (TextDelta(text=block.text),)
        if isinstance(block, ServerToolUseBlock):
            self.blocks[event.index] = Block("server_tool_use", opened=block.to_dict())
        elif is_result_block(block.type):
            return (self.server_tools.answered(block.to_dict()),)
        return _NO_EVENTS

    def on_delta(self, event: RawContentBlockDeltaEvent) -> Sequence[ProviderEvent]:
        delta = event.delta
        if delta.type == "text_delta":
            return (TextDelta(text=delta.text),)
        block = self.blocks.get(event.index)
        if block is None:
            return _NO_EVENTS
        if delta.type == "input_json_delta" and delta.partial_json:
            block.chunks.append(delta.partial_json)
            if block.kind != "tool_use":
                return _NO_EVENTS  # a server tool's input: the call shows when it is answered
            return (ToolCallArgsDelta(tool_call_id=block.id, delta=delta.partial_json),)
        if delta.type == "thinking_delta" and delta.thinking:
            block.chunks.append(delta.thinking)
            return (ReasoningDelta(text=delta.thinking),)
        if delta.type == "signature_delta":
            block.signature = delta.signature
        return _NO_EVENTS

    def on_block_stop(self, event: RawContentBlockStopEvent) -> Sequence[ProviderEvent]:
        block = self.blocks.pop(event.index, None)
        if block is None:
            return _NO_EVENTS
        text = "".join(block.chunks)
        if block.kind == "tool_use":
            if not text and block.initial_input:
                text = dump_arguments(block.initial_input)
            return (tool_call_end(block.id, block.name, text),)
        if block.kind == "server_tool_use":
            self.server_tools.used(block.opened, text)
            return _NO_EVENTS
        return (ReasoningDone(text=text, signature=block.signature),)

    def on_message_delta(self, event: RawMessageDeltaEvent) -> Sequence[ProviderEvent]:
        if event.delta.stop_reason is not None:
            self.stop_reason = event.delta.stop_reason
        usage = event.usage
        self.usage.output_tokens = usage.output_tokens
        if usage.input_tokens is not None:  # cumulative totals, when the API repeats them
            if usage.cache_read_input_tokens is not None:
                self.usage.cached_input_tokens = usage.cache_read_input_tokens
            if usage.cache_creation_input_tokens is not None:
                self.cache_written = usage.cache_creation_input_tokens
            cached = self.usage.cached_input_tokens
            self.usage.input_tokens = usage.input_tokens + cached + self.cache_written
        return _NO_EVENTS

    def on_message_stop(self, event: RawMessageStopEvent) -> Sequence[ProviderEvent]:
        self.stopped = True
        raw = self.stop_reason
        reason = STOP_REASONS.get(raw or "", "other")
        return (self.usage, Finish(reason=reason, raw_reason=raw))
