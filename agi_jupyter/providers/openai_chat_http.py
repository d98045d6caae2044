"""OpenAI Chat Completions read straight off the wire (``wire = "http"``, the default).

The same request as the SDK path (``chat_mapping.chat_params``: body, ``extra_body`` merged in
as the SDK's ``extra_json`` does, ``Authorization: Bearer``, ``Idempotency-Key``) is POSTed with
httpx2 (the SDK's own HTTP client, without the SDK); the SSE stream is cut into events from the
raw bytes (``sse.py``), each event decoded by orjson into a dict and mapped by
``chat_mapping.ChatChunks``. No ``openai`` import: the per-chunk model validation that costs the
SDK ~110 µs a chunk is what this path leaves out. Errors map to the same typed errors as
``_openai_common.map_error``: an HTTP error status through ``http_error`` (with the body shape
the SDK passes: the inner ``error`` object), a transport failure or timeout to
``ProviderDisconnected``, an ``error`` object in the stream to ``stream_error``; the retries are
the same ``stream_with_retry``. ``tests/providers/test_providers_wire.py`` runs recorded streams
through both paths and compares what they yield.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

import httpx2
import orjson

from agi_jupyter import __version__
from agi_jupyter.errors import ProviderDisconnected, ProviderError
from agi_jupyter.providers._common import (
    RETRYABLE_STREAM_CODES,
    AdapterConfig,
    http_error,
    stream_error,
)
from agi_jupyter.providers.base import ProviderEvent, ProviderRequest, TextDelta
from agi_jupyter.providers.chat_mapping import ChatChunks, chat_params
from agi_jupyter.providers.retry import stream_with_retry
from agi_jupyter.providers.sse import sse_events

STREAM_ERROR = "An error occurred during streaming"  # the SDK's message for an error without one


class HttpChatProvider:
    """A Chat Completions endpoint read with httpx2 and orjson. ``http_client``: an
    ``httpx2.AsyncClient`` to send through (a proxy, a transport, tests)."""

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
        self.client = http_client or httpx2.AsyncClient(
            timeout=httpx2.Timeout(config.timeout), follow_redirects=True
        )
        self._url = self.base_url + "chat/completions"
        self._headers = {
            "Accept": "application/json",
            "Content-Type": "application/json",
            "User-Agent": f"agi-jupyter/{__version__}",
            "Authorization": f"Bearer {config.api_key}",
        }

    @property
    def base_url(self) -> str:
        """The base URL with one trailing slash (as the SDK client keeps it)."""
        return self.config.base_url.rstrip("/") + "/"

    def request_params(self, request: ProviderRequest) -> dict[str, Any]:
        """What the SDK path would pass to ``create`` (extra headers and body still apart)."""
        return chat_params(request, openai_native=self.openai_native)

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        params = self.request_params(request)
        headers = {**self._headers, **params.pop("extra_headers", {})}
        extra = params.pop("extra_body", {})
        body = {**params, **extra}  # as the SDK's extra_json merges it
        content = orjson.dumps(body)  # encoded once: a retry sends the same bytes
        return stream_with_retry(lambda: self._stream_once(content, headers), self.config.retry)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def _stream_once(
        self, content: bytes, headers: Mapping[str, str]
    ) -> AsyncGenerator[ProviderEvent, None]:
        state = ChatChunks()
        plain_text, on_chunk, loads = state.plain_text, state.on_chunk, orjson.loads
        try:
            async with self.client.stream(
                "POST", self._url, content=content, headers=headers
            ) as response:
                if response.status_code >= 400:
                    raise self._status_error(response, await response.aread())
                done = False
                async for sse in sse_events(response.aiter_bytes()):
                    if done:
                        continue  # read to the end: the connection goes back to the pool
                    if sse.data.startswith(b"[DONE]"):
                        done = True
                        continue
                    chunk = loads(sse.data)
                    if isinstance(chunk, dict) and chunk.get("error"):
                        raise self._in_stream_error(chunk["error"])
                    text = plain_text(chunk)
                    if text is not None:
                        yield TextDelta(text=text)  # the hot path: nothing else to map
                        continue
                    for event in on_chunk(chunk):
                        yield event
        except httpx2.TransportError as error:
            raise self._disconnected(error) from error
        except orjson.JSONDecodeError as error:
            raise ProviderError(
                f"{self.name}: the stream sent an event that is not JSON"
            ) from error
        for event in state.finish(self.name):
            yield event

    # --- errors, as _openai_common.map_error maps the SDK's ------------------------------------

    def _status_error(self, response: httpx2.Response, raw: bytes) -> ProviderError:
        text = raw.decode("utf-8", "replace").strip()
        body: object = text
        with contextlib.suppress(orjson.JSONDecodeError):
            body = orjson.loads(raw)
        fallback = f"Error code: {response.status_code} - {body}"
        inner = body.get("error", body) if isinstance(body, Mapping) else body
        return http_error(self.config, response.status_code, response.headers, inner, fallback)

    def _in_stream_error(self, error: object) -> ProviderError:
        message = error.get("message") if isinstance(error, Mapping) else None
        if not message or not isinstance(message, str):
            message = STREAM_ERROR
        raw_code = error.get("code") if isinstance(error, Mapping) else None
        code = str(raw_code) if raw_code is not None else None
        retryable = code in RETRYABLE_STREAM_CODES or (code or "").startswith(("429", "5"))
        return stream_error(self.config, code, message, retryable=retryable)

    def _disconnected(self, error: httpx2.TransportError) -> ProviderDisconnected:
        detail = self.config.redact(str(error) or "Connection error.")
        return ProviderDisconnected(
            f"{self.name}: the connection to {self.base_url} failed or dropped "
            f"({type(error).__name__}: {detail})"
        )
