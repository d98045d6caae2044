"""Known models: context window and list price, from ``catalog.json`` (shipped package data).

``lookup(provider, model)`` finds a model's entry: ``claude-sonnet-4-5-20250929`` and
``gpt-4o-2024-08-06`` match their family, ``openai-chat`` uses OpenAI's entries, and providers that
proxy other vendors' models (``openrouter``: ``anthropic/claude-sonnet-4.5``; ``compat``) fall back
to that vendor's entry. Local servers (ollama, lmstudio, vllm) have no entries: their cost is
unknown (``None``), not zero.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from agi_jupyter.providers.base import Usage

# The catalog vendor whose entries a provider uses directly.
_VENDOR_OF_PROVIDER = {
    "openai": "openai",
    "openai-chat": "openai",
    "anthropic": "anthropic",
    "google": "google",
    "fake": "fake",
}
# Providers that serve other vendors' models under their own names.
_PROXIES = frozenset({"openrouter", "compat"})
_VENDOR_ALIASES = {"openai": "openai", "anthropic": "anthropic", "google": "google"}
_NAME_PREFIXES = (
    ("claude", "anthropic"),
    ("gemini", "google"),
    ("gpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
)
# Suffixes that name a snapshot of a model family, stripped one after another.
_SNAPSHOT_SUFFIXES = (
    re.compile(r"[-@]\d{8}$"),  # claude-sonnet-4-5-20250929, ...@20250929 (Vertex)
    re.compile(r"-\d{4}-\d{2}-\d{2}$"),  # gpt-4o-2024-08-06
    re.compile(r"-(latest|preview(-\d{2}-\d{4})?)$"),  # claude-3-7-sonnet-latest, gemini previews
)
_DOTTED_VERSION = re.compile(r"(?<=\d)\.(?=\d)")


@dataclass(frozen=True)
class ModelInfo:
    """A catalog entry; prices are USD per million tokens."""

    vendor: str
    model: str
    context_window: int
    input_per_mtok: float
    cached_input_per_mtok: float
    output_per_mtok: float
    reasoning: bool
    as_of: str
    vision: bool = False
    """The model reads images (a tool result's images are sent to it)."""


@cache
def _catalog() -> dict[str, dict[str, ModelInfo]]:
    raw: dict[str, Any] = json.loads(
        files("agi_jupyter.providers").joinpath("catalog.json").read_text(encoding="utf-8")
    )
    as_of = str(raw["as_of"])
    return {
        vendor: {name: _info(vendor, name, entry, as_of) for name, entry in models.items()}
        for vendor, models in raw["models"].items()
    }


def _info(vendor: str, name: str, entry: dict[str, Any], as_of: str) -> ModelInfo:
    return ModelInfo(
        vendor=vendor,
        model=name,
        context_window=int(entry["context_window"]),
        input_per_mtok=float(entry["input"]),
        cached_input_per_mtok=float(entry["cached_input"]),
        output_per_mtok=float(entry["output"]),
        reasoning=bool(entry.get("reasoning", False)),
        as_of=as_of,
        vision=bool(entry.get("vision", False)),
    )


def models(vendor: str | None = None) -> list[ModelInfo]:
    """Every catalog entry (of one vendor)."""
    catalog = _catalog()
    vendors = [vendor] if vendor is not None else list(catalog)
    return [info for v in vendors for info in catalog.get(v, {}).values()]


def _vendor_and_name(provider: str, model: str) -> tuple[str | None, str]:
    name = model.strip().lower()
    prefix, slash, rest = name.partition("/")
    if provider in _PROXIES:
        if slash:
            return _VENDOR_ALIASES.get(prefix), rest
        vendor = next((v for p, v in _NAME_PREFIXES if name.startswith(p)), None)
        return vendor, name
    if slash:  # "models/gemini-2.5-flash" as Google names them
        name = name.rpartition("/")[2]
    return _VENDOR_OF_PROVIDER.get(provider), name


def _candidates(name: str) -> list[str]:
    """``name``, then the family it is a snapshot of, each also with ``4.5`` spelled ``4-5``."""
    names = [name]
    for suffix in _SNAPSHOT_SUFFIXES:
        stripped = suffix.sub("", names[-1])
        if stripped != names[-1]:
            names.append(stripped)
    return names + [_DOTTED_VERSION.sub("-", n) for n in names if "." in n]


def lookup(provider: str, model: str) -> ModelInfo | None:
    """The catalog entry of ``provider:model``, or None when the model is not known."""
    vendor, name = _vendor_and_name(provider, model)
    entries = _catalog().get(vendor or "")
    if not entries:
        return None
    return next((entries[n] for n in _candidates(name) if n in entries), None)


def reads_images(provider: str, model: str, overrides: Mapping[str, bool]) -> bool:
    """Whether ``provider:model`` is sent images: the config's ``models.<key>.vision``
    (``provider:model``, then ``model``), else the catalog's flag (unknown models: no)."""
    for key in (f"{provider}:{model}", model):
        if key in overrides:
            return overrides[key]
    info = lookup(provider, model)
    return info is not None and info.vision


def cost_usd(provider: str, model: str, usage: Usage) -> float | None:
    """The list-price cost of ``usage`` in USD (cache reads at the cached price), or None."""
    info = lookup(provider, model)
    if info is None:
        return None
    cached = min(usage.cached_input_tokens, usage.input_tokens)
    total = (
        (usage.input_tokens - cached) * info.input_per_mtok
        + cached * info.cached_input_per_mtok
        + usage.output_tokens * info.output_per_mtok
    )
    return total / 1_000_000


def fast_model(provider: str) -> str | None:
    """A small fast model of ``provider`` for inline completion: its cheapest catalog entry
    (by output price, then input price) that does not reason, else its cheapest; None for a
    provider without entries (a local server: its own default model is the choice)."""
    vendor = _VENDOR_OF_PROVIDER.get(provider)
    entries = [m for m in models(vendor) if "deep-research" not in m.model] if vendor else []
    if not entries:
        return None
    plain = [m for m in entries if not m.reasoning] or entries
    return min(plain, key=lambda m: (m.output_per_mtok, m.input_per_mtok)).model
