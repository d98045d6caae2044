"""Helpers every adapter shares: its settings, tool-argument parsing, HTTP error mapping.

No SDK is imported here, so the registry and the tests can use it without openai/anthropic.
"""

from __future__ import annotations

import json
import socket
import ssl
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from time import time
from typing import Any

from agi_jupyter.errors import ProviderDisconnected, ProviderError, ProviderHTTPError
from agi_jupyter.providers.base import (
    MAX_TOOL_ARGUMENTS,
    ProviderEvent,
    ProviderRequest,
    ToolCallEnd,
)
from agi_jupyter.providers.retry import RetryPolicy, stream_with_retry
from agi_jupyter.records import ImagePart

MAX_DETAIL_CHARS = 500


@dataclass(frozen=True)
class AdapterConfig:
    """What an adapter needs to reach its API. ``api_key`` is never printed."""

    name: str
    base_url: str
    api_key: str = field(repr=False)
    timeout: float = 600.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    key_hint: str = "the provider's API key"  # e.g. "OPENAI_API_KEY", named in a 401 message

    def redact(self, text: str) -> str:
        """``text`` with the API key (if it appears at all) replaced by ``***``."""
        if self.api_key and len(self.api_key) >= 8 and self.api_key in text:
            return text.replace(self.api_key, "***")
        return text


def install_hint(package: str, provider: str) -> str:
    return (
        f"the {provider!r} provider needs the {package!r} package, which is not installed; "
        f"install it with: pip install {package}"
    )


def new_tool_call_id() -> str:
    """An id for a tool call the server sent without one (some OpenAI-compatible servers)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def tool_call_end(tool_call_id: str, name: str, raw: str) -> ToolCallEnd:
    """A finished tool call; arguments that are not a JSON object become a ``parse_error``."""
    if not raw.strip():
        return ToolCallEnd(tool_call_id=tool_call_id, name=name, arguments={}, raw_arguments=raw)
    size = len(raw.encode())
    if size > MAX_TOOL_ARGUMENTS:  # kept out of every record: a short head says what it was
        error = (
            f"arguments of {size:,} bytes are over the limit of {MAX_TOOL_ARGUMENTS:,}; "
            "write large content to a file in smaller calls"
        )
        head = raw[:200] + f"... [{size:,} bytes]"
        return ToolCallEnd(
            tool_call_id=tool_call_id,
            name=name,
            arguments={},
            raw_arguments=head,
            parse_error=error,
        )
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        error = f"arguments are not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})"
    else:
        if isinstance(value, dict):
            return ToolCallEnd(
                tool_call_id=tool_call_id, name=name, arguments=value, raw_arguments=raw
            )
        error = f"arguments must be a JSON object, not {type(value).__name__}"
    return ToolCallEnd(
        tool_call_id=tool_call_id, name=name, arguments={}, raw_arguments=raw, parse_error=error
    )


def image_url(part: ImagePart) -> str:
    """An image as a URL: its own, or a ``data:`` URL of its base64 bytes."""
    if part.url:
        return part.url
    return f"data:{part.mime};base64,{part.data_base64 or ''}"


# --- HTTP errors -----------------------------------------------------------------------------


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time())
    except (TypeError, ValueError):
        return None


# getaddrinfo's answers that say the name does not exist (EAI_AGAIN, a temporary failure of
# the resolver, is left retryable)
_UNKNOWN_HOST = frozenset(
    code
    for code in (getattr(socket, "EAI_NONAME", None), getattr(socket, "EAI_NODATA", None))
    if code is not None
)
_CHAIN_DEPTH = 12


def permanent_cause(error: BaseException) -> str | None:
    """Why a failed connection can never succeed on retry, or None when it may (a refused or
    dropped connection, a timeout, a resolver that is down for now).

    A certificate that fails verification, any other TLS handshake error (a plain-HTTP server
    answering a TLS hello, a protocol version the server refuses) and a host name that does
    not exist fail the same way every time. The cause is found in the exception chain (the
    SDKs and httpx2 wrap the ``ssl``/``socket`` error) or, where a transport kept only its
    text, in the message."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < _CHAIN_DEPTH:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return f"the server's TLS certificate failed verification ({current.verify_message})"
        if isinstance(current, ssl.SSLError) and not isinstance(
            current, ssl.SSLZeroReturnError | ssl.SSLEOFError | ssl.SSLSyscallError
        ):
            return f"the TLS handshake failed ({getattr(current, 'reason', None) or current})"
        if isinstance(current, socket.gaierror) and current.errno in _UNKNOWN_HOST:
            return "the host name cannot be resolved"
        current = current.__cause__ or current.__context__
    text = str(error)
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return "the server's TLS certificate failed verification"
    return None


def connection_error(config: AdapterConfig, error: BaseException, cause: str) -> ProviderError:
    """A failed or dropped connection: retryable (``ProviderDisconnected``) unless it can never
    succeed (``permanent_cause``), which fails at once with what to fix."""
    permanent = permanent_cause(error)
    if permanent is not None:
        return ProviderError(
            f"{config.name}: cannot connect to {config.base_url}: {permanent}; this does not "
            "change on retry: check the provider's base URL, or point SSL_CERT_FILE at the CA "
            "bundle that signed the server's certificate",
            retryable=False,
        )
    return ProviderDisconnected(
        f"{config.name}: the connection to {config.base_url} failed or dropped "
        f"({cause}: {config.redact(str(error) or 'connection error')})"
    )


def error_detail(body: object, fallback: str) -> str:
    """The human-readable message of an API error body (``{"error": {"message": ...}}``)."""
    message: object = None
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, Mapping) else inner
    text = str(message) if message else fallback
    return text[:MAX_DETAIL_CHARS]


def http_error(
    config: AdapterConfig, status: int, headers: Mapping[str, str], body: object, fallback: str
) -> ProviderHTTPError:
    """The typed error of an HTTP error answer; 401/403 say the key was rejected."""
    retry_after = parse_retry_after(headers)
    if status == 401:
        message = (
            f"{config.name} rejected the API key (HTTP 401); "
            f"check {config.key_hint} or run `agi setup`"
        )
        return ProviderHTTPError(message, status=status, retryable=False)
    if status == 403:
        message = (
            f"{config.name} refused the request with this API key (HTTP 403: no access to this "
            f"model or endpoint); check {config.key_hint} and the model name, or run `agi setup`"
        )
        return ProviderHTTPError(message, status=status, retryable=False)
    detail = config.redact(error_detail(body, fallback))
    retryable = None if status < 500 else not is_request_error(body)
    full = context_overflow(body)
    if full is not None:
        detail = f"the context window is full{full} (the server said: {detail})"
    return ProviderHTTPError(
        f"{config.name}: HTTP {status}: {detail}",
        status=status,
        retry_after=retry_after,
        retryable=retryable,
    )


def context_overflow(body: object) -> str | None:
    """Whether an error answer says the request does not fit the model's context window, and
    what it says of the tokens: llama.cpp's ``llama-server`` (``exceed_context_size_error``,
    with ``n_prompt_tokens`` and ``n_ctx``), OpenAI's ``context_length_exceeded``. None: some
    other error. Said as such, it is not mistaken for the output token limit."""
    if not isinstance(body, Mapping):
        return None
    inner = body.get("error", body)
    if not isinstance(inner, Mapping):
        return None
    if "exceed_context_size" not in str(inner.get("type")) and inner.get("code") != (
        "context_length_exceeded"
    ):
        return None
    prompt, window = inner.get("n_prompt_tokens"), inner.get("n_ctx")
    if isinstance(prompt, int) and isinstance(window, int):
        return f": the request has {prompt} tokens, the window {window} tokens"
    return ""


_VALIDATION_MARKERS = ("validation error", "validationerror", "invalid_request_error")


def is_request_error(body: object) -> bool:
    """Whether a 5xx answer blames the request itself: sending it again cannot succeed.

    llama-cpp-python's server answers a request its pydantic models reject with HTTP 500 and
    ``{"error": {"message": "1 validation error for ...", "type": "internal_server_error"}}``;
    FastAPI-based servers put a list of validation errors under ``detail``; some servers keep
    OpenAI's ``invalid_request_error`` type with a 5xx status."""
    if not isinstance(body, Mapping):
        return isinstance(body, str) and any(m in body.lower() for m in _VALIDATION_MARKERS)
    if isinstance(body.get("detail"), list):
        return True
    inner = body.get("error", body)
    if not isinstance(inner, Mapping):
        return isinstance(inner, str) and any(m in inner.lower() for m in _VALIDATION_MARKERS)
    text = f"{inner.get('type') or ''} {inner.get('message') or ''}".lower()
    return any(marker in text for marker in _VALIDATION_MARKERS)


def stream_error(
    config: AdapterConfig, code: str | None, message: str, *, retryable: bool
) -> ProviderError:
    """An error the API reported inside a stream (not as an HTTP status)."""
    label = f" ({code})" if code else ""
    detail = config.redact(message[:MAX_DETAIL_CHARS])
    return ProviderError(f"{config.name}: the model failed{label}: {detail}", retryable=retryable)


RETRYABLE_STREAM_CODES = frozenset(
    {"server_error", "rate_limit_exceeded", "vector_store_timeout", "overloaded_error", "api_error"}
)


def dump_arguments(arguments: Mapping[str, Any]) -> str:
    """Tool-call arguments as the compact JSON text the APIs take."""
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


class SdkAdapter(ABC):
    """What every adapter does the same way: the request is mapped once (a retry re-sends the
    same body), streamed through ``stream_with_retry``, and the SDK client closed at the end.
    Subclasses set ``name``, ``config`` and ``client`` (an SDK async client) and map."""

    name: str
    config: AdapterConfig
    client: Any

    @property
    def base_url(self) -> str:
        return str(self.client.base_url)

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        params = self.request_params(request)
        return stream_with_retry(lambda: self._stream_once(params), self.config.retry)

    async def aclose(self) -> None:
        await self.client.close()

    @abstractmethod
    def request_params(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments of the SDK's create call for ``request``."""

    @abstractmethod
    def _stream_once(self, params: dict[str, Any]) -> AsyncGenerator[ProviderEvent, None]:
        """One attempt: send ``params`` and map the SDK's stream onto ProviderEvents."""
