"""What every provider adapter shares: the request it takes and the events it yields.

An adapter turns one wire API (OpenAI Responses, OpenAI Chat Completions, Anthropic Messages)
into an async stream of ``ProviderEvent``s. The stream always ends with exactly one ``Finish``;
a stream that stops without one is a ``ProviderDisconnected`` error, never a silent success.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agi_jupyter.records import ChatMessage

FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "other"]


@dataclass(kw_only=True)
class ToolSpec:
    """A tool offered to the model: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(kw_only=True)
class ProviderRequest:
    model: str
    messages: list[ChatMessage]
    system: str | None = None
    tools: list[ToolSpec] = field(default_factory=list)
    thinking_level: str | None = None  # None/"off", "low", "medium", "high"
    max_output_tokens: int | None = None
    temperature: float | None = None
    idempotency_key: str | None = None  # sent as Idempotency-Key where the API takes one
    extra_body: dict[str, Any] = field(default_factory=dict)
    # Prompt caching (runtime/context.py): ``cache_key`` keeps a session's requests on the
    # same OpenAI cache (``prompt_cache_key``, OpenAI itself only); ``cache_breakpoint``: the
    # leading messages later requests repeat, marked as a cache breakpoint with the system
    # prompt and the last message where the API takes hints (Anthropic ``cache_control``).
    # None: no hints.
    cache_key: str | None = None
    cache_breakpoint: int | None = None
    # The provider's own tools the session turned on (``kinds.HostedTool`` values; checked
    # against the wire API by ``providers.hosted.check_hosted_tools``), and the vector stores
    # ``file_search`` searches. Empty: the request is exactly as without them.
    hosted_tools: tuple[str, ...] = ()
    vector_store_ids: tuple[str, ...] = ()


@dataclass(kw_only=True)
class TextDelta:
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(kw_only=True)
class ReasoningDelta:
    text: str
    kind: Literal["reasoning_delta"] = "reasoning_delta"


@dataclass(kw_only=True)
class ReasoningDone:
    """A finished reasoning block with what the provider needs echoed back on the next turn."""

    text: str
    signature: str | None = None
    provider_data: dict[str, Any] | None = None
    kind: Literal["reasoning_done"] = "reasoning_done"


@dataclass(kw_only=True)
class ToolCallStart:
    tool_call_id: str
    name: str
    index: int = 0
    kind: Literal["tool_call_start"] = "tool_call_start"


@dataclass(kw_only=True)
class ToolCallArgsDelta:
    tool_call_id: str
    delta: str
    kind: Literal["tool_call_args_delta"] = "tool_call_args_delta"


# The most bytes a tool call's arguments may hold, at every door: a model's output
# (``_common.tool_call_end``), an MCP client's call (``mcp_server``); a REST body is bounded
# by the server's ``max_body_size`` (1 MiB too). Larger arguments are never run or stored
# whole: the call fails with a message the model (or client) can act on.
MAX_TOOL_ARGUMENTS = 1024 * 1024


@dataclass(kw_only=True)
class ToolCallEnd:
    """A complete tool call. ``arguments`` is the parsed JSON object; when the model produced
    arguments that are not a JSON object, ``arguments`` is empty and ``raw_arguments`` keeps the
    text so the runner can return a clear error to the model."""

    tool_call_id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    parse_error: str | None = None
    kind: Literal["tool_call_end"] = "tool_call_end"


@dataclass(kw_only=True)
class HostedToolCall:
    """A provider-hosted tool's call, run by the provider inside this response, with its
    result (``providers.hosted``): not a call for us to run, and no reason for another turn.
    ``echo``: its items/blocks as received, sent back verbatim (``records.HostedToolPart``)."""

    tool_call_id: str
    name: str
    api: str
    input: dict[str, Any]
    output: str
    is_error: bool = False
    echo: list[dict[str, Any]] = field(default_factory=list)
    kind: Literal["hosted_tool_call"] = "hosted_tool_call"


@dataclass(kw_only=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    kind: Literal["usage"] = "usage"


@dataclass(kw_only=True)
class ResponseId:
    id: str
    kind: Literal["response_id"] = "response_id"


@dataclass(kw_only=True)
class Finish:
    reason: FinishReason
    raw_reason: str | None = None
    kind: Literal["finish"] = "finish"


ProviderEvent = (
    TextDelta
    | ReasoningDelta
    | ReasoningDone
    | ToolCallStart
    | ToolCallArgsDelta
    | ToolCallEnd
    | HostedToolCall
    | Usage
    | ResponseId
    | Finish
)


class Provider(Protocol):
    """A configured adapter for one provider (its client, base URL, credentials)."""

    name: str

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        """Stream one model turn. Raises ``ProviderHTTPError`` / ``ProviderDisconnected``."""
        ...

    async def aclose(self) -> None: ...
