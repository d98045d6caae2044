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
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SseEvent:
    event: str | None
    data: bytes


async def sse_events(chunks: AsyncIterable[bytes]) -> AsyncIterator[SseEvent]:
    """The events of an SSE byte stream (CRLF and CR line ends are accepted)."""
    pending = b""
    async for chunk in chunks:
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        pending += chunk
        if b"\n\n" not in pending:
            continue
        *complete, pending = pending.split(b"\n\n")
        for block in complete:
            event = parse_block(block)
            if event is not None:
                yield event
    if pending.strip():
        event = parse_block(pending)  # a last event without its blank line
        if event is not None:
            yield event


def parse_block(block: bytes) -> SseEvent | None:
    """One event from the lines between two blank lines (None: nothing to dispatch)."""
    if block.startswith(b"data: ") and b"\n" not in block:
        return SseEvent(None, block[6:])  # the hot path: one data line
    if block.startswith(b"event: "):  # the other hot path: one event line, one data line
        end = block.find(b"\n")
        if end > 0 and block.startswith(b"data: ", end + 1) and b"\n" not in block[end + 1 :]:
            return SseEvent(block[7:end].decode("utf-8", "replace"), block[end + 7 :])
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
            name = value.decode("utf-8", "replace")
    if not data:
        return None
    return SseEvent(name, b"\n".join(data))
