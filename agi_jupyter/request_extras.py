"""Extra request fields from config: ``providers.<name>.extra_body`` and
``models.<model>.extra_body``.

OpenAI-compatible servers take fields no adapter maps: llama.cpp's ``chat_template_kwargs``,
vLLM's ``top_k``, a forced ``tool_choice``. A provider's fields go into every request to it; a
model's (keyed ``provider:model``, or a bare model name for that model on any provider) are
merged over them, nested objects key by key, so a model can add one key to its provider's
``chat_template_kwargs``. The fields the adapters own (the model, the messages, streaming) cannot
be overridden: a config that tries is refused when it is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# What the adapters build themselves; overriding them would break the stream they read.
RESERVED_FIELDS = frozenset({"model", "messages", "input", "system", "stream", "stream_options"})


def check_extra_body(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """``value`` unless it sets a field the adapters own (a ``ValueError`` naming it)."""
    reserved = sorted(RESERVED_FIELDS & set(value or {}))
    if reserved:
        raise ValueError(f"extra_body cannot set {', '.join(reserved)} (the adapter sets it)")
    return value


class ModelLayer(BaseModel):
    """What a config layer may say about one model (``models.<model>``): extra request fields,
    and its context window and output reserve over the catalog's (``runtime/context.py``)."""

    model_config = ConfigDict(extra="forbid")
    extra_body: dict[str, Any] | None = None
    context_window: int | None = Field(default=None, ge=512)
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(
        default=None,
        ge=0,
        le=2,
        description="The sampling temperature of the model's requests (an agent's own wins); "
        "default: the provider's.",
    )

    vision: bool | None = Field(
        default=None,
        description="Whether the model reads images (tool results' images, a cell's plots, "
        "are sent to it); default: the model catalog's flag.",
    )

    _check = field_validator("extra_body")(check_extra_body)


@dataclass(frozen=True)
class RequestExtras:
    """The configured extra fields, by provider name and by model key."""

    providers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    models: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def body_for(self, provider: str, model: str) -> dict[str, Any]:
        """The extra fields of a request to ``provider``'s ``model`` (a fresh dict)."""
        body: dict[str, Any] = {}
        for layer in (
            self.providers.get(provider),
            self.models.get(model),
            self.models.get(f"{provider}:{model}"),
        ):
            if layer:
                merge_into(body, layer)
        return body


def merge_into(target: dict[str, Any], layer: Mapping[str, Any]) -> None:
    """Merge ``layer`` into ``target``: objects key by key, anything else replaced."""
    for key, value in layer.items():
        current = target.get(key)
        if isinstance(value, Mapping) and isinstance(current, dict):
            merge_into(current, value)
        elif isinstance(value, Mapping):
            target[key] = {}
            merge_into(target[key], value)
        else:
            target[key] = value


def parse_request_extras(merged: Mapping[str, Any]) -> RequestExtras:
    """The extras of merged, already validated config layers."""
    providers = {
        name: dict(entry["extra_body"])
        for name, entry in (merged.get("providers") or {}).items()
        if isinstance(entry, Mapping) and entry.get("extra_body")
    }
    models = {
        key: dict(entry["extra_body"])
        for key, entry in (merged.get("models") or {}).items()
        if isinstance(entry, Mapping) and entry.get("extra_body")
    }
    return RequestExtras(providers=providers, models=models)
