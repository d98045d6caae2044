"""OpenAI Responses read straight off the wire (``wire = "http"``, the default).

``openai_http.OpenAIHttpAdapter`` sends the request and cuts the stream into events; here each
event's JSON becomes a dict that ``responses_mapping.ResponsesEvents`` maps with the same rules
as the SDK path (``openai_responses.py``, the reference), text deltas through a fast path. No
``openai`` import.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import orjson

from agi_jupyter.errors import ProviderDisconnected
from agi_jupyter.providers.base import ProviderEvent, ProviderRequest, TextDelta
from agi_jupyter.providers.openai_http import OpenAIHttpAdapter
from agi_jupyter.providers.responses_mapping import ResponsesEvents, responses_params
from agi_jupyter.providers.sse import SseEvent


class HttpResponsesProvider(OpenAIHttpAdapter):
    """The OpenAI Responses API read with httpx2 and orjson."""

    path = "responses"

    def request_params(self, request: ProviderRequest) -> dict[str, Any]:
        return responses_params(request)

    async def _events(self, sses: AsyncIterator[SseEvent]) -> AsyncGenerator[ProviderEvent, None]:
        state = ResponsesEvents(self.config)
        handlers, loads = state.handlers(), orjson.loads
        async for sse in sses:
            data = loads(sse.data)
            if isinstance(data, dict) and data.get("error"):
                raise self.in_stream_error(data["error"])
            kind = data.get("type") if isinstance(data, dict) else None
            if kind == "response.output_text.delta":
                yield TextDelta(text=data["delta"])  # the hot path, inlined
                continue
            handler = handlers.get(kind or "")
            if handler is not None:
                for mapped in handler(data):
                    yield mapped
        if not state.finished:
            raise ProviderDisconnected(f"{self.name}: the stream ended before response.completed")
