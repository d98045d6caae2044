"""The providers agi-jupyter knows and how a model spec names one of them.

``KNOWN_PROVIDERS`` is the one table of providers (wire API, default base URL, the environment
variables of their key and base URL, default model); ``parse_model_spec`` splits
``provider:model`` or guesses the provider of a bare model name, and ``model_spec_pattern`` is
the same rule as a regular expression for the REST API's validation and OpenAPI document.
Settings (``config.py``) resolve a provider's key and base URL from this table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from agi_jupyter.errors import UsageError

Wire = Literal["openai-responses", "openai-chat", "anthropic"]


@dataclass(frozen=True)
class KnownProvider:
    name: str
    wire: Wire
    default_base_url: str | None
    key_env: tuple[str, ...]
    base_url_env: tuple[str, ...] = ()
    requires_key: bool = True
    default_model: str | None = None
    label: str = ""


KNOWN_PROVIDERS: dict[str, KnownProvider] = {
    p.name: p
    for p in (
        KnownProvider(
            "openai",
            "openai-responses",
            None,
            ("OPENAI_API_KEY",),
            ("OPENAI_BASE_URL",),
            default_model="gpt-5-mini",
            label="OpenAI (Responses API)",
        ),
        KnownProvider(
            "openai-chat",
            "openai-chat",
            None,
            ("OPENAI_API_KEY",),
            ("OPENAI_BASE_URL",),
            default_model="gpt-5-mini",
            label="OpenAI (Chat Completions)",
        ),
        KnownProvider(
            "anthropic",
            "anthropic",
            None,
            ("ANTHROPIC_API_KEY",),
            ("ANTHROPIC_BASE_URL",),
            default_model="claude-sonnet-4-6",
            label="Anthropic",
        ),
        KnownProvider(
            "google",
            "openai-chat",
            "https://generativelanguage.googleapis.com/v1beta/openai/",
            ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            default_model="gemini-2.5-flash",
            label="Google Gemini (OpenAI-compatible endpoint)",
        ),
        KnownProvider(
            "ollama",
            "openai-chat",
            "http://localhost:11434/v1",
            ("OLLAMA_API_KEY",),
            ("OLLAMA_BASE_URL",),
            requires_key=False,
            label="Ollama (local)",
        ),
        KnownProvider(
            "lmstudio",
            "openai-chat",
            "http://localhost:1234/v1",
            ("LMSTUDIO_API_KEY",),
            ("LMSTUDIO_BASE_URL",),
            requires_key=False,
            label="LM Studio (local)",
        ),
        KnownProvider(
            "vllm",
            "openai-chat",
            "http://localhost:8000/v1",
            ("VLLM_API_KEY",),
            ("VLLM_BASE_URL",),
            requires_key=False,
            label="vLLM (local)",
        ),
        KnownProvider(
            "openrouter",
            "openai-chat",
            "https://openrouter.ai/api/v1",
            ("OPENROUTER_API_KEY",),
            label="OpenRouter",
        ),
        KnownProvider(
            "compat",
            "openai-chat",
            None,
            ("AGI_COMPAT_API_KEY",),
            ("AGI_COMPAT_BASE_URL",),
            requires_key=False,
            label="Any OpenAI-compatible server",
        ),
        KnownProvider(
            "fake",
            "openai-chat",
            None,
            (),
            ("AGI_FAKE_LLM_URL",),
            requires_key=False,
            default_model="echo",
            label="Offline fake model (no network, for demos and tests)",
        ),
    )
}

# Which provider a bare model name belongs to, checked in order.
_MODEL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("claude", "anthropic"),
    ("gpt", "openai"),
    ("chatgpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("codex", "openai"),
    ("gemini", "google"),
    ("echo", "fake"),
    ("fake", "fake"),
)


_NOT_BLANK = r"[^ \t\n\r\f\v]"
_BLANKS = " \t\n\r\f\v"  # what model specs are stripped of (ASCII whitespace only)


def _any_case(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in word)


def model_spec_pattern(providers: Iterable[str] | None = None) -> str:
    """A regular expression of model specs ``parse_model_spec`` accepts (of ``providers``
    only, if given): ``provider:model``, a provider with a default model alone (``openai``,
    ``openai:``), or a name starting as a known model family (``claude-…``, ``gpt-…``); no
    whitespace. The API validates model fields with it (Python ``re.search``), and the OpenAPI
    document carries it, so both say the same."""
    allowed = set(KNOWN_PROVIDERS if providers is None else providers)
    names = sorted((n for n in KNOWN_PROVIDERS if n in allowed), key=len, reverse=True)
    defaults = [n for n in names if KNOWN_PROVIDERS[n].default_model]
    prefixes = [p for p, provider in _MODEL_PREFIXES if provider in allowed]
    # Provider names are [a-z-]: nothing to escape. "Not blank" is written out, as regex
    # engines disagree on what \\s is beyond ASCII.
    forms = [f"(?:{'|'.join(names)}):{_NOT_BLANK}+"]
    if defaults:
        forms.append(f"(?:{'|'.join(defaults)}):?")
    if prefixes:
        forms.append(f"(?:{'|'.join(map(_any_case, prefixes))}){_NOT_BLANK}*")
    return "^(?:" + "|".join(forms) + ")$"


def parse_model_spec(spec: str) -> tuple[str, str]:
    """Split ``provider:model`` (or guess the provider of a bare model name).

    Only the first colon separates, and only when its left side names a known provider, so
    ``ollama:llama3:8b`` is the ``ollama`` provider's ``llama3:8b``.
    """
    spec = spec.strip(_BLANKS)
    head, sep, tail = spec.partition(":")
    if sep and head in KNOWN_PROVIDERS:
        if not tail:
            default = KNOWN_PROVIDERS[head].default_model
            if default is None:
                raise UsageError(f"model spec {spec!r} names no model; use '{head}:<model>'")
            return head, default
        return head, tail
    if spec in KNOWN_PROVIDERS and KNOWN_PROVIDERS[spec].default_model:
        return spec, str(KNOWN_PROVIDERS[spec].default_model)
    lowered = spec.lower()
    for prefix, provider in _MODEL_PREFIXES:
        if lowered.startswith(prefix):
            return provider, spec
    known = ", ".join(KNOWN_PROVIDERS)
    raise UsageError(
        f"cannot tell the provider of model {spec!r}; write it as 'provider:model' "
        f"with one of: {known}"
    )
