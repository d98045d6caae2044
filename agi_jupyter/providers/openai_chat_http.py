"""OpenAI Chat Completions read straight off the wire (``wire = "http"``, the default).

``openai_http.OpenAIHttpAdapter`` sends the request and cuts the stream into events; here each
event's JSON becomes a dict that ``chat_mapping.ChatChunks`` maps with the same rules as the SDK
path (``openai_chat.py``, the reference), a text-only chunk through its fast path. No ``openai``
import.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import httpx2
import orjson

from agi_jupyter.providers._common import AdapterConfig
from agi_jupyter.providers.base import ProviderEvent, ProviderRequest, TextDelta
from agi_jupyter.providers.chat_mapping import ChatChunks, chat_params
from agi_jupyter.providers.openai_http import OpenAIHttpAdapter
from agi_jupyter.providers.sse import SseEvent


class HttpChatProvider(OpenAIHttpAdapter):
    """A Chat Completions endpoint read with httpx2 and orjson. ``openai_native`` turns on
    OpenAI-only request fields, as for ``OpenAIChatProvider``."""

    path = "chat/completions"

    def __init__(
        self,
        config: AdapterConfig,
        *,
        openai_native: bool = False,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        super().__init__(config, http_client=http_client)
        self.openai_native = openai_native

    def request_params(self, request: ProviderRequest) -> dict[str, Any]:
        return chat_params(request, openai_native=self.openai_native)

    async def _events(self, sses: AsyncIterator[SseEvent]) -> AsyncGenerator[ProviderEvent, None]:
        state = ChatChunks()
        plain_text, on_chunk, loads = state.plain_text, state.on_chunk, orjson.loads
        async for sse in sses:
            chunk = loads(sse.data)
            if isinstance(chunk, dict) and chunk.get("error"):
                raise self.in_stream_error(chunk["error"])
            text = plain_text(chunk)
            if text is not None:
                yield TextDelta(text=text)  # the hot path: nothing else to map
                continue
            for event in on_chunk(chunk):
                yield event
        for event in state.finish(self.name):
            yield event
