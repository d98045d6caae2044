"""``completion`` of ``.agi/config.json``: inline completion's model, switches and bounds.

    "completion": {"model": "ollama:qwen2.5-coder:1.5b", "enabled": true, "debounce_ms": 250,
                   "languages": {"markdown": false}, "notebooks": {"scratch.ipynb": false}}

``model`` (a ``provider:model`` spec) defaults to a small fast model of the default model's
provider, from the catalog (``providers.catalog.fast_model``), else the default model itself.
Imports nothing of the package but the budget key of a notebook path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from agi_jupyter.budget import notebook_key

DEBOUNCE_MS = 300  # the editor waits this long after the last keystroke before it asks
MAX_OUTPUT_TOKENS = 128  # a suggestion is a line or a block, not a file
CONTEXT_TOKENS = 2048  # prefix, suffix, cells around and kernel variables together


class CompletionLayer(BaseModel):
    """``completion`` as a config file writes it."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool | None = None
    model: str | None = Field(default=None, min_length=1, max_length=200)
    debounce_ms: int | None = Field(default=None, ge=0, le=5000)
    max_output_tokens: int | None = Field(default=None, ge=1, le=2048)
    context_tokens: int | None = Field(default=None, ge=64, le=32000)
    languages: dict[str, bool] | None = None  # by language name, lower case; absent: enabled
    notebooks: dict[str, bool] | None = None  # by path relative to the project; absent: enabled


@dataclass(frozen=True)
class CompletionSettings:
    enabled: bool = True
    model: str | None = None  # None: the provider's fast model (``Completions.model_spec``)
    debounce_ms: int = DEBOUNCE_MS
    max_output_tokens: int = MAX_OUTPUT_TOKENS
    context_tokens: int = CONTEXT_TOKENS
    languages: dict[str, bool] = field(default_factory=dict)
    notebooks: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def of(cls, layer: CompletionLayer | None) -> CompletionSettings:
        if layer is None:
            return cls()
        defaults = cls()
        return cls(
            enabled=defaults.enabled if layer.enabled is None else layer.enabled,
            model=layer.model,
            debounce_ms=defaults.debounce_ms if layer.debounce_ms is None else layer.debounce_ms,
            max_output_tokens=layer.max_output_tokens or defaults.max_output_tokens,
            context_tokens=layer.context_tokens or defaults.context_tokens,
            languages={k.lower(): v for k, v in (layer.languages or {}).items()},
            notebooks={notebook_key(k): v for k, v in (layer.notebooks or {}).items()},
        )

    def refusal(self, language: str, path: str | None) -> str | None:
        """Why completion is off for ``language`` in ``path``, or None when it is on."""
        if not self.enabled:
            return "completion is turned off (completion.enabled in .agi/config.json)"
        if not self.languages.get(language.lower(), True):
            return f"completion is turned off for {language} (completion.languages)"
        if path and not self.notebooks.get(notebook_key(path), True):
            return f"completion is turned off for {path} (completion.notebooks)"
        return None
