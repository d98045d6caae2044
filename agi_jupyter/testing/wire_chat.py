"""OpenAI Chat Completions on the wire (``POST /v1/chat/completions``).

Stream (``data:`` lines only, no ``event:``)::

    {delta: {role: assistant, content: "" (null when only tool calls)}}
    {delta: {reasoning_content: ...}} ...      reasoning, as vLLM/DeepSeek-style servers send it
    {delta: {content: ...}} ...                text
    {delta: {tool_calls: [{index, id, type: function, function: {name, arguments: ""}}]}}
    {delta: {tool_calls: [{index, function: {arguments: ...}}]}} ...    per tool call
    {delta: {}, finish_reason: stop | tool_calls}                       final
    {choices: [], usage: {...}}           final, only with stream_options.include_usage
    [DONE]                                                              final
"""

from __future__ import annotations

from typing import Any

from agi_jupyter.testing.plan import Plan, SSEEvent, citation_span
from agi_jupyter.testing.script import JSON


def stream_events(plan: Plan) -> list[SSEEvent]:
    asked = bool((plan.body.get("stream_options") or {}).get("include_usage"))
    include_usage = asked and plan.send_usage
    first = {"role": "assistant", "content": "" if plan.has_message else None, "refusal": None}
    deltas: list[JSON] = [first]
    deltas += [{"reasoning_content": chunk} for chunk in plan.reasoning_chunks]
    deltas += [{"content": chunk} for chunk in plan.text_chunks]
    for index, call in enumerate(plan.tool_calls):
        deltas.append({"tool_calls": [_call_start(index, call.call_id, call.name)]})
        deltas += [
            {"tool_calls": [{"index": index, "function": {"arguments": part}}]}
            for part in call.arg_chunks
        ]
    events = [SSEEvent.of(_chunk(plan, delta, None, include_usage)) for delta in deltas]
    events.append(SSEEvent.of(_chunk(plan, {}, _finish(plan), include_usage), final=True))
    if include_usage:
        events.append(SSEEvent.of(_usage_chunk(plan), final=True))
    events.append(SSEEvent(None, "[DONE]", final=True))
    return events


def final_body(plan: Plan, *, truncated: bool = False) -> JSON:
    """The non-streaming ``chat.completion``; truncated -> ``finish_reason: length``."""
    message: JSON = {
        "role": "assistant",
        "content": plan.text if plan.has_message else None,
        "refusal": None,
        "annotations": [_annotation(plan, url, title) for url, title in plan.citations],
    }
    if plan.reasoning:
        message["reasoning_content"] = plan.reasoning
    if plan.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in plan.tool_calls
        ]
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": "length" if truncated else _finish(plan),
    }
    return {**_envelope(plan, "chat.completion"), "choices": [choice], "usage": usage_json(plan)}


def usage_json(plan: Plan) -> JSON:
    usage = plan.usage
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": usage.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _finish(plan: Plan) -> str:
    if plan.hit_max_tokens:
        return "length"
    return "tool_calls" if plan.tool_calls else "stop"


def _envelope(plan: Plan, obj: str) -> JSON:
    return {
        "id": plan.response_id,
        "object": obj,
        "created": plan.created,
        "model": plan.model,
        "service_tier": "default",
        "system_fingerprint": "fp_fake",
    }


def _chunk(plan: Plan, delta: JSON, finish: str | None, include_usage: bool) -> JSON:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    chunk: JSON = {**_envelope(plan, "chat.completion.chunk"), "choices": [choice]}
    if include_usage:
        chunk["usage"] = None
    return chunk


def _usage_chunk(plan: Plan) -> JSON:
    return {**_envelope(plan, "chat.completion.chunk"), "choices": [], "usage": usage_json(plan)}


def _call_start(index: int, call_id: str, name: str) -> JSON:
    return {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }


def _annotation(plan: Plan, url: str, title: str) -> dict[str, Any]:
    start, end = citation_span(plan.text, url)
    return {
        "type": "url_citation",
        "url_citation": {"url": url, "title": title, "start_index": start, "end_index": end},
    }
