"""Model providers: one adapter per wire API, each turning a model turn into ``ProviderEvent``s.

``create_provider(settings)`` picks the adapter (OpenAI Responses, OpenAI Chat Completions for
every OpenAI-compatible server, Anthropic Messages); the adapters and their SDKs are imported only
then, so importing this package stays cheap. ``lookup`` / ``cost_usd`` read the model catalog.
"""

from agi_jupyter.providers._common import AdapterConfig
from agi_jupyter.providers.base import (
    Finish,
    FinishReason,
    Provider,
    ProviderEvent,
    ProviderRequest,
    ReasoningDelta,
    ReasoningDone,
    ResponseId,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    Usage,
)
from agi_jupyter.providers.catalog import ModelInfo, cost_usd, lookup, models
from agi_jupyter.providers.registry import create_provider, shared_fake_server
from agi_jupyter.providers.retry import RetryPolicy, stream_with_retry

__all__ = [
    "AdapterConfig",
    "Finish",
    "FinishReason",
    "ModelInfo",
    "Provider",
    "ProviderEvent",
    "ProviderRequest",
    "ReasoningDelta",
    "ReasoningDone",
    "ResponseId",
    "RetryPolicy",
    "TextDelta",
    "ToolCallArgsDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolSpec",
    "Usage",
    "cost_usd",
    "create_provider",
    "lookup",
    "models",
    "shared_fake_server",
    "stream_with_retry",
]
