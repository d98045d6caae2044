"""Anthropic Messages read straight off the wire (``wire = "http"``, the default).

The request the SDK path sends (``anthropic_mapping.messages_params``: the body with
``extra_body`` merged in, the key as ``Authorization: Bearer`` and the ``anthropic-version``
as the SDK sends them, ``Idempotency-Key``) is POSTed to ``{base}/v1/messages`` with httpx2.
Each read of the body is cut into SSE events (``sse.SseCutter``), each event's JSON decoded by
orjson into a dict and mapped by ``anthropic_mapping.MessagesEvents``, a ``text_delta`` through
an inlined fast path, all in the read loop: no generator per layer. No ``anthropic`` import. As
the SDK does, events without an ``event:`` name and ``ping`` are skipped, and an
``event: error`` raises. Errors map as ``anthropic_messages.map_error`` maps the SDK's: an HTTP
error status through ``http_error`` with the whole error body and the SDK's message, an
``error`` event with the status its type stands for (``overloaded_error``: 529, retryable), a
transport failure, a timeout or a stream without ``message_stop`` to ``ProviderDisconnected``;
the retries are the same ``stream_with_retry``.
``tests/providers/test_providers_wire_anthropic.py`` runs recorded streams through both paths
and compares what they yield.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Any

import httpx2
import orjson

from agi_jupyter.errors import ProviderDisconnected, ProviderError
from agi_jupyter.providers._common import AdapterConfig, http_error
from agi_jupyter.providers.anthropic_mapping import (
    STREAM_ERROR_STATUS,
    Handler,
    MessagesEvents,
    messages_params,
)
from agi_jupyter.providers.base import ProviderEvent, ProviderRequest, TextDelta
from agi_jupyter.providers.openai_http import HttpAdapter, body_chunks
from agi_jupyter.providers.sse import SseCutter, SseEvent

# The API version the anthropic SDK (2.14.0) sends; a test checks it against the installed SDK.
ANTHROPIC_VERSION = "2026-10-21"


class AnthropicHttpProvider(HttpAdapter):
    """The Anthropic Messages API (provider ``anthropic``) read with httpx2 and orjson; what it
    shares with the OpenAI HTTP adapters (client, body encoding, retries, transport errors)
    comes from ``HttpAdapter``. ``http_client``: an ``httpx2.AsyncClient`` to send
    through (a proxy, a transport, tests)."""

    path = "v1/messages"

    def __init__(
        self, config: AdapterConfig, *, http_client: httpx2.AsyncClient | None = None
    ) -> None:
        super().__init__(config, http_client=http_client)
        # the key as ``Authorization: Bearer`` (set by the base), as the SDK (2.14) sends it
        self._headers["anthropic-version"] = ANTHROPIC_VERSION

    def request_params(self, request: ProviderRequest) -> dict[str, Any]:
        return messages_params(request)

    async def _stream_once(
        self, content: bytes, headers: Mapping[str, str]
    ) -> AsyncGenerator[ProviderEvent, None]:
        state = MessagesEvents()
        handlers, cutter = state.handlers(), SseCutter()
        try:
            async with self.client.stream(
                "POST", self._url, content=content, headers=headers
            ) as response:
                if response.status_code >= 400:
                    raise self._status_error(response, await response.aread())
                # the events of each read (at most 64 KiB) are cut and mapped in this loop: no
                # generator between the socket and the consumer but this one and the retries
                async with aclosing(body_chunks(response)) as chunks:
                    while True:
                        chunk = await anext(chunks, None)
                        sses = cutter.end() if chunk is None else cutter.feed(chunk)
                        events, error = self._map(sses, state, handlers, response)
                        for event in events:
                            yield event
                        if error is not None:
                            raise error
                        if chunk is None:
                            break
        except httpx2.RequestError as error:  # the SDK path maps every request error so
            raise self._disconnected(error) from error
        if not state.stopped:
            raise ProviderDisconnected(f"{self.name}: the stream ended before message_stop")

    def _map(
        self,
        sses: list[SseEvent],
        state: MessagesEvents,
        handlers: dict[str, Handler],
        response: httpx2.Response,
    ) -> tuple[list[ProviderEvent], ProviderError | None]:
        """The events of ``sses`` and the error that ends the stream after them, if any."""
        out: list[ProviderEvent] = []
        loads = orjson.loads
        try:
            for sse in sses:
                name = sse.event
                if name == "content_block_delta":
                    data = loads(sse.data)
                    delta = data["delta"]
                    if delta.get("type") == "text_delta":
                        out.append(TextDelta(text=delta["text"]))  # the hot path, inlined
                    else:
                        out.extend(state.on_delta(data))
                    continue
                if name is None or name == "ping" or not sse.data:
                    continue  # as the SDK: unnamed events and pings are skipped
                if name == "error":
                    return out, self._event_error(sse.data, response)
                data = loads(sse.data)
                handler = handlers.get(data.get("type") or "") if isinstance(data, dict) else None
                if handler is not None:
                    out.extend(handler(data))
        except orjson.JSONDecodeError:
            return out, ProviderError(f"{self.name}: the stream sent an event that is not JSON")
        return out, None

    # --- errors, as anthropic_messages.map_error maps the SDK's --------------------------------

    def _event_error(self, raw: bytes, response: httpx2.Response) -> ProviderError:
        """An ``event: error`` inside a 200 stream: the status its ``error.type`` stands for."""
        text = raw.decode("utf-8", "replace")
        body: object = text
        try:
            body = json.loads(text)
            message = f"{body}"
        except ValueError:
            message = text or "Error code: 200"
        inner = body.get("error") if isinstance(body, Mapping) else None
        kind = inner.get("type") if isinstance(inner, Mapping) else None
        status = STREAM_ERROR_STATUS.get(kind if isinstance(kind, str) else "", 500)
        return http_error(self.config, status, response.headers, body, message)

    def _status_error(self, response: httpx2.Response, raw: bytes) -> ProviderError:
        """An HTTP error status, with the body and message the SDK's status error carries."""
        text = raw.decode(response.encoding or "utf-8", "replace").strip()
        body: object = text
        try:
            body = json.loads(text)
            message = f"Error code: {response.status_code} - {body}"
        except ValueError:
            message = text or f"Error code: {response.status_code}"
        return http_error(self.config, response.status_code, response.headers, body, message)
