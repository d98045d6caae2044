"""From configured ``ProviderSettings`` to a ready ``Provider``.

The adapter is chosen by the provider's wire API and imported only here, on first use, so that
``import agi_jupyter.providers`` never imports an SDK. A provider that cannot work (disabled, no
key, ``compat`` without a base URL, SDK missing) raises ``ProviderNotConfigured`` with what to do;
the message names environment variables, never their values.
"""

from __future__ import annotations

import atexit
import threading
from typing import TYPE_CHECKING

from agi_jupyter.config import ProviderSettings, WirePath
from agi_jupyter.errors import ProviderNotConfigured
from agi_jupyter.model_specs import KNOWN_PROVIDERS
from agi_jupyter.providers._common import AdapterConfig
from agi_jupyter.providers.base import Provider
from agi_jupyter.providers.retry import RetryPolicy

if TYPE_CHECKING:
    from agi_jupyter.testing import FakeLLMServer

DEFAULT_BASE_URLS = {
    "openai-responses": "https://api.openai.com/v1",
    "openai-chat": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
NO_KEY = "not-needed"  # sent to servers that take no key (the SDKs insist on one)


def create_provider(
    settings: ProviderSettings,
    *,
    retry: RetryPolicy | None = None,
    timeout: float = 600,
    wire: WirePath = "http",
) -> Provider:
    """The adapter for ``settings`` (its wire API, base URL and key). ``wire``: how a stream
    (Chat Completions, Responses, Anthropic Messages) is read, ``"http"`` (httpx2 + orjson, no
    SDK) or ``"sdk"`` (the openai / anthropic SDK, the reference)."""
    _check_configured(settings)
    if settings.name == "fake":
        settings = _fake_settings(settings)
    config = AdapterConfig(
        name=settings.name,
        base_url=settings.base_url or DEFAULT_BASE_URLS[settings.wire],
        api_key=settings.api_key or NO_KEY,
        timeout=timeout,
        retry=retry or RetryPolicy(),
        key_hint=key_hint(settings.name),
    )
    try:
        return _adapter(settings, config, wire)
    except ImportError as e:
        raise ProviderNotConfigured(str(e)) from None


def _adapter(settings: ProviderSettings, config: AdapterConfig, wire: WirePath) -> Provider:
    if settings.wire == "openai-responses" and wire == "http":
        from agi_jupyter.providers.openai_responses_http import HttpResponsesProvider

        return HttpResponsesProvider(config)
    if settings.wire == "openai-responses":
        from agi_jupyter.providers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(config)
    if settings.wire == "anthropic" and wire == "http":
        from agi_jupyter.providers.anthropic_http import AnthropicHttpProvider

        return AnthropicHttpProvider(config)
    if settings.wire == "anthropic":
        from agi_jupyter.providers.anthropic_messages import AnthropicProvider

        return AnthropicProvider(config)
    native = settings.name == "openai-chat"
    if wire == "http":
        from agi_jupyter.providers.openai_chat_http import HttpChatProvider

        return HttpChatProvider(config, openai_native=native)
    from agi_jupyter.providers.openai_chat import OpenAIChatProvider

    return OpenAIChatProvider(config, openai_native=native)


def key_hint(name: str) -> str:
    """The environment variable(s) that hold a provider's key, for messages."""
    known = KNOWN_PROVIDERS.get(name)
    variables = known.key_env if known else ()
    return " or ".join(variables) if variables else f"the {name} API key"


def _check_configured(settings: ProviderSettings) -> None:
    name = settings.name
    if not settings.enabled:
        raise ProviderNotConfigured(
            f"provider {name!r} is disabled; set providers.{name}.enabled to true in "
            ".agi/config.json or ~/.config/agi/config.json"
        )
    if name == "compat" and not settings.base_url:
        variables = " or ".join(KNOWN_PROVIDERS["compat"].base_url_env)
        raise ProviderNotConfigured(
            f"provider 'compat' has no base URL; set {variables} (e.g. http://localhost:8080/v1) "
            "or providers.compat.base_url in .agi/config.json"
        )
    if not settings.configured:
        raise ProviderNotConfigured(
            f"provider {name!r} has no API key; set {key_hint(name)} in the environment "
            "or run `agi setup`"
        )


# --- the offline fake model ------------------------------------------------------------------

_fake_lock = threading.Lock()
_fake_server: FakeLLMServer | None = None


def _fake_settings(settings: ProviderSettings) -> ProviderSettings:
    """``fake`` points at ``AGI_FAKE_LLM_URL`` if set, else at a shared in-process server."""
    url = settings.base_url or shared_fake_server().url
    base_url = url.rstrip("/")
    if not base_url.endswith("/v1"):
        base_url += "/v1"
    return ProviderSettings(
        name=settings.name,
        wire=settings.wire,
        base_url=base_url,
        enabled=settings.enabled,
        requires_key=False,
        default_model=settings.default_model,
        api_key=settings.api_key or "fake-key",
    )


def shared_fake_server() -> FakeLLMServer:
    """The process's in-process fake LLM server, started on first use (thread-safe)."""
    global _fake_server
    with _fake_lock:
        if _fake_server is None:
            from agi_jupyter.testing import FakeLLMServer

            server = FakeLLMServer()
            server.start()
            atexit.register(server.stop)
            _fake_server = server
        return _fake_server
