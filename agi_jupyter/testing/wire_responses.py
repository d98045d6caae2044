"""OpenAI Responses on the wire (``POST /v1/responses``).

Stream (each event has ``event: <type>`` and a ``sequence_number`` counting from 0)::

    response.created, response.in_progress            (response: in_progress, no output)
    reasoning item:  response.output_item.added, response.reasoning_summary_part.added,
                     response.reasoning_summary_text.delta ...,
                     response.reasoning_summary_text.done,
                     response.reasoning_summary_part.done, response.output_item.done
    message item:    response.output_item.added, response.content_part.added,
                     response.output_text.delta ..., response.output_text.annotation.added ...,
                     response.output_text.done, response.content_part.done,
                     response.output_item.done
    per hosted call: response.output_item.added (web_search_call | file_search_call |
                     code_interpreter_call), its progress events (``.in_progress``,
                     ``.searching``, code deltas, ``.interpreting``), ``.completed``,
                     response.output_item.done (with the action and sources, results, outputs)
    per tool call:   response.output_item.added (function_call),
                     response.function_call_arguments.delta ...,
                     response.function_call_arguments.done, response.output_item.done
    response.completed                      final: the whole response, with usage
"""

from __future__ import annotations

from typing import Any

from agi_jupyter.testing.plan import (
    Plan,
    PlannedHostedCall,
    PlannedToolCall,
    SSEEvent,
    citation_span,
)
from agi_jupyter.testing.script import JSON


def stream_events(plan: Plan) -> list[SSEEvent]:
    payloads: list[JSON] = [
        {"type": "response.created", "response": response_json(plan, "in_progress", [])},
        {"type": "response.in_progress", "response": response_json(plan, "in_progress", [])},
    ]
    for index, (kind, item) in enumerate(_item_kinds(plan)):
        if isinstance(item, PlannedHostedCall):
            payloads += _hosted_events(index, item)
        else:
            payloads += _ITEM_EVENTS[kind](plan, index, item)
    if plan.hit_max_tokens:
        payloads.append(
            {"type": "response.incomplete", "response": final_body(plan, truncated=True)}
        )
    else:
        payloads.append(
            {"type": "response.completed", "response": response_json(plan, "completed")}
        )
    last = len(payloads) - 1
    return [
        SSEEvent.of({**p, "sequence_number": n}, event=p["type"], final=n == last)
        for n, p in enumerate(payloads)
    ]


def response_json(
    plan: Plan, status: str, output: list[JSON] | None = None, *, error: JSON | None = None
) -> JSON:
    """The ``response`` object; ``output`` defaults to the full output of the plan."""
    body = plan.body
    done = status == "completed"
    return {
        "id": plan.response_id,
        "object": "response",
        "created_at": plan.created,
        "status": status,
        "background": bool(body.get("background")),
        "completed_at": plan.created if done else None,
        "error": error,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "metadata": body.get("metadata") or {},
        "model": plan.model,
        "output": output_items(plan) if output is None else output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": usage_json(plan) if done else None,
        "user": None,
    }


def final_body(plan: Plan, *, truncated: bool = False) -> JSON:
    """The non-streaming response; truncated -> ``incomplete`` (max_output_tokens)."""
    if not truncated:
        return response_json(plan, "completed")
    body = response_json(plan, "incomplete")
    body["incomplete_details"] = {"reason": "max_output_tokens"}
    body["usage"] = usage_json(plan)
    return body


def usage_json(plan: Plan) -> JSON:
    usage = plan.usage
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def output_items(plan: Plan) -> list[JSON]:
    items: list[JSON] = []
    for kind, item in _item_kinds(plan):
        if kind == "reasoning":
            items.append(_reasoning_item(plan, done=True))
        elif kind == "message":
            items.append(_message_item(plan, [_text_part(plan, plan.text, done=True)]))
        elif isinstance(item, PlannedHostedCall):
            items.append(_hosted_item(item, done=True))
        elif item is not None:
            items.append(_call_item(item, done=True))
    return items


def _item_kinds(plan: Plan) -> list[tuple[str, PlannedToolCall | PlannedHostedCall | None]]:
    kinds: list[tuple[str, PlannedToolCall | PlannedHostedCall | None]] = []
    if plan.reasoning:
        kinds.append(("reasoning", None))
    kinds += [("hosted", call) for call in plan.hosted_calls]
    if plan.has_message:
        kinds.append(("message", None))
    kinds += [("function_call", call) for call in plan.tool_calls]
    return kinds


def _reasoning_events(plan: Plan, index: int, _: object) -> list[JSON]:
    ref = {"item_id": plan.reasoning_id, "output_index": index, "summary_index": 0}
    part = {"type": "summary_text", "text": plan.reasoning}
    return [
        _item_event("added", index, _reasoning_item(plan, done=False)),
        {"type": "response.reasoning_summary_part.added", **ref, "part": {**part, "text": ""}},
        *[
            {"type": "response.reasoning_summary_text.delta", **ref, "delta": chunk}
            for chunk in plan.reasoning_chunks
        ],
        {"type": "response.reasoning_summary_text.done", **ref, "text": plan.reasoning},
        {"type": "response.reasoning_summary_part.done", **ref, "part": part},
        _item_event("done", index, _reasoning_item(plan, done=True)),
    ]


def _message_events(plan: Plan, index: int, _: object) -> list[JSON]:
    ref = {"item_id": plan.message_id, "output_index": index, "content_index": 0}
    done_part = _text_part(plan, plan.text, done=True)
    return [
        _item_event("added", index, _message_item(plan, [])),
        {"type": "response.content_part.added", **ref, "part": _text_part(plan, "", done=False)},
        *[
            {"type": "response.output_text.delta", **ref, "delta": chunk, "logprobs": []}
            for chunk in plan.text_chunks
        ],
        *[
            {"type": "response.output_text.annotation.added", **ref, "annotation_index": n}
            | {"annotation": annotation}
            for n, annotation in enumerate(done_part["annotations"])
        ],
        {"type": "response.output_text.done", **ref, "text": plan.text, "logprobs": []},
        {"type": "response.content_part.done", **ref, "part": done_part},
        _item_event("done", index, _message_item(plan, [done_part])),
    ]


def _call_events(plan: Plan, index: int, call: object) -> list[JSON]:
    assert isinstance(call, PlannedToolCall)
    ref = {"item_id": call.item_id, "output_index": index}
    return [
        _item_event("added", index, _call_item(call, done=False)),
        *[
            {"type": "response.function_call_arguments.delta", **ref, "delta": part}
            for part in call.arg_chunks
        ],
        {"type": "response.function_call_arguments.done", **ref, "arguments": call.arguments},
        _item_event("done", index, _call_item(call, done=True)),
    ]


_ITEM_EVENTS = {
    "reasoning": _reasoning_events,
    "message": _message_events,
    "function_call": _call_events,
}


def _item_event(which: str, index: int, item: JSON) -> JSON:
    return {"type": f"response.output_item.{which}", "output_index": index, "item": item}


def _reasoning_item(plan: Plan, *, done: bool) -> JSON:
    summary = [{"type": "summary_text", "text": plan.reasoning}] if done else []
    item: JSON = {"id": plan.reasoning_id, "type": "reasoning", "summary": summary}
    if "reasoning.encrypted_content" in (plan.body.get("include") or []):
        item["encrypted_content"] = f"fake-encrypted:{plan.reasoning_id}" if done else None
    return item


def _message_item(plan: Plan, content: list[JSON]) -> JSON:
    return {
        "id": plan.message_id,
        "type": "message",
        "status": "completed" if content else "in_progress",
        "role": "assistant",
        "content": content,
    }


def _text_part(plan: Plan, text: str, *, done: bool) -> JSON:
    annotations = [_annotation(plan.text, url, title) for url, title in plan.citations]
    return {
        "type": "output_text",
        "text": text,
        "annotations": annotations if done else [],
        "logprobs": [],
    }


def _annotation(text: str, url: str, title: str) -> dict[str, Any]:
    start, end = citation_span(text, url)
    return {
        "type": "url_citation",
        "url": url,
        "title": title,
        "start_index": start,
        "end_index": end,
    }


def _call_item(call: PlannedToolCall, *, done: bool) -> JSON:
    return {
        "id": call.item_id,
        "type": "function_call",
        "status": "completed" if done else "in_progress",
        "arguments": call.arguments if done else "",
        "call_id": call.call_id,
        "name": call.name,
    }


_HOSTED_TYPES = {
    "web_search": "web_search_call",
    "file_search": "file_search_call",
    "code": "code_interpreter_call",
}


def _hosted_events(index: int, call: PlannedHostedCall) -> list[JSON]:
    """A hosted call's item: added, its progress, completed, done (as the API streams it)."""
    kind = _HOSTED_TYPES[call.kind]
    ref = {"item_id": call.call_id, "output_index": index}
    progress = ["in_progress", "searching", "completed"]
    events: list[JSON] = [_item_event("added", index, _hosted_item(call, done=False))]
    if call.kind == "code":
        code = str(call.input.get("code") or "")
        events += [
            {"type": f"response.{kind}.in_progress", **ref},
            *[
                {"type": "response.code_interpreter_call_code.delta", **ref, "delta": chunk}
                for chunk in [code[: len(code) // 2], code[len(code) // 2 :]]
                if chunk
            ],
            {"type": "response.code_interpreter_call_code.done", **ref, "code": code},
            {"type": f"response.{kind}.interpreting", **ref},
            {"type": f"response.{kind}.completed", **ref},
        ]
    else:
        events += [{"type": f"response.{kind}.{step}", **ref} for step in progress]
    events.append(_item_event("done", index, _hosted_item(call, done=True)))
    return events


def _hosted_item(call: PlannedHostedCall, *, done: bool) -> JSON:
    status = ("failed" if call.failed else "completed") if done else "in_progress"
    item: JSON = {"id": call.call_id, "type": _HOSTED_TYPES[call.kind], "status": status}
    query = str(call.input.get("query") or "")
    if call.kind == "web_search":
        action: JSON = {"type": "search", "query": query}
        if done:
            action["sources"] = [{"type": "url", "url": url} for url in call.urls]
        item["action"] = action
    elif call.kind == "file_search":
        item["queries"] = [query] if done else []
        found = {"file_id": "file_fake", "filename": "fake.txt", "score": 1.0, "text": call.result}
        item["results"] = [found] if done and call.result else None
    else:
        item["code"] = str(call.input.get("code") or "") if done else ""
        item["container_id"] = "cntr_fake"
        item["outputs"] = [{"type": "logs", "logs": call.result}] if done else None
    return item
