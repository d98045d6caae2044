"""The model catalog: lookups (snapshots, proxies, unknown models) and cost."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest

from agi_jupyter.providers import ModelInfo, Usage, cost_usd, lookup, models

REQUIRED = {
    "openai": [
        "gpt-5",
        "gpt-5-mini",
        "gpt-5-nano",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "gpt-4o",
        "gpt-4o-mini",
        "o3",
        "o4-mini",
        "o3-deep-research",
        "o4-mini-deep-research",
    ],
    "anthropic": ["claude-opus-4-1", "claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5"],
    "google": ["gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"],
    "fake": ["echo"],
}


def test_catalog_is_package_data_with_a_date() -> None:
    raw = json.loads(files("agi_jupyter.providers").joinpath("catalog.json").read_text())
    assert raw["as_of"]
    for vendor, names in REQUIRED.items():
        assert set(names) <= set(raw["models"][vendor]), vendor


def test_every_entry_is_complete() -> None:
    for info in models():
        assert info.context_window > 0
        assert 0 <= info.cached_input_per_mtok <= info.input_per_mtok <= info.output_per_mtok
        assert info.as_of


@pytest.mark.parametrize(
    ("provider", "model", "family"),
    [
        ("openai", "gpt-5-mini", "gpt-5-mini"),
        ("openai", "GPT-4.1", "gpt-4.1"),
        ("openai", "gpt-4o-2024-08-06", "gpt-4o"),
        ("openai", "o3-deep-research-2025-06-26", "o3-deep-research"),
        ("openai-chat", "gpt-4o-mini", "gpt-4o-mini"),
        ("anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("anthropic", "claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("anthropic", "claude-opus-4-1", "claude-opus-4-1"),
        ("google", "gemini-2.5-flash", "gemini-2.5-flash"),
        ("google", "models/gemini-2.5-pro", "gemini-2.5-pro"),
        ("openrouter", "anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("openrouter", "openai/gpt-5", "gpt-5"),
        ("openrouter", "google/gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
        ("compat", "claude-opus-4-5", "claude-opus-4-5"),
        ("fake", "echo", "echo"),
    ],
)
def test_lookup(provider: str, model: str, family: str) -> None:
    info = lookup(provider, model)
    assert isinstance(info, ModelInfo)
    assert info.model == family


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("openai", "gpt-9-ultra"),
        ("openai", "claude-sonnet-4-5"),  # another vendor's model through OpenAI: unknown
        ("anthropic", "claude-sonnet-4-5-extra"),
        ("ollama", "llama3:8b"),
        ("ollama", "gpt-4o"),  # a local server: its own models, cost unknown
        ("openrouter", "meta-llama/llama-3-70b"),
        ("nobody", "gpt-5"),
    ],
)
def test_unknown_models(provider: str, model: str) -> None:
    assert lookup(provider, model) is None
    assert cost_usd(provider, model, Usage(input_tokens=10, output_tokens=10)) is None


def test_cost() -> None:
    usage = Usage(input_tokens=1_000_000, cached_input_tokens=200_000, output_tokens=100_000)
    # gpt-5-mini: 0.8M * $0.25 + 0.2M * $0.025 + 0.1M * $2.00
    assert cost_usd("openai", "gpt-5-mini", usage) == pytest.approx(0.405)
    # claude-sonnet-4-5: 10k * $3 + 2k * $15 per million
    small = Usage(input_tokens=10_000, output_tokens=2_000)
    assert cost_usd("anthropic", "claude-sonnet-4-5-20250929", small) == pytest.approx(0.06)
    assert cost_usd("fake", "echo", usage) == 0.0


def test_cached_tokens_never_exceed_input() -> None:
    odd = Usage(input_tokens=100, cached_input_tokens=500, output_tokens=0)
    expected = 100 * 0.125 / 1_000_000
    assert cost_usd("openai", "gpt-5", odd) == pytest.approx(expected)
