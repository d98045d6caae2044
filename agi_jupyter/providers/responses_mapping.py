"""OpenAI Responses request and stream mapping shared by both wire paths (no SDK import).

``responses_params`` is the request both paths send; ``ResponsesEvents`` maps decoded stream
events (plain dicts) onto ``ProviderEvent``s for the HTTP path with the same rules as the SDK
path's ``openai_responses._ResponsesStream`` (the reference; the differential test in
``tests/providers/test_providers_wire.py`` runs recorded streams through both). The openai
package's TypedDicts are imported for the type checker only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from agi_jupyter.errors import ProviderError
from agi_jupyter.providers._common import (
    RETRYABLE_STREAM_CODES,
    AdapterConfig,
    dump_arguments,
    image_url,
    stream_error,
    tool_call_end,
)
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
from agi_jupyter.providers.hosted import RESPONSES_API, responses_call, responses_tools
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
    from openai.types.responses import (
        EasyInputMessageParam,
        FunctionToolParam,
        ResponseFunctionCallOutputItemListParam,
        ResponseFunctionToolCallParam,
        ResponseInputContentParam,
        ResponseInputItemParam,
        ResponseReasoningItemParam,
    )
    from openai.types.responses.response_input_param import FunctionCallOutput

_REASONING_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})
INCOMPLETE_REASONS: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}
_NO_EVENTS: tuple[ProviderEvent, ...] = ()


MAX_RESUMES = 3  # resumed streams of one attempt at a background response (both read paths)


def responses_params(request: ProviderRequest) -> dict[str, Any]:
    """The keyword arguments of ``responses.create`` for ``request``."""
    params: dict[str, Any] = {
        "model": request.model,
        "input": input_items(request.messages),
        "stream": True,
    }
    if request.system:
        params["instructions"] = request.system
    tools: list[Any] = [function_tool(tool) for tool in request.tools]
    tools.extend(responses_tools(request))
    if tools:
        params["tools"] = tools
    level = (request.thinking_level or "off").lower()
    if level in _REASONING_EFFORTS:
        params["reasoning"] = {"effort": level, "summary": "auto"}
        params["include"] = ["reasoning.encrypted_content"]
    if request.max_output_tokens is not None:
        params["max_output_tokens"] = request.max_output_tokens
    if request.cache_key:
        params["prompt_cache_key"] = request.cache_key
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.idempotency_key:
        params["extra_headers"] = {"Idempotency-Key": request.idempotency_key}
    if request.extra_body:
        params["extra_body"] = dict(request.extra_body)
    return params


def function_tool(tool: ToolSpec) -> FunctionToolParam:
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": False,
    }


def input_items(messages: Iterable[ChatMessage]) -> list[ResponseInputItemParam]:
    items: list[ResponseInputItemParam] = []
    for message in messages:
        if message.role == "assistant":
            items.extend(assistant_items(message.parts))
        else:
            items.extend(user_items(message))
    return items


def user_items(message: ChatMessage) -> list[ResponseInputItemParam]:
    """A user/system/tool message: its tool results, then its text and images."""
    items: list[ResponseInputItemParam] = [
        function_call_output(p) for p in message.parts if isinstance(p, ToolResultPart)
    ]
    content: list[ResponseInputContentParam] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            content.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart):
            content.append({"type": "input_image", "image_url": image_url(part), "detail": "auto"})
    if content:
        role: Literal["system", "user"] = "system" if message.role == "system" else "user"
        item: EasyInputMessageParam = {"type": "message", "role": role, "content": content}
        items.append(item)
    return items


def assistant_items(parts: Sequence[Part]) -> list[ResponseInputItemParam]:
    """An assistant message in output order: reasoning, text, function calls."""
    items: list[ResponseInputItemParam] = []
    text: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            text.append(part.text)
            continue
        _flush_text(text, items)
        if isinstance(part, ReasoningPart):
            reasoning = reasoning_item(part)
            if reasoning is not None:
                items.append(reasoning)
        elif isinstance(part, ToolCallPart):
            items.append(function_call(part))
        elif isinstance(part, ToolResultPart):
            items.append(function_call_output(part))
        elif isinstance(part, HostedToolPart) and part.api == RESPONSES_API:
            items.extend(cast("list[ResponseInputItemParam]", part.echo))  # verbatim
    _flush_text(text, items)
    return items


def _flush_text(text: list[str], items: list[ResponseInputItemParam]) -> None:
    joined = "".join(text)
    text.clear()
    if joined:
        message: EasyInputMessageParam = {"type": "message", "role": "assistant", "content": joined}
        items.append(message)


def reasoning_item(part: ReasoningPart) -> ResponseReasoningItemParam | None:
    """The reasoning item to echo back, or None when it did not come from this API."""
    data = part.provider_data
    if not data or data.get("type") != "reasoning" or not data.get("id"):
        return None
    item: ResponseReasoningItemParam = {
        "type": "reasoning",
        "id": str(data["id"]),
        "summary": list(data.get("summary") or []),
    }
    if data.get("encrypted_content"):
        item["encrypted_content"] = str(data["encrypted_content"])
    return item


def function_call(part: ToolCallPart) -> ResponseFunctionToolCallParam:
    return {
        "type": "function_call",
        "call_id": part.tool_call_id,
        "name": part.name,
        "arguments": dump_arguments(part.arguments),
    }


def function_call_output(part: ToolResultPart) -> FunctionCallOutput:
    """A tool result; with images (a cell's plots), ``input_text`` and ``input_image`` items
    as its output."""
    sent = [image for image in part.images if image.data_base64 or image.url]
    if not sent:
        return {"type": "function_call_output", "call_id": part.tool_call_id, "output": part.output}
    output: ResponseFunctionCallOutputItemListParam = [
        {"type": "input_text", "text": part.output or "(no text)"}
    ]
    output.extend(
        {"type": "input_image", "image_url": image_url(image), "detail": "auto"} for image in sent
    )
    return {"type": "function_call_output", "call_id": part.tool_call_id, "output": output}


# --- stream mapping (decoded events as dicts: the HTTP path) ---------------------------------

Handler = Callable[[dict[str, Any]], Sequence[ProviderEvent]]


@dataclass
class ResponsesEvents:
    """The state of one streamed response read as dicts; one handler per wire event type."""

    config: AdapterConfig
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # by item id
    started: int = 0  # tool calls started, for ToolCallStart.index
    tool_calls: int = 0  # tool calls ended
    finished: bool = False

    def handlers(self) -> dict[str, Handler]:
        return {
            "response.created": self.on_created,
            "response.output_text.delta": self.on_text,
            "response.refusal.delta": self.on_text,
            "response.reasoning_summary_part.added": self.on_summary_part,
            "response.reasoning_summary_text.delta": self.on_reasoning,
            "response.reasoning_text.delta": self.on_reasoning,
            "response.output_item.added": self.on_item_added,
            "response.function_call_arguments.delta": self.on_arguments,
            "response.output_item.done": self.on_item_done,
            "response.completed": self.on_completed,
            "response.incomplete": self.on_incomplete,
            "response.failed": self.on_failed,
            "error": self.on_error,
        }

    def on_created(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        return (ResponseId(id=str(event["response"]["id"])),)

    def on_text(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        return (TextDelta(text=event["delta"]),)

    def on_summary_part(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        # summary parts are joined by a blank line, as in ReasoningDone.text
        return (ReasoningDelta(text="\n\n"),) if event.get("summary_index", 0) > 0 else _NO_EVENTS

    def on_reasoning(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        return (ReasoningDelta(text=event["delta"]),)

    def on_item_added(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        item = event.get("item") or {}
        if item.get("type") != "function_call":
            return _NO_EVENTS
        self.calls[item.get("id") or item["call_id"]] = item
        self.started += 1
        start = ToolCallStart(
            tool_call_id=item["call_id"], name=item["name"], index=self.started - 1
        )
        return (start,)

    def on_arguments(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        call = self.calls.get(event.get("item_id") or "")
        delta = event.get("delta")
        if call is None or not delta:
            return _NO_EVENTS
        return (ToolCallArgsDelta(tool_call_id=call["call_id"], delta=delta),)

    def on_item_done(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        item = event.get("item") or {}
        if item.get("type") == "function_call":
            self.calls.pop(item.get("id") or item["call_id"], None)
            self.tool_calls += 1
            return (tool_call_end(item["call_id"], item["name"], item.get("arguments") or ""),)
        if item.get("type") == "reasoning":
            return (reasoning_done(item),)
        hosted = responses_call(item)
        return _NO_EVENTS if hosted is None else (hosted,)

    def on_completed(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        reason: FinishReason = "tool_calls" if self.tool_calls else "stop"
        return self._finish(event["response"], reason, "completed")

    def on_incomplete(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        details = event["response"].get("incomplete_details") or {}
        raw = details.get("reason") or "incomplete"
        return self._finish(event["response"], INCOMPLETE_REASONS.get(raw, "other"), raw)

    def _finish(
        self, response: dict[str, Any], reason: FinishReason, raw: str
    ) -> Sequence[ProviderEvent]:
        self.finished = True
        finish = Finish(reason=reason, raw_reason=raw)
        usage = response.get("usage")
        if usage is None:
            return (finish,)
        return (responses_usage(usage), finish)

    def on_failed(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        error = event["response"].get("error")
        code = error.get("code") if error else None
        message = error.get("message") if error else "response.failed without details"
        raise stream_error(self.config, code, message, retryable=code in RETRYABLE_STREAM_CODES)

    def on_error(self, event: dict[str, Any]) -> Sequence[ProviderEvent]:
        code = event.get("code")
        retryable = code in RETRYABLE_STREAM_CODES
        error: ProviderError = stream_error(
            self.config, code, event.get("message") or "", retryable=retryable
        )
        raise error


def reasoning_done(item: dict[str, Any]) -> ReasoningDone:
    """A finished reasoning item, with what the API needs echoed back on the next turn."""
    summary = item.get("summary") or []
    texts = [s["text"] for s in summary] or [c["text"] for c in item.get("content") or []]
    data: dict[str, Any] = {
        "type": "reasoning",
        "id": item.get("id"),
        "summary": [{"type": "summary_text", "text": s["text"]} for s in summary],
    }
    if item.get("encrypted_content"):
        data["encrypted_content"] = item["encrypted_content"]
    return ReasoningDone(text="\n\n".join(texts), provider_data=data)


def responses_usage(usage: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=usage.get("input_tokens") or 0,
        output_tokens=usage.get("output_tokens") or 0,
        cached_input_tokens=(usage.get("input_tokens_details") or {}).get("cached_tokens") or 0,
        reasoning_tokens=(usage.get("output_tokens_details") or {}).get("reasoning_tokens") or 0,
    )
