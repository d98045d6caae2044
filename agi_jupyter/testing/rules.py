"""Reading a request body of any protocol, and the default answer of the offline fake model.

The default rule, used for every request nothing was scripted for (and by the shipped ``fake``
model), is deterministic:

1. the conversation ends with tool results -> ``(offline fake model) tool NAME returned: ...``
   (one line per result, output cut to 200 characters);
2. the last user text has ``/tool NAME {json-args}`` lines -> those tool calls, no text;
3. otherwise -> ``(offline fake model) echo: <last user text>``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agi_jupyter.testing.script import JSON, FakeToolCall, Turn

PREFIX = "(offline fake model)"
_TOOL_LINE = re.compile(r"^\s*/tool\s+(\S+)(?:\s+(.*?))?\s*$")


def default_rule(protocol: str, body: JSON) -> Turn:
    """The offline fake model's answer to a request body of ``protocol`` (``fake:demo``'s
    when the request names that model)."""
    from agi_jupyter.testing.demo import demo_rule, is_demo  # demo builds on this module

    if is_demo(body):
        return demo_rule(protocol, body)
    results = trailing_tool_results(protocol, body)
    if results:
        lines = [f"{PREFIX} tool {name} returned: {output[:200]}" for name, output in results]
        return Turn(text="\n".join(lines))
    text = last_user_text(protocol, body)
    calls = parse_tool_lines(text)
    if calls:
        return Turn(tool_calls=calls)
    return Turn(text=f"{PREFIX} echo: {text}")


def parse_tool_lines(text: str) -> list[FakeToolCall]:
    """The ``/tool NAME {json}`` lines of ``text`` (arguments optional; bad JSON: not a call)."""
    calls: list[FakeToolCall] = []
    for line in text.splitlines():
        match = _TOOL_LINE.match(line)
        if match is None:
            continue
        raw = match.group(2) or "{}"
        try:
            args = json.loads(raw)
        except ValueError:
            continue
        if isinstance(args, dict):
            calls.append(FakeToolCall(match.group(1), args))
    return calls


def text_of(content: Any) -> str:
    """The plain text of a message content: a string, or a list of parts with ``text``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(text_of(part) for part in content)
    if isinstance(content, dict):
        if "text" in content:
            return str(content["text"])
        if content.get("type") == "tool_result":
            return ""
        return text_of(content.get("content"))
    return json.dumps(content)


def messages_of(protocol: str, body: JSON) -> list[JSON]:
    """The conversation items of a request (Responses ``input`` as a list)."""
    items = body.get("input") if protocol == "responses" else body.get("messages")
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return [item for item in items or [] if isinstance(item, dict)]


def last_user_text(protocol: str, body: JSON) -> str:
    for message in reversed(messages_of(protocol, body)):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = [p for p in content if isinstance(p, dict) and p.get("type") != "tool_result"]
        text = text_of(content)
        if text:
            return text
    return ""


def trailing_tool_results(protocol: str, body: JSON) -> list[tuple[str, str]]:
    """``(tool name, output text)`` of the tool results that end the conversation."""
    items = messages_of(protocol, body)
    if protocol == "chat":
        return _chat_results(items)
    if protocol == "responses":
        return _responses_results(items)
    if protocol == "anthropic":
        return _anthropic_results(items)
    return []


def _chat_results(messages: list[JSON]) -> list[tuple[str, str]]:
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[str(call.get("id"))] = str((call.get("function") or {}).get("name"))
    results: list[tuple[str, str]] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        name = names.get(str(message.get("tool_call_id")), "unknown")
        results.append((name, text_of(message.get("content"))))
    return results[::-1]


def _responses_results(items: list[JSON]) -> list[tuple[str, str]]:
    names = {
        str(item.get("call_id")): str(item.get("name"))
        for item in items
        if item.get("type") == "function_call"
    }
    results: list[tuple[str, str]] = []
    for item in reversed(items):
        if item.get("type") != "function_call_output":
            break
        name = names.get(str(item.get("call_id")), "unknown")
        results.append((name, text_of(item.get("output"))))
    return results[::-1]


def _anthropic_results(messages: list[JSON]) -> list[tuple[str, str]]:
    if not messages or messages[-1].get("role") != "user":
        return []
    names: dict[str, str] = {}
    for message in messages:
        for block in _blocks(message, "tool_use"):
            names[str(block.get("id"))] = str(block.get("name"))
    return [
        (names.get(str(block.get("tool_use_id")), "unknown"), text_of(block.get("content")))
        for block in _blocks(messages[-1], "tool_result")
    ]


def _blocks(message: JSON, block_type: str) -> list[JSON]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == block_type]


# What a fill-in-the-middle request sends the model, by protocol (see ``wire_fim``).
FIM_FIELDS = {
    "infill": ("input_prefix", "input_suffix", "input_extra", "prompt"),
    "ollama": ("system", "prompt", "suffix"),
}
_STRUCTURAL_KEYS = frozenset({"role", "type", "id", "call_id", "tool_call_id", "tool_use_id"})


def count_words(value: Any) -> int:
    """Words in the strings of a JSON value (not roles, types, ids): the fake's token count."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, dict):
        return sum(count_words(v) for k, v in value.items() if k not in _STRUCTURAL_KEYS)
    if isinstance(value, list):
        return sum(count_words(v) for v in value)
    return 0


def input_tokens(protocol: str, body: JSON) -> int:
    """The default prompt size: words of the conversation, system prompt and tools (min 1)."""
    if protocol in FIM_FIELDS:
        return max(1, count_words([body.get(name) for name in FIM_FIELDS[protocol]]))
    parts = [messages_of(protocol, body), body.get("system"), body.get("instructions")]
    return max(1, count_words(parts) + count_words(body.get("tools")))
