"""Server-sent events read from raw bytes, for the HTTP wire path.

The SDKs decode SSE line by line in Python and then validate every event into a model; here an
event is cut from the byte stream at its blank line and, in the common case of one ``data:``
line and no other field (or an ``event:`` line and one ``data:`` line, as Anthropic and the
Responses API send them), its data is a slice of the bytes: no per-line work. Any other event
(``event:`` lines, several ``data:`` lines, comments, ``id:``/``retry:``) goes through the
general parse, which follows the SSE rules the SDKs follow: fields split at the first colon, one
leading space removed, ``data`` lines joined with newlines, events with no data skipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import NamedTuple

_MAX_NAMES = 64  # event names kept decoded (a stream uses a handful)
_names: dict[bytes, str] = {}


class SseEvent(NamedTuple):  # a tuple: about half the cost of a frozen dataclass to make
    event: str | None
    data: bytes


async def sse_events(chunks: AsyncIterable[bytes]) -> AsyncIterator[SseEvent]:
    """The events of an SSE byte stream (CRLF and CR line ends are accepted)."""
    cutter = SseCutter()
    async for chunk in chunks:
        for event in cutter.feed(chunk):
            yield event
    for event in cutter.end():
        yield event


class SseCutter:
    """Cuts events out of the chunks of an SSE byte stream, fed one by one: for a reader that
    maps them in the same loop (no generator between the socket and the mapping)."""

    __slots__ = ("after_cr", "pending")

    def __init__(self) -> None:
        self.pending = b""
        self.after_cr = False  # the last chunk ended with a CR: a LF first in this one is its pair

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events ``chunk`` completes."""
        if self.after_cr or b"\r" in chunk:
            if self.after_cr and chunk.startswith(b"\n"):
                chunk = chunk[1:]
            self.after_cr = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not self.pending and chunk.endswith(b"\n\n") and chunk.find(b"\n\n") == len(chunk) - 2:
            # the common case on a socket: a read that holds exactly one event
            event = parse_block(chunk[:-2])
            return [] if event is None else [event]
        pending = self.pending + chunk
        if b"\n\n" not in pending:
            self.pending = pending
            return []
        *complete, self.pending = pending.split(b"\n\n")
        return [event for event in map(parse_block, complete) if event is not None]

    def end(self) -> list[SseEvent]:
        """A last event the stream did not end with its blank line."""
        pending, self.pending = self.pending, b""
        event = parse_block(pending) if pending.strip() else None
        return [] if event is None else [event]


def parse_block(block: bytes) -> SseEvent | None:
    """One event from the lines between two blank lines (None: nothing to dispatch)."""
    if block.startswith(b"data: ") and b"\n" not in block:
        return SseEvent(None, block[6:])  # the hot path: one data line
    if block.startswith(b"event: "):  # the other hot path: one event line, one data line
        end = block.find(b"\n")
        if end > 0 and block.startswith(b"data: ", end + 1) and block.find(b"\n", end + 1) < 0:
            return SseEvent(event_name(block[7:end]), block[end + 7 :])
    name: str | None = None
    data: list[bytes] = []
    for line in block.split(b"\n"):
        if not line or line.startswith(b":"):
            continue  # an empty line left by a stray CR, or a comment
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value)
        elif field == b"event":
            name = event_name(value)
    if not data:
        return None
    return SseEvent(name, b"\n".join(data))


def event_name(raw: bytes) -> str:
    """An event name, decoded once per stream name (a few kinds repeat thousands of times)."""
    name = _names.get(raw)
    if name is None:
        name = raw.decode("utf-8", "replace")
        if len(_names) < _MAX_NAMES:
            _names[raw] = name
    return name
