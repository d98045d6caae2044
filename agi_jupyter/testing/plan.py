"""A turn resolved for one request: ids, chunks, usage; what every wire module renders.

Also the SSE event type the wire modules produce and the handler writes.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from agi_jupyter.testing.rules import count_words, input_tokens
from agi_jupyter.testing.script import JSON, FakeHostedCall, FakeToolCall, Turn, split_words

_WORD = re.compile(r"\w+")
_PREFIXES = {
    "chat": ("chatcmpl-", "call_"),
    "responses": ("resp_", "call_"),
    "anthropic": ("msg_", "toolu_"),
}


class IdFactory:
    """Readable, deterministic ids (``resp_fake000001``); ``reset`` restarts the count."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counter = itertools.count(1)

    def new(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}fake{next(self._counter):06d}"

    def reset(self) -> None:
        with self._lock:
            self._counter = itertools.count(1)


@dataclass(frozen=True)
class SSEEvent:
    """One server-sent event; ``final`` marks the finishing events a truncated stream omits."""

    event: str | None
    data: str
    final: bool = False

    @classmethod
    def of(cls, payload: JSON, *, event: str | None = None, final: bool = False) -> SSEEvent:
        return cls(event, json.dumps(payload, separators=(",", ":")), final)

    def encode(self) -> bytes:
        head = f"event: {self.event}\n" if self.event else ""
        return f"{head}data: {self.data}\n\n".encode()


@dataclass(frozen=True)
class PlannedToolCall:
    name: str
    call_id: str
    item_id: str
    arguments: str
    arg_chunks: list[str]

    @property
    def input(self) -> dict[str, Any]:
        """The parsed arguments ({} when they are not a JSON object)."""
        try:
            value = json.loads(self.arguments)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class PlannedHostedCall:
    """A hosted tool's call as one protocol names it: ``web_search``, ``file_search``,
    ``code`` (Responses' code interpreter, Anthropic's bash code execution)."""

    kind: str
    call_id: str
    input: dict[str, Any]
    result: str
    failed: bool

    @property
    def input_chunks(self) -> list[str]:
        return split_even(json.dumps(self.input, separators=(",", ":")), 2)

    @property
    def urls(self) -> list[str]:
        return [line.strip() for line in self.result.splitlines() if line.strip()]


_HOSTED_KINDS = {
    "web_search": "web_search",
    "file_search": "file_search",
    "code_interpreter": "code",
    "code_execution": "code",
}
_HOSTED_PREFIXES = {"web_search": "ws_", "file_search": "fs_", "code": "ci_"}


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Plan:
    """Everything a wire module needs to render one answer."""

    protocol: str
    body: JSON
    model: str
    response_id: str
    message_id: str
    reasoning_id: str
    created: int
    text: str
    text_chunks: list[str]
    reasoning: str
    reasoning_chunks: list[str]
    tool_calls: list[PlannedToolCall]
    hosted_calls: list[PlannedHostedCall]
    citations: list[tuple[str, str]]
    usage: Usage
    hit_max_tokens: bool = False
    paused: bool = False
    send_usage: bool = True

    @property
    def has_message(self) -> bool:
        """Whether the answer has a text message (always, unless it is only tool calls)."""
        return bool(self.text) or not self.tool_calls


def make_plan(turn: Turn, protocol: str, body: JSON, ids: IdFactory) -> Plan:
    response_prefix, call_prefix = _PREFIXES.get(protocol, _PREFIXES["chat"])
    response_id = turn.response_id or ids.new(response_prefix)
    items = protocol == "responses"
    reasoning_id = ids.new("rs_") if items and turn.reasoning else ""
    message_id = ids.new("msg_") if items else ""
    calls = [_plan_call(tc, call_prefix, ids, items) for tc in turn.tool_calls]
    return Plan(
        protocol=protocol,
        body=body,
        model=str(body.get("model") or "fake"),
        response_id=response_id,
        message_id=message_id,
        reasoning_id=reasoning_id,
        created=int(time.time()),
        text=turn.text,
        text_chunks=turn.text_chunks(),
        reasoning=turn.reasoning,
        reasoning_chunks=split_words(turn.reasoning),
        tool_calls=calls,
        hosted_calls=[_plan_hosted(hc, protocol, ids) for hc in turn.hosted_calls],
        citations=list(turn.citations),
        usage=_usage(turn, protocol, body, calls),
        hit_max_tokens=turn.hit_max_tokens,
        paused=turn.paused,
        send_usage=turn.send_usage,
    )


def _plan_call(call: FakeToolCall, prefix: str, ids: IdFactory, items: bool) -> PlannedToolCall:
    args = call.arguments
    text = args if isinstance(args, str) else json.dumps(args, separators=(",", ":"))
    call_id = call.id or ids.new(prefix)
    return PlannedToolCall(
        name=call.name,
        call_id=call_id,
        item_id=ids.new("fc_") if items else call_id,
        arguments=text,
        arg_chunks=split_even(text, call.chunks),
    )


def _plan_hosted(call: FakeHostedCall, protocol: str, ids: IdFactory) -> PlannedHostedCall:
    kind = _HOSTED_KINDS.get(call.name)
    if kind is None or (kind == "file_search" and protocol == "anthropic"):
        raise ValueError(f"the fake {protocol} API has no hosted tool {call.name!r}")
    prefix = "srvtoolu_" if protocol == "anthropic" else _HOSTED_PREFIXES[kind]
    return PlannedHostedCall(
        kind=kind,
        call_id=call.id or ids.new(prefix),
        input=dict(call.input),
        result=call.result,
        failed=call.failed,
    )


def split_even(text: str, parts: int) -> list[str]:
    """``text`` in ``parts`` nearly equal pieces (fewer when it is shorter; never empty)."""
    if not text:
        return [""]
    size = math.ceil(len(text) / max(1, min(parts, len(text))))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage(turn: Turn, protocol: str, body: JSON, calls: list[PlannedToolCall]) -> Usage:
    reasoning = count_words(turn.reasoning)
    if turn.usage is not None:
        inp, out = turn.usage
        return Usage(inp, out, min(reasoning, out), min(turn.cached_tokens, inp))
    args = sum(len(_WORD.findall(call.arguments)) for call in calls)
    out = count_words(turn.text) + reasoning + args
    inp = input_tokens(protocol, body)
    return Usage(inp, max(1, out), reasoning, min(turn.cached_tokens, inp))


def citation_span(text: str, url: str) -> tuple[int, int]:
    """Where a citation points: the url's place in the text, else the whole text."""
    at = text.find(url)
    return (at, at + len(url)) if at >= 0 else (0, len(text))
