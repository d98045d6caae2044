"""``create_provider``: the adapter and base URL per provider, helpful errors, offline fake."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import httpx2
import pytest

from agi_jupyter.config import load_config
from agi_jupyter.errors import ProviderNotConfigured
from agi_jupyter.providers import ProviderRequest, TextDelta, create_provider
from agi_jupyter.providers.anthropic_http import AnthropicHttpProvider
from agi_jupyter.providers.anthropic_messages import AnthropicProvider
from agi_jupyter.providers.openai_chat import OpenAIChatProvider
from agi_jupyter.providers.openai_chat_http import HttpChatProvider
from agi_jupyter.providers.openai_responses import OpenAIResponsesProvider
from agi_jupyter.providers.openai_responses_http import HttpResponsesProvider
from agi_jupyter.records import ChatMessage, TextPart

if TYPE_CHECKING:
    from pathlib import Path

    from agi_jupyter.config import ProviderSettings

SECRET = "sk-very-secret-key-0123456789"
ALL_KEYS = {
    "OPENAI_API_KEY": SECRET,
    "ANTHROPIC_API_KEY": SECRET,
    "GEMINI_API_KEY": SECRET,
    "OPENROUTER_API_KEY": SECRET,
    "AGI_COMPAT_BASE_URL": "http://127.0.0.1:8080/v1",
}


def settings(tmp_path: Path, name: str, **env: str) -> ProviderSettings:
    """A provider's settings as ``load_config`` resolves them from ``env`` alone."""
    environment = {"AGI_CONFIG_DIR": str(tmp_path / "global"), **env}
    return load_config(tmp_path, env=environment).provider(name)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("name", "cls", "base_url"),
    [
        ("openai", OpenAIResponsesProvider, "https://api.openai.com/v1/"),
        ("openai-chat", OpenAIChatProvider, "https://api.openai.com/v1/"),
        ("anthropic", AnthropicProvider, "https://api.anthropic.com"),
        ("google", OpenAIChatProvider, "https://generativelanguage.googleapis.com/v1beta/openai/"),
        ("ollama", OpenAIChatProvider, "http://localhost:11434/v1/"),
        ("lmstudio", OpenAIChatProvider, "http://localhost:1234/v1/"),
        ("vllm", OpenAIChatProvider, "http://localhost:8000/v1/"),
        ("openrouter", OpenAIChatProvider, "https://openrouter.ai/api/v1/"),
        ("compat", OpenAIChatProvider, "http://127.0.0.1:8080/v1/"),
    ],
)
async def test_adapter_and_base_url(tmp_path: Path, name: str, cls: type, base_url: str) -> None:
    provider = create_provider(settings(tmp_path, name, **ALL_KEYS), wire="sdk")
    try:
        assert type(provider) is cls
        assert isinstance(
            provider, OpenAIResponsesProvider | OpenAIChatProvider | AnthropicProvider
        )
        assert provider.name == name
        assert provider.base_url == base_url
        assert provider.config.retry.max_retries == 3
        assert provider.client.max_retries == 0  # our retry, not the SDK's
        if isinstance(provider, OpenAIChatProvider):
            assert provider.openai_native == (name == "openai-chat")
    finally:
        await provider.aclose()
    http = create_provider(settings(tmp_path, name, **ALL_KEYS))  # the default wire: http
    try:
        expected = {
            OpenAIChatProvider: HttpChatProvider,
            OpenAIResponsesProvider: HttpResponsesProvider,
            AnthropicProvider: AnthropicHttpProvider,
        }[cls]
        assert type(http) is expected
        assert (http.name, http.base_url) == (name, base_url.rstrip("/") + "/")
        if isinstance(http, HttpChatProvider):
            assert http.openai_native == (name == "openai-chat")
        assert http.config.retry.max_retries == 3
    finally:
        await http.aclose()


@pytest.mark.asyncio
async def test_base_url_from_the_environment(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "http://127.0.0.1:9999/v1"}
    provider = create_provider(settings(tmp_path, "openai", **env), timeout=30, wire="sdk")
    try:
        assert isinstance(provider, OpenAIResponsesProvider)
        assert provider.base_url == "http://127.0.0.1:9999/v1/"
        assert provider.client.timeout == 30
    finally:
        await provider.aclose()
    http = create_provider(settings(tmp_path, "openai", **env), timeout=30)
    try:
        assert isinstance(http, HttpResponsesProvider)
        assert http.base_url == "http://127.0.0.1:9999/v1/"
        assert http.client.timeout == httpx2.Timeout(30)
    finally:
        await http.aclose()


@pytest.mark.parametrize(
    ("name", "needs"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("openai-chat", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("google", "GEMINI_API_KEY or GOOGLE_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
    ],
)
def test_missing_key(tmp_path: Path, name: str, needs: str) -> None:
    with pytest.raises(ProviderNotConfigured) as caught:
        create_provider(settings(tmp_path, name))
    message = caught.value.message
    assert needs in message
    assert "agi setup" in message
    assert caught.value.code == "PROVIDER_NOT_CONFIGURED"


def test_compat_needs_a_base_url(tmp_path: Path) -> None:
    with pytest.raises(ProviderNotConfigured, match="AGI_COMPAT_BASE_URL") as caught:
        create_provider(settings(tmp_path, "compat", AGI_COMPAT_API_KEY=SECRET))
    assert "base URL" in caught.value.message
    assert SECRET not in caught.value.message


def test_disabled_provider(tmp_path: Path) -> None:
    (tmp_path / ".agi").mkdir()
    (tmp_path / ".agi" / "config.json").write_text('{"providers": {"openai": {"enabled": false}}}')
    with pytest.raises(ProviderNotConfigured, match="disabled") as caught:
        create_provider(settings(tmp_path, "openai", OPENAI_API_KEY=SECRET))
    assert SECRET not in str(caught.value)


def test_missing_sdk_gives_an_install_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for module in [m for m in sys.modules if m.startswith("agi_jupyter.providers.openai")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.delitem(sys.modules, "agi_jupyter.providers._openai_common")
    monkeypatch.setitem(sys.modules, "openai", None)  # "import openai" now fails
    with pytest.raises(ProviderNotConfigured, match="pip install openai"):
        create_provider(settings(tmp_path, "openai-chat", OPENAI_API_KEY=SECRET), wire="sdk")
    # the HTTP path needs no SDK
    provider = create_provider(settings(tmp_path, "openai-chat", OPENAI_API_KEY=SECRET))
    assert type(provider).__name__ == "HttpChatProvider"  # (its module was imported again)


def _ask(text: str) -> ProviderRequest:
    return ProviderRequest(
        model="echo", messages=[ChatMessage(role="user", parts=[TextPart(text=text)])]
    )


@pytest.mark.asyncio
async def test_fake_works_offline_without_a_key(tmp_path: Path) -> None:
    fake = settings(tmp_path, "fake")  # no env at all: no key, no URL
    assert fake.api_key is None
    assert fake.base_url is None
    provider = create_provider(fake)
    try:
        assert isinstance(provider, HttpChatProvider)
        assert provider.base_url.startswith("http://127.0.0.1:")
        events = [e async for e in provider.stream(_ask("hello"))]
        text = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert text == "(offline fake model) echo: hello"
    finally:
        await provider.aclose()
    again = create_provider(fake)  # the in-process server is shared
    try:
        assert isinstance(again, HttpChatProvider)
        assert again.base_url == provider.base_url
    finally:
        await again.aclose()


@pytest.mark.asyncio
async def test_fake_uses_agi_fake_llm_url(tmp_path: Path, fake_llm: Any) -> None:
    provider = create_provider(settings(tmp_path, "fake", AGI_FAKE_LLM_URL=fake_llm.url))
    try:
        assert isinstance(provider, HttpChatProvider)
        assert provider.base_url == fake_llm.openai_base_url.rstrip("/") + "/"
        events = [e async for e in provider.stream(_ask("via env"))]
        assert events[-1].kind == "finish"
        assert [r.path for r in fake_llm.requests] == ["/v1/chat/completions"]
    finally:
        await provider.aclose()
