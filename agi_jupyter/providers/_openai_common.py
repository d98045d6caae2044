"""What both OpenAI adapters share: the client and the mapping of the SDK's errors.

Imported only by the adapters, which the registry imports lazily; a missing ``openai`` package
is an ``ImportError`` carrying the install command.
"""

from __future__ import annotations

from agi_jupyter.errors import ProviderError
from agi_jupyter.providers._common import (
    RETRYABLE_STREAM_CODES,
    AdapterConfig,
    connection_error,
    http_error,
    install_hint,
    stream_error,
)

try:
    import httpx2
    import openai
except ImportError as _import_error:
    raise ImportError(install_hint("openai", "openai")) from _import_error


def make_client(
    config: AdapterConfig, http_client: httpx2.AsyncClient | None = None
) -> openai.AsyncOpenAI:
    """An SDK client that never retries by itself (``providers.retry`` does)."""
    return openai.AsyncOpenAI(
        api_key=config.api_key,
        base_url=config.base_url,
        timeout=config.timeout,
        max_retries=0,
        http_client=http_client,
    )


def map_error(config: AdapterConfig, error: openai.OpenAIError) -> ProviderError:
    """The typed error of an SDK exception (HTTP status, dropped connection, in-stream error)."""
    if isinstance(error, openai.APIStatusError):
        return http_error(
            config, error.status_code, error.response.headers, error.body, error.message
        )
    if isinstance(error, openai.APIConnectionError):
        cause = type(error.__cause__).__name__ if error.__cause__ else "connection error"
        return connection_error(config, error, cause)
    if isinstance(error, openai.APIError):  # an error object inside the stream
        code = error.code
        retryable = code in RETRYABLE_STREAM_CODES or (code or "").startswith(("429", "5"))
        return stream_error(config, code, error.message, retryable=retryable)
    return ProviderError(f"{config.name}: {config.redact(str(error))}")
