"""What both OpenAI wire APIs read off the wire share (``wire = "http"``, the default).

The request the SDK path would send (its body, ``extra_body`` merged in as the SDK's
``extra_json`` does, ``Authorization: Bearer``, ``Idempotency-Key``) is POSTed with httpx2 (the
SDK's own HTTP client, without the SDK, over ``h1_transport.H1Transport``: llhttp instead of h11,
see there); the SSE stream is cut into events from the raw bytes
(``sse.py``) and each event decoded by orjson into a dict, which a subclass maps onto
``ProviderEvent``s. No ``openai`` import: the per-event model validation that costs the SDK
most of its CPU is what this path leaves out. Errors map to the same typed errors as
``_openai_common.map_error``: an HTTP error status through ``http_error`` (with the body shape
the SDK passes: the inner ``error`` object), a transport failure or timeout to
``ProviderDisconnected``, an ``error`` object at the top of an event to ``stream_error``; the
retries are the same ``stream_with_retry``. ``tests/providers/test_providers_wire.py`` runs
recorded streams through both paths and compares what they yield.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import Any

import httpx2
import orjson

from agi_jupyter import __version__
from agi_jupyter.errors import ProviderError
from agi_jupyter.providers._common import (
    RETRYABLE_STREAM_CODES,
    AdapterConfig,
    connection_error,
    http_error,
    stream_error,
)
from agi_jupyter.providers.base import ProviderEvent, ProviderRequest
from agi_jupyter.providers.h1_transport import raw_body, stream_client
from agi_jupyter.providers.retry import stream_with_retry
from agi_jupyter.providers.sse import SseEvent, sse_events

STREAM_ERROR = "An error occurred during streaming"  # the SDK's message for an error without one
# One attempt: the encoded body and the headers in, the mapped events out.
Attempt = Callable[[bytes, Mapping[str, str]], AsyncGenerator[ProviderEvent, None]]
EventMapper = Callable[[AsyncIterator[SseEvent]], AsyncGenerator[ProviderEvent, None]]


class HttpAdapter(ABC):
    """A wire API read with httpx2 and orjson (OpenAI's and Anthropic's): the client, the body
    encoded once, the retries, transport errors. Subclasses name the endpoint, build the
    request (``request_params``, as the SDK path's) and read one attempt (``_stream_once``).
    ``http_client``: an ``httpx2.AsyncClient`` to send through (a proxy, a transport, tests)."""

    path: str  # the endpoint under the base URL, e.g. "chat/completions"

    def __init__(self, config: AdapterConfig, *, http_client: httpx2.AsyncClient | None = None):
        self.name = config.name
        self.config = config
        self.client = http_client or stream_client(config.timeout)
        self._url = self.base_url + self.path
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

    @abstractmethod
    def request_params(self, request: ProviderRequest) -> dict[str, Any]:
        """What the SDK path would pass to its ``create`` (extra headers and body apart)."""

    @abstractmethod
    def _stream_once(
        self, content: bytes, headers: Mapping[str, str]
    ) -> AsyncGenerator[ProviderEvent, None]:
        """One attempt: POST ``content`` and map the answer's stream onto ``ProviderEvent``s."""

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        body, headers = self.request_body(request)
        content = orjson.dumps(body)  # encoded once: a retry sends the same bytes
        attempt = self._attempt(body)
        return stream_with_retry(lambda: attempt(content, headers), self.config.retry)

    def _attempt(self, body: Mapping[str, Any]) -> Attempt:
        """How one attempt at ``body`` is read (a subclass may read some bodies otherwise)."""
        return self._stream_once

    def request_body(self, request: ProviderRequest) -> tuple[dict[str, Any], dict[str, str]]:
        """The body the SDK path would send (``extra_body`` merged in as its ``extra_json``
        does) and the headers."""
        params = self.request_params(request)
        headers = {**self._headers, **params.pop("extra_headers", {})}
        extra = params.pop("extra_body", {})
        return {**params, **extra}, headers

    async def aclose(self) -> None:
        await self.client.aclose()

    def _disconnected(self, error: httpx2.RequestError) -> ProviderError:
        return connection_error(self.config, error, type(error).__name__)


class OpenAIHttpAdapter(HttpAdapter):
    """An OpenAI wire API: subclasses map decoded events (``_events``)."""

    @abstractmethod
    def _events(self, sses: AsyncIterator[SseEvent]) -> AsyncGenerator[ProviderEvent, None]:
        """Map one response's events (``data`` JSON, ``[DONE]`` excluded) onto ours."""

    async def _stream_once(
        self,
        content: bytes,
        headers: Mapping[str, str],
        *,
        method: str = "POST",
        url: str | None = None,
        events: EventMapper | None = None,
    ) -> AsyncGenerator[ProviderEvent, None]:
        """One request (by default: POST ``content`` to the endpoint) and its stream mapped by
        ``events`` (by default ``_events``)."""
        mapped = events or self._events
        try:
            async with self.client.stream(
                method, url or self._url, content=content, headers=headers
            ) as response:
                if response.status_code >= 400:
                    raise self._status_error(response, await response.aread())
                async for event in mapped(_until_done(sse_events(body_chunks(response)))):
                    yield event
        except httpx2.TransportError as error:
            raise self._disconnected(error) from error
        except orjson.JSONDecodeError as error:
            raise ProviderError(
                f"{self.name}: the stream sent an event that is not JSON"
            ) from error

    # --- errors, as _openai_common.map_error maps the SDK's ------------------------------------

    def in_stream_error(self, error: object) -> ProviderError:
        """The typed error of an ``error`` object at the top of a streamed event."""
        message = error.get("message") if isinstance(error, Mapping) else None
        if not message or not isinstance(message, str):
            message = STREAM_ERROR
        raw_code = error.get("code") if isinstance(error, Mapping) else None
        code = str(raw_code) if raw_code is not None else None
        retryable = code in RETRYABLE_STREAM_CODES or (code or "").startswith(("429", "5"))
        return stream_error(self.config, code, message, retryable=retryable)

    def _status_error(self, response: httpx2.Response, raw: bytes) -> ProviderError:
        body: object = raw.decode("utf-8", "replace").strip()
        with contextlib.suppress(orjson.JSONDecodeError):
            body = orjson.loads(raw)
        fallback = f"Error code: {response.status_code} - {body}"
        inner = body.get("error", body) if isinstance(body, Mapping) else body
        return http_error(self.config, response.status_code, response.headers, inner, fallback)


def body_chunks(response: httpx2.Response) -> AsyncGenerator[bytes, None]:
    """The body as it arrives: ``H1Transport``'s own iterator, or else httpx2's raw one (a layer
    less per chunk), unless the server compressed it or the body was already read (a transport
    that buffers it), when the decoded one."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity") and not response.is_stream_consumed:
        return raw_body(response) or response.aiter_raw()
    return response.aiter_bytes()


async def _until_done(events: AsyncIterator[SseEvent]) -> AsyncIterator[SseEvent]:
    """The events before ``[DONE]``; the rest of the body is still read, so the connection
    goes back to the pool (the SDK drains it too)."""
    done = False
    async for event in events:
        if done:
            continue
        if event.data.startswith(b"[DONE]"):
            done = True
            continue
        yield event
