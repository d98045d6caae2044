"""What a test scripts and what the fake server records: turns, tool calls, faults, requests.

Plain dataclasses that import nothing from the package, plus their JSON round trip, which is
what the control endpoints (``POST /_fake/enqueue``, ``GET /_fake/requests``) speak.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

JSON = dict[str, Any]
ProtocolName = Literal["chat", "responses", "anthropic", "infill", "ollama", "other"]

_WORD_CHUNK = re.compile(r"\s*\S+\s*")


def split_words(text: str) -> list[str]:
    """Split ``text`` into word-sized chunks that keep their whitespace ("".join == text)."""
    chunks = _WORD_CHUNK.findall(text)
    return chunks if chunks or not text else [text]


@dataclass
class FakeToolCall:
    """A tool call the fake model makes.

    ``arguments`` is a dict (sent as compact JSON) or a string sent verbatim, which lets a test
    script malformed arguments. The JSON text is split into ``chunks`` argument deltas; ``id``
    defaults to a fresh ``call_...`` / ``toolu_...`` id depending on the protocol.
    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None
    chunks: int = 3


@dataclass
class FakeHostedCall:
    """A call of a provider-hosted tool the fake model makes, run by the fake provider inside
    the answer, before its text (as the real APIs stream them).

    ``name``: ``web_search``, ``file_search`` (Responses only), ``code_interpreter`` /
    ``code_execution`` (the same call: a ``code_interpreter_call`` on Responses, Anthropic's
    ``bash_code_execution``). ``input``: ``{"query": ...}`` for the searches, ``{"code": ...}``
    (``{"command": ...}`` on Anthropic) for code. ``result``: the URLs found, one a line (web
    search), the text found (file search), the output (code). ``failed``: the provider reports
    the call failed. ``id`` defaults to a fresh ``ws_``/``fs_``/``ci_`` item id (Responses) or
    ``srvtoolu_`` id (Anthropic).
    """

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    result: str = ""
    failed: bool = False
    id: str | None = None


@dataclass
class Fault:
    """How a turn misbehaves on the wire.

    ``status``: answer with this HTTP status, ``headers`` and an API-shaped error body (or
    ``body``: a dict sent as JSON, a string sent verbatim). ``drop_after``: send that many SSE
    events, then close the socket without ending the chunked body. ``truncate``: leave out the
    finishing events (finish chunk/usage/[DONE], ``response.completed``, ``message_delta`` /
    ``message_stop``) and end the body cleanly. ``delay_before_headers`` and
    ``stall_between_events`` are sleeps in seconds. ``hold_after``: send that many SSE events,
    then wait until the test releases the server's gate (``FakeLLMServer.release()``, ``POST
    /_fake/release``; at most 120 s) before sending the rest. On a background Responses request,
    a fault without ``status`` makes the stored response end ``failed``.
    """

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | str | None = None
    drop_after: int | None = None
    truncate: bool = False
    delay_before_headers: float = 0.0
    stall_between_events: float = 0.0
    hold_after: int | None = None


@dataclass
class Turn:
    """One scripted model answer, consumed by exactly one model request (of any protocol).

    ``chunks`` are the streamed text deltas (default: ``text`` split into words); when only
    ``chunks`` is given, ``text`` is their concatenation. ``usage`` is ``(input_tokens,
    output_tokens)``; by default both are word counts of the request and of the answer.
    ``citations`` are ``(url, title)`` pairs, sent as ``url_citation`` annotations.
    ``hosted_calls``: provider-hosted tool calls, streamed before the text.
    ``background_delay`` is how long a background Responses request stays pending before it
    completes by itself; ``response_id`` fixes the id of the response/completion/message.
    ``hit_max_tokens``: the answer stops at the output token limit (``finish_reason: length``,
    ``stop_reason: max_tokens``, a Responses ``incomplete`` with ``max_output_tokens``).
    ``paused``: Anthropic ends the answer with ``stop_reason: pause_turn`` (the API paused a
    long turn of its server tools; the client sends the answer back as it is to continue).
    ``send_usage=False``: a Chat Completions stream sends no usage chunk even when asked for
    one, as llama-cpp-python's server does. ``cached_tokens``: of the input tokens, those read
    from a prompt cache, reported as each API does (Chat Completions
    ``prompt_tokens_details.cached_tokens``, Responses ``input_tokens_details.cached_tokens``,
    Anthropic ``cache_read_input_tokens``, which its ``input_tokens`` do not include).
    """

    text: str = ""
    chunks: list[str] | None = None
    reasoning: str = ""
    tool_calls: list[FakeToolCall] = field(default_factory=list)
    hosted_calls: list[FakeHostedCall] = field(default_factory=list)
    usage: tuple[int, int] | None = None
    fault: Fault | None = None
    citations: list[tuple[str, str]] = field(default_factory=list)
    background_delay: float = 0.0
    response_id: str | None = None
    hit_max_tokens: bool = False
    paused: bool = False
    send_usage: bool = True
    cached_tokens: int = 0

    def __post_init__(self) -> None:
        if self.chunks is None:
            return
        joined = "".join(self.chunks)
        if not self.text:
            self.text = joined
        elif joined != self.text:
            raise ValueError("Turn.chunks must join to Turn.text")

    def text_chunks(self) -> list[str]:
        return list(self.chunks) if self.chunks is not None else split_words(self.text)


@dataclass(kw_only=True)
class RecordedRequest:
    """One HTTP request the fake server received (control endpoints excluded)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    protocol: ProtocolName


def turn_to_dict(turn: Turn) -> JSON:
    """The JSON form of a turn, as ``POST /_fake/enqueue`` takes it."""
    data = asdict(turn)
    data["citations"] = [list(pair) for pair in turn.citations]
    data["usage"] = list(turn.usage) if turn.usage is not None else None
    return data


def turn_from_dict(data: JSON) -> Turn:
    """Build a turn from its JSON form; unknown keys are an error, missing keys take defaults."""
    _check_keys(Turn, data)
    kwargs = dict(data)
    kwargs["tool_calls"] = [_tool_call_from_dict(tc) for tc in data.get("tool_calls") or []]
    kwargs["hosted_calls"] = [_hosted_from_dict(hc) for hc in data.get("hosted_calls") or []]
    if data.get("fault") is not None:
        _check_keys(Fault, data["fault"])
        kwargs["fault"] = Fault(**data["fault"])
    if data.get("usage") is not None:
        inp, out = data["usage"]
        kwargs["usage"] = (int(inp), int(out))
    kwargs["citations"] = [(str(url), str(title)) for url, title in data.get("citations") or []]
    return Turn(**kwargs)


def request_to_dict(request: RecordedRequest) -> JSON:
    return asdict(request)


def request_from_dict(data: JSON) -> RecordedRequest:
    return RecordedRequest(**data)


def _tool_call_from_dict(data: JSON) -> FakeToolCall:
    _check_keys(FakeToolCall, data)
    return FakeToolCall(**data)


def _hosted_from_dict(data: JSON) -> FakeHostedCall:
    _check_keys(FakeHostedCall, data)
    return FakeHostedCall(**data)


def _check_keys(cls: type[Any], data: Any) -> None:
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__} must be a JSON object")
    unknown = set(data) - {f.name for f in fields(cls)}
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields: {sorted(unknown)}")
