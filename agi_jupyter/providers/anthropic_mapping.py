"""Anthropic Messages request and stream mapping shared by both wire paths (no SDK import).

``messages_params`` is the request both paths send (the SDK path as ``messages.create``'s
keyword arguments, the HTTP path as the JSON body with ``extra_body`` merged in): the history as
alternating ``user``/``assistant`` messages of content blocks (``thinking`` blocks with their
signature, and ``redacted_thinking`` blocks, echoed back first, then text and ``tool_use``
blocks; tool results are ``tool_result`` blocks in a user message, consecutive ones and a user
message right after them merged into one). ``thinking_level`` becomes a ``thinking`` budget added
on top of the answer's ``max_tokens``, or adaptive thinking with an effort for the models in
``ADAPTIVE_THINKING_MODELS`` (the models the SDK warns about when given a budget; a test checks
the table against the SDK's list when the SDK is installed).

``MessagesEvents`` maps decoded stream events (plain dicts) onto ``ProviderEvent``s for the HTTP
path with the same rules as the SDK path's ``anthropic_messages._MessagesStream`` (the
reference: ``tests/providers/test_providers_wire_anthropic.py`` runs recorded streams through
both). The anthropic package's TypedDicts are imported for the type checker only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from agi_jupyter.providers._common import dump_arguments, tool_call_end
from agi_jupyter.providers.base import (
    Finish,
    FinishReason,
    ProviderEvent,
    ProviderRequest,
    ReasoningDelta,
    ReasoningDone,
    ResponseId,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    ToolSpec,
    Usage,
)
from agi_jupyter.providers.hosted import (
    ANTHROPIC_API,
    ServerToolUses,
    anthropic_tools,
    is_result_block,
)
from agi_jupyter.records import (
    ChatMessage,
    HostedToolPart,
    ImagePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

if TYPE_CHECKING:
    from anthropic.types import (
        CacheControlEphemeralParam,
        ContentBlockParam,
        ImageBlockParam,
        MessageParam,
        OutputConfigParam,
        TextBlockParam,
        ThinkingConfigParam,
        ToolParam,
        ToolResultBlockParam,
    )

DEFAULT_MAX_TOKENS = 8192
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576, "xhigh": 32000}
ADAPTIVE_EFFORTS: dict[str, Literal["low", "medium", "high", "xhigh"]] = {
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
}
# Models that take adaptive thinking with an effort instead of a token budget: the anthropic
# SDK's ``MODELS_TO_WARN_WITH_THINKING_ENABLED`` (2.14.0), matched by exact name as it does.
ADAPTIVE_THINKING_MODELS = frozenset({"claude-opus-4-6", "claude-mythos-preview"})
STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
# HTTP status of an error that arrives as an SSE ``error`` event inside a 200 response
STREAM_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_NO_EVENTS: tuple[ProviderEvent, ...] = ()


# --- request mapping -------------------------------------------------------------------------


def messages_params(request: ProviderRequest) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` for ``request`` (``extra_body`` and
    ``extra_headers`` included, as the SDK takes them)."""
    max_tokens = request.max_output_tokens or DEFAULT_MAX_TOKENS
    marks = cache_marks(request)
    params: dict[str, Any] = {
        "model": request.model,
        "messages": anthropic_messages(request.messages, marks),
        "stream": True,
    }
    tools = [anthropic_tool(tool) for tool in request.tools]
    if request.system and marks:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": ephemeral()}]
    elif request.system:
        params["system"] = request.system
    elif tools and marks:
        tools[-1]["cache_control"] = ephemeral()  # (the system prompt's breakpoint covers them)
    hosted, betas = anthropic_tools(request)
    if tools or hosted:
        params["tools"] = [*tools, *hosted]
    level = (request.thinking_level or "off").lower()
    budget = THINKING_BUDGETS.get(level)
    if budget is not None:
        params.update(thinking_params(request.model, level, budget))
        max_tokens += budget
    params["max_tokens"] = max_tokens
    extra_body = dict(request.extra_body)
    if request.temperature is not None and budget is None:
        extra_body.setdefault("temperature", request.temperature)  # no SDK parameter
    if extra_body:
        params["extra_body"] = extra_body
    headers: dict[str, str] = {}
    if request.idempotency_key:
        headers["Idempotency-Key"] = request.idempotency_key
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    if headers:
        params["extra_headers"] = headers
    return params


def thinking_params(model: str, level: str, budget: int) -> dict[str, Any]:
    """``thinking`` with a token budget, or adaptive thinking with an effort for the models
    that need it (the SDK warns about budgets for them)."""
    if model in ADAPTIVE_THINKING_MODELS:
        adaptive: ThinkingConfigParam = {"type": "adaptive"}
        effort: OutputConfigParam = {"effort": ADAPTIVE_EFFORTS.get(level, "medium")}
        return {"thinking": adaptive, "output_config": effort}
    enabled: ThinkingConfigParam = {"type": "enabled", "budget_tokens": budget}
    return {"thinking": enabled}


def anthropic_tool(tool: ToolSpec) -> ToolParam:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def ephemeral() -> CacheControlEphemeralParam:
    """A prompt-cache breakpoint (the default five-minute cache)."""
    return {"type": "ephemeral"}


def cache_marks(request: ProviderRequest) -> frozenset[int]:
    """The messages after which a cache breakpoint goes (none without ``cache_breakpoint``):
    the last one the next requests repeat, and the last one (the next request of the turn
    repeats it all). With the system prompt's, three of the four the API allows."""
    if request.cache_breakpoint is None or not request.messages:
        return frozenset()
    return frozenset(i for i in (request.cache_breakpoint - 1, len(request.messages) - 1) if i >= 0)


def anthropic_messages(
    messages: Iterable[ChatMessage], marks: frozenset[int] = frozenset()
) -> list[MessageParam]:
    """Alternating messages; same-role neighbours (tool results, then user text) are merged.
    After each message whose index is in ``marks`` its last cacheable block gets a
    ``cache_control`` breakpoint."""
    result: list[MessageParam] = []
    for index, message in enumerate(messages):
        role = "assistant" if message.role == "assistant" else "user"
        blocks = content_blocks(message.parts)
        if not blocks:
            continue
        if index in marks:
            mark_last_block(blocks)
        if result and result[-1]["role"] == role:
            previous = result[-1]["content"]
            assert isinstance(previous, list)  # we only ever build block lists
            previous.extend(blocks)
        elif role == "assistant":
            result.append({"role": "assistant", "content": blocks})
        else:
            result.append({"role": "user", "content": blocks})
    return result


def mark_last_block(blocks: list[ContentBlockParam]) -> None:
    """A cache breakpoint on the last block that takes one (thinking blocks do not)."""
    for block in reversed(blocks):
        if block["type"] not in ("thinking", "redacted_thinking"):
            cast("dict[str, Any]", block)["cache_control"] = ephemeral()
            return


def content_blocks(parts: Sequence[Part]) -> list[ContentBlockParam]:
    blocks: list[ContentBlockParam] = [
        tool_result(p) for p in parts if isinstance(p, ToolResultPart)
    ]
    for part in parts:
        if isinstance(part, HostedToolPart):
            if part.api == ANTHROPIC_API:  # the server_tool_use and its result, verbatim
                blocks.extend(cast("list[ContentBlockParam]", part.echo))
            continue
        block = content_block(part)
        if block is not None:
            blocks.append(block)
    return blocks


def content_block(part: Part) -> ContentBlockParam | None:
    """One part as a content block (tool results are placed first by ``content_blocks``)."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ReasoningPart):
        return thinking_block(part)
    if isinstance(part, ToolCallPart):
        return {
            "type": "tool_use",
            "id": part.tool_call_id,
            "name": part.name,
            "input": dict(part.arguments),
        }
    if isinstance(part, ImagePart):
        return image_block(part)
    return None


def thinking_block(part: ReasoningPart) -> ContentBlockParam | None:
    """A thinking block to echo back; reasoning without an Anthropic signature is dropped."""
    data = part.provider_data or {}
    if data.get("type") == "redacted_thinking" and data.get("data"):
        return {"type": "redacted_thinking", "data": str(data["data"])}
    if part.signature:
        return {"type": "thinking", "thinking": part.text, "signature": part.signature}
    return None


def image_block(part: ImagePart) -> ImageBlockParam:
    if part.url:
        return {"type": "image", "source": {"type": "url", "url": part.url}}
    media_type: Any = part.mime  # the API checks it (jpeg/png/gif/webp)
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": part.data_base64 or ""},
    }


def tool_result(part: ToolResultPart) -> ToolResultBlockParam:
    """A tool result; with images (a cell's plots), its text and image blocks as content."""
    block: ToolResultBlockParam = {
        "type": "tool_result",
        "tool_use_id": part.tool_call_id,
        "content": part.output,
    }
    sent = [image for image in part.images if image.data_base64 or image.url]
    if sent:
        text: TextBlockParam = {"type": "text", "text": part.output or "(no text)"}
        block["content"] = [text, *(image_block(image) for image in sent)]
    if part.is_error:
        block["is_error"] = True
    return block


# --- stream mapping (decoded events, plain dicts) --------------------------------------------


@dataclass
class Block:
    """A content block being streamed: thinking text and signature, or tool-use JSON."""

    kind: str
    id: str = ""
    name: str = ""
    chunks: list[str] = field(default_factory=list)
    signature: str | None = None
    initial_input: dict[str, object] = field(default_factory=dict)  # tool_use sent whole
    opened: dict[str, Any] = field(default_factory=dict)  # a server_tool_use block as opened


Handler = Callable[[dict[str, Any]], Sequence[ProviderEvent]]


@dataclass
class MessagesEvents:
    """The state of one streamed message, fed decoded events (``content_block_delta`` with a
    ``text_delta`` is mapped by the caller, the hot path)."""

    blocks: dict[int, Block] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    tool_calls: int = 0
    cache_written: int = 0
    stopped: bool = False
    server_tools: ServerToolUses = field(default_factory=ServerToolUses)

    def handlers(self) -> dict[str, Handler]:
        return {
            "content_block_delta": self.on_delta,
            "content_block_start": self.on_block_start,
            "content_block_stop": self.on_block_stop,
            "message_start": self.on_message_start,
            "message_delta": self.on_message_delta,
            "message_stop": self.on_message_stop,
        }

    def on_message_start(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        message = event["message"]
        usage = message["usage"]
        cached = usage.get("cache_read_input_tokens") or 0
        self.cache_written = usage.get("cache_creation_input_tokens") or 0
        self.usage.input_tokens = usage["input_tokens"] + cached + self.cache_written
        self.usage.cached_input_tokens = cached
        self.usage.output_tokens = usage["output_tokens"]
        return (ResponseId(id=message["id"]),)

    def on_block_start(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        block, index = event["content_block"], event["index"]
        kind = block.get("type")
        if kind == "tool_use":
            call_id, name = block["id"], block["name"]
            self.blocks[index] = Block(
                "tool_use", id=call_id, name=name, initial_input=block.get("input") or {}
            )
            self.tool_calls += 1
            return (ToolCallStart(tool_call_id=call_id, name=name, index=self.tool_calls - 1),)
        if kind == "thinking":
            thinking = block.get("thinking") or ""
            self.blocks[index] = Block("thinking", chunks=[thinking])
            return (ReasoningDelta(text=thinking),) if thinking else _NO_EVENTS
        if kind == "redacted_thinking":
            data = {"type": "redacted_thinking", "data": block["data"]}
            return (ReasoningDone(text="", provider_data=data),)
        if kind == "text" and block.get("text"):
            return (TextDelta(text=block["text"]),)
        if kind == "server_tool_use":
            self.blocks[index] = Block("server_tool_use", opened=block)
        elif is_result_block(str(kind)):
            return (self.server_tools.answered(block),)
        return _NO_EVENTS

    def on_delta(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        delta = event["delta"]
        kind = delta.get("type")
        if kind == "text_delta":
            return (TextDelta(text=delta["text"]),)
        block = self.blocks.get(event["index"])
        if block is None:
            return _NO_EVENTS
        if kind == "input_json_delta" and delta.get("partial_json"):
            block.chunks.append(delta["partial_json"])
            if block.kind != "tool_use":
                return _NO_EVENTS  # a server tool's input: the call shows when it is answered
            return (ToolCallArgsDelta(tool_call_id=block.id, delta=delta["partial_json"]),)
        if kind == "thinking_delta" and delta.get("thinking"):
            block.chunks.append(delta["thinking"])
            return (ReasoningDelta(text=delta["thinking"]),)
        if kind == "signature_delta":
            block.signature = delta["signature"]
        return _NO_EVENTS

    def on_block_stop(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        block = self.blocks.pop(event["index"], None)
        if block is None:
            return _NO_EVENTS
        text = "".join(block.chunks)
        if block.kind == "tool_use":
            if not text and block.initial_input:
                text = dump_arguments(block.initial_input)
            return (tool_call_end(block.id, block.name, text),)
        if block.kind == "server_tool_use":
            self.server_tools.used(block.opened, text)
            return _NO_EVENTS
        return (ReasoningDone(text=text, signature=block.signature),)

    def on_message_delta(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        stop_reason = event["delta"].get("stop_reason")
        if stop_reason is not None:
            self.stop_reason = stop_reason
        usage = event["usage"]
        self.usage.output_tokens = usage["output_tokens"]
        if usage.get("input_tokens") is not None:  # cumulative totals, when the API repeats them
            if usage.get("cache_read_input_tokens") is not None:
                self.usage.cached_input_tokens = usage["cache_read_input_tokens"]
            if usage.get("cache_creation_input_tokens") is not None:
                self.cache_written = usage["cache_creation_input_tokens"]
            cached = self.usage.cached_input_tokens
            self.usage.input_tokens = usage["input_tokens"] + cached + self.cache_written
        return _NO_EVENTS

    def on_message_stop(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        self.stopped = True
        raw = self.stop_reason
        reason = STOP_REASONS.get(raw or "", "other")
        return (self.usage, Finish(reason=reason, raw_reason=raw))
