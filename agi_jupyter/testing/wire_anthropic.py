"""Anthropic Messages on the wire (``POST /v1/messages``).

Stream (each event has ``event: <type>``; the SDK ignores events without one)::

    message_start                          message with empty content, input usage
    content_block_start (index 0), ping    ping after the first block opens (after
                                           message_start when there is no block)
    thinking block:  content_block_start, content_block_delta(thinking_delta) ...,
                     content_block_delta(signature_delta), content_block_stop
    per hosted call: content_block_start(server_tool_use), content_block_delta(input_json_delta)
                     ..., content_block_stop; content_block_start(web_search_tool_result |
                     bash_code_execution_tool_result, whole), content_block_stop
    text block:      content_block_start, content_block_delta(text_delta) ..., content_block_stop
    per tool call:   content_block_start(tool_use), content_block_delta(input_json_delta) ...,
                     content_block_stop
    message_delta                          final: stop_reason (end_turn, tool_use, ...), usage
    message_stop                           final
"""

from __future__ import annotations

import hashlib

from agi_jupyter.testing.plan import Plan, PlannedHostedCall, PlannedToolCall, SSEEvent
from agi_jupyter.testing.script import JSON


def stream_events(plan: Plan) -> list[SSEEvent]:
    start = _message(plan, content=[], stop_reason=None)
    start["usage"]["output_tokens"] = 1
    payloads: list[JSON] = [{"type": "message_start", "message": start}]
    for index, (_, opened, deltas) in enumerate(_block_specs(plan)):
        payloads += _block_events(index, opened, deltas)
    ping_at = 2 if len(payloads) > 1 else 1
    payloads.insert(ping_at, {"type": "ping"})
    delta = {"stop_reason": _stop_reason(plan), "stop_sequence": None}
    events = [SSEEvent.of(p, event=p["type"]) for p in payloads]
    events.append(
        SSEEvent.of(
            {"type": "message_delta", "delta": delta, "usage": _usage(plan)},
            event="message_delta",
            final=True,
        )
    )
    events.append(SSEEvent.of({"type": "message_stop"}, event="message_stop", final=True))
    return events


def final_body(plan: Plan, *, truncated: bool = False) -> JSON:
    """The non-streaming message; truncated -> ``stop_reason: max_tokens``."""
    stop = "max_tokens" if truncated else _stop_reason(plan)
    return _message(plan, content=_blocks(plan), stop_reason=stop)


def signature(plan: Plan) -> str:
    """A stable fake signature for the thinking block."""
    return "fakesig-" + hashlib.sha256(plan.reasoning.encode()).hexdigest()[:32]


def _message(plan: Plan, *, content: list[JSON], stop_reason: str | None) -> JSON:
    return {
        "id": plan.response_id,
        "type": "message",
        "role": "assistant",
        "model": plan.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": _usage(plan) | {"service_tier": "standard"},
    }


def _usage(plan: Plan) -> JSON:
    """Anthropic's usage: ``input_tokens`` leaves out the tokens read from the cache."""
    return {
        "input_tokens": plan.usage.input_tokens - plan.usage.cached_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": plan.usage.cached_tokens,
        "output_tokens": plan.usage.output_tokens,
    }


def _stop_reason(plan: Plan) -> str:
    if plan.hit_max_tokens:
        return "max_tokens"
    if plan.paused:
        return "pause_turn"
    return "tool_use" if plan.tool_calls else "end_turn"


def _blocks(plan: Plan) -> list[JSON]:
    return [block for block, _, _ in _block_specs(plan)]


def _block_specs(plan: Plan) -> list[tuple[JSON, JSON, list[JSON]]]:
    """Per content block: the finished block, the block as opened, its deltas."""
    specs: list[tuple[JSON, JSON, list[JSON]]] = []
    if plan.reasoning:
        sig = signature(plan)
        deltas = [{"type": "thinking_delta", "thinking": c} for c in plan.reasoning_chunks]
        deltas.append({"type": "signature_delta", "signature": sig})
        block = {"type": "thinking", "thinking": plan.reasoning, "signature": sig}
        specs.append((block, {"type": "thinking", "thinking": "", "signature": ""}, deltas))
    for hosted in plan.hosted_calls:
        specs += _hosted_specs(hosted)
    if plan.has_message:
        deltas = [{"type": "text_delta", "text": c} for c in plan.text_chunks]
        specs.append(({"type": "text", "text": plan.text}, {"type": "text", "text": ""}, deltas))
    for call in plan.tool_calls:
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in call.arg_chunks]
        specs.append((_tool_block(call, call.input), _tool_block(call, {}), deltas))
    return specs


def _tool_block(call: PlannedToolCall, input_: JSON) -> JSON:
    return {"type": "tool_use", "id": call.call_id, "name": call.name, "input": input_}


def _block_events(index: int, opened: JSON, deltas: list[JSON]) -> list[JSON]:
    return [
        {"type": "content_block_start", "index": index, "content_block": opened},
        *[{"type": "content_block_delta", "index": index, "delta": d} for d in deltas],
        {"type": "content_block_stop", "index": index},
    ]


def _hosted_specs(call: PlannedHostedCall) -> list[tuple[JSON, JSON, list[JSON]]]:
    """A hosted call's two blocks: its ``server_tool_use`` (input streamed) and its result
    (sent whole when it opens)."""
    name = "web_search" if call.kind == "web_search" else "bash_code_execution"
    use: JSON = {"type": "server_tool_use", "id": call.call_id, "name": name}
    deltas = [{"type": "input_json_delta", "partial_json": p} for p in call.input_chunks]
    result: JSON = {"type": f"{name}_tool_result", "tool_use_id": call.call_id}
    if call.failed:
        result["content"] = {"type": f"{name}_tool_result_error", "error_code": "unavailable"}
    elif call.kind == "web_search":
        result["content"] = [
            {"type": "web_search_result", "url": url, "title": url, "encrypted_content": "fake"}
            for url in call.urls
        ]
    else:
        result["content"] = {
            "type": "bash_code_execution_result",
            "stdout": call.result,
            "stderr": "",
            "return_code": 0,
            "content": [],
        }
    return [({**use, "input": call.input}, {**use, "input": {}}, deltas), (result, result, [])]
