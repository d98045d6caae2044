"""OpenAI Responses read straight off the wire (``wire = "http"``, the default).

``openai_http.OpenAIHttpAdapter`` sends the request and cuts the stream into events; here each
event's JSON becomes a dict that ``responses_mapping.ResponsesEvents`` maps with the same rules
as the SDK path (``openai_responses.py``, the reference), text deltas through a fast path. No
``openai`` import.

A background response (``background: true`` in the body, e.g. a model's ``extra_body``) keeps
running when its stream drops: once its id is known, a dropped stream is resumed where it broke
(``GET /responses/{id}?stream=true&starting_after=<last sequence number>``, at most
``MAX_RESUMES`` times) instead of paying for the whole answer again; the events read before the
drop are not read twice, so whoever reads the stream sees one answer, with no reset.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from agi_jupyter.errors import ProviderDisconnected
from agi_jupyter.providers.base import ProviderEvent, ProviderRequest, ResponseId, TextDelta
from agi_jupyter.providers.openai_http import Attempt, OpenAIHttpAdapter
from agi_jupyter.providers.responses_mapping import MAX_RESUMES, ResponsesEvents, responses_params
from agi_jupyter.providers.sse import SseEvent

log = logging.getLogger(__name__)


@dataclass
class StreamCursor:
    """Where a response's stream is: its id (once ``response.created`` said it) and the
    sequence number of the last event read."""

    response_id: str | None = None
    sequence_number: int = -1


class HttpResponsesProvider(OpenAIHttpAdapter):
    """The OpenAI Responses API read with httpx2 and orjson."""

    path = "responses"

    def request_params(self, request: ProviderRequest) -> dict[str, Any]:
        return responses_params(request)

    def _attempt(self, body: Mapping[str, Any]) -> Attempt:
        return self._resumable_once if body.get("background") is True else self._stream_once

    async def _resumable_once(
        self, content: bytes, headers: Mapping[str, str]
    ) -> AsyncGenerator[ProviderEvent, None]:
        """One attempt at a background response: its stream, resumed where it dropped."""
        state, cursor = ResponsesEvents(self.config), StreamCursor()

        def mapped(sses: AsyncIterator[SseEvent]) -> AsyncGenerator[ProviderEvent, None]:
            return self._events(sses, state, cursor)

        events = self._stream_once(content, headers, events=mapped)
        resumes = 0
        while True:
            try:
                async for event in events:
                    yield event
                return
            except ProviderDisconnected as error:
                if cursor.response_id is None or resumes >= MAX_RESUMES:
                    raise
                resumes += 1
                log.info(
                    "%s: resuming %s after event %d (%s)",
                    self.name,
                    cursor.response_id,
                    cursor.sequence_number,
                    error,
                )
            url = (
                f"{self._url}/{cursor.response_id}?stream=true"
                f"&starting_after={cursor.sequence_number}"
            )
            events = self._stream_once(b"", headers, method="GET", url=url, events=mapped)

    async def _events(
        self,
        sses: AsyncIterator[SseEvent],
        state: ResponsesEvents | None = None,
        cursor: StreamCursor | None = None,
    ) -> AsyncGenerator[ProviderEvent, None]:
        """Map one stream's events; with a ``cursor`` (a background response), note where the
        stream is and pass over the events a resumed stream sends again."""
        state = state or ResponsesEvents(self.config)
        handlers, loads = state.handlers(), orjson.loads
        async for sse in sses:
            data = loads(sse.data)
            if isinstance(data, dict) and data.get("error"):
                raise self.in_stream_error(data["error"])
            kind = data.get("type") if isinstance(data, dict) else None
            if cursor is not None and kind:
                number = data.get("sequence_number")
                if isinstance(number, int):
                    if number <= cursor.sequence_number:
                        continue  # read before the stream dropped
                    cursor.sequence_number = number
            if kind == "response.output_text.delta":
                yield TextDelta(text=data["delta"])  # the hot path, inlined
                continue
            handler = handlers.get(kind or "")
            if handler is not None:
                for mapped in handler(data):
                    if cursor is not None and isinstance(mapped, ResponseId):
                        cursor.response_id = mapped.id
                    yield mapped
        if not state.finished:
            raise ProviderDisconnected(f"{self.name}: the stream ended before response.completed")
