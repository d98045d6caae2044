"""OpenAI Chat Completions (``POST /chat/completions``, streamed) -> ``ProviderEvent``s.

Serves ``openai-chat`` and every OpenAI-compatible server (google, ollama, lmstudio, vllm,
openrouter, compat, fake) through its base URL. The history becomes ``system``/``user``/
``assistant`` messages, assistant tool calls become ``tool_calls`` and each tool result a
``role: tool`` message. Reasoning is read from ``delta.reasoning_content`` (vLLM, DeepSeek) or
``delta.reasoning`` (OpenRouter, Ollama); it is not sent back, as Chat Completions has no field
for it. A stream that ends without a ``finish_reason`` is a ``ProviderDisconnected``.

This is the SDK wire path (``wire = "sdk"``), the reference for the HTTP path
(``openai_chat_http.py``); the request mapping both send is in ``chat_mapping.py``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agi_jupyter.providers._common import (
    AdapterConfig,
    SdkAdapter,
    install_hint,
)
from agi_jupyter.providers._openai_common import make_client, map_error
from agi_jupyter.providers.base import (
    ProviderEvent,
    ProviderRequest,
    ResponseId,
    TextDelta,
    Usage,
)
from agi_jupyter.providers.chat_mapping import ChatStreamState, chat_params

try:
    import httpx2
    import openai
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.completion_usage import CompletionUsage
except ImportError as _import_error:
    raise ImportError(install_hint("openai", "openai")) from _import_error

if TYPE_CHECKING:
    from openai._types import RequestOptions  # a TypedDict: for the type checker only


class OpenAIChatProvider(SdkAdapter):
    """A Chat Completions endpoint. ``openai_native`` turns on OpenAI-only request fields
    (``reasoning_effort``, ``max_completion_tokens``); compatible servers get ``max_tokens``.
    ``http_client``: an ``httpx2.AsyncClient`` to send through (a proxy, a transport, tests)."""

    def __init__(
        self,
        config: AdapterConfig,
        *,
        openai_native: bool = False,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.name = config.name
        self.config = config
        self.openai_native = openai_native
        self.client = make_client(config, http_client)

    def request_params(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``."""
        return chat_params(request, openai_native=self.openai_native)

    async def _open(self, params: dict[str, Any]) -> openai.AsyncStream[ChatCompletionChunk]:
        """``chat.completions.create(**params)`` without the SDK's request ``transform``.

        ``create`` walks the whole request against its TypedDicts to apply field aliases and
        formats, none of which a chat request has: ~0.3 ms for two messages, ~11 ms for a
        76-message conversation with six tools, on every model turn, on the runtime thread.
        The body here is already plain JSON (``request_params``), so it goes through the
        client's documented ``post`` the way ``create`` sends it, with the same auth,
        headers, errors and typed stream (``tests/providers/test_providers_bodies.py`` checks
        that the body and headers equal ``create``'s)."""
        body = {k: v for k, v in params.items() if k not in ("extra_headers", "extra_body")}
        options: RequestOptions = {"security": {"bearer_auth": True}}
        if "extra_headers" in params:
            options["headers"] = params["extra_headers"]
        if "extra_body" in params:
            options["extra_json"] = params["extra_body"]
        chunks: openai.AsyncStream[ChatCompletionChunk] = await self.client.post(
            "/chat/completions",
            body=body,
            cast_to=ChatCompletion,
            options=options,
            stream=True,
            stream_cls=openai.AsyncStream[ChatCompletionChunk],
        )
        return chunks

    async def _stream_once(self, params: dict[str, Any]) -> AsyncGenerator[ProviderEvent, None]:
        state = _ChatStream()
        try:
            chunks = await self._open(params)
            async with chunks:
                async for chunk in chunks:
                    text = state.plain_text(chunk)
                    if text is not None:
                        yield TextDelta(text=text)  # the hot path: nothing else to map
                        continue
                    for event in state.on_chunk(chunk):
                        yield event
        except openai.OpenAIError as error:
            raise map_error(self.config, error) from error
        for event in state.finish(self.name):
            yield event


# --- stream mapping --------------------------------------------------------------------------


@dataclass
class _ChatStream(ChatStreamState):
    """One streamed completion read as the SDK's models (the reference path)."""

    def plain_text(self, chunk: ChatCompletionChunk) -> str | None:
        """The text of a chunk that carries only text (most of them), else None."""
        if not self.started or self.reasoning or chunk.usage is not None or not chunk.choices:
            return None
        choice = chunk.choices[0]
        delta = choice.delta
        if choice.finish_reason is None and not delta.tool_calls and not delta.model_extra:
            return delta.content or None
        return None

    def on_chunk(self, chunk: ChatCompletionChunk) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        if not self.started:
            self.started = True
            if chunk.id:
                events.append(ResponseId(id=chunk.id))
        if chunk.usage is not None:
            self.usage = sdk_usage(chunk.usage)
        if not chunk.choices:
            return events
        choice = chunk.choices[0]
        delta = choice.delta
        if delta.model_extra:
            extra = delta.model_extra
            self.add_reasoning(extra.get("reasoning_content") or extra.get("reasoning"), events)
        if delta.content:
            self.end_reasoning(events)
            events.append(TextDelta(text=delta.content))
        if delta.tool_calls:
            self.end_reasoning(events)
            for call in delta.tool_calls:
                function = call.function
                self.add_tool_call(
                    call.index,
                    call.id,
                    function.name if function else None,
                    function.arguments if function else None,
                    events,
                )
        if choice.finish_reason is not None:
            self.on_finish(choice.finish_reason, events)
        return events


def sdk_usage(usage: CompletionUsage) -> Usage:
    prompt = usage.prompt_tokens_details
    completion = usage.completion_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        cached_input_tokens=(prompt.cached_tokens or 0) if prompt else 0,
        reasoning_tokens=(completion.reasoning_tokens or 0) if completion else 0,
    )
