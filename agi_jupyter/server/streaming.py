"""Response formats of event streams: NDJSON, SSE, or one JSON body at the end.

The format is chosen by the ``Accept`` header: ``text/event-stream`` -> SSE (``event:`` is the
event type, ``data:`` the event object, ``id:`` a resume position when there is one),
``application/x-ndjson`` (or ``application/jsonl``) -> one object per line,
``application/json`` -> wait and answer once; anything else gets the route's default.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import orjson

Format = Literal["json", "ndjson", "sse"]

NDJSON = "application/x-ndjson"
SSE = "text/event-stream"
JSON_TYPE = "application/json"
MEDIA_TYPES: dict[str, Format] = {
    SSE: "sse",
    NDJSON: "ndjson",
    "application/ndjson": "ndjson",
    "application/jsonl": "ndjson",
    "application/json-seq": "ndjson",
    JSON_TYPE: "json",
}
CONTENT_TYPES: dict[Format, str] = {
    "sse": SSE + "; charset=utf-8",
    "ndjson": NDJSON + "; charset=utf-8",
    "json": JSON_TYPE,
}
SSE_KEEPALIVE = b": keepalive\n\n"


def negotiate(accept: str | None, default: Format) -> Format:
    """The format the client prefers among the known ones (by q-value, then order)."""
    best: tuple[float, int, Format] | None = None
    for index, item in enumerate((accept or "").split(",")):
        media, _, params = item.strip().partition(";")
        fmt = MEDIA_TYPES.get(media.strip().lower())
        if fmt is None:
            continue
        quality = _quality(params)
        if quality > 0 and (best is None or (quality, -index) > (best[0], -best[1])):
            best = (quality, index, fmt)
    return default if best is None else best[2]


def _quality(params: str) -> float:
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 1.0


def dumps(data: Any) -> str:
    """Compact JSON text of an event or a body. orjson writes the same text as ``json`` here
    (no spaces, UTF-8 kept) ~5x faster, and every streamed event goes through it; ``json``
    writes what orjson refuses (integers over 64 bits, non-string keys, lone surrogates,
    escaped so the text can be encoded). Non-finite floats come out as ``null``, valid JSON."""
    try:
        return orjson.dumps(data).decode()
    except TypeError:
        return json.dumps(data, separators=(",", ":"))


def encode(fmt: Format, event: dict[str, Any], event_id: int | str | None = None) -> bytes:
    """One event in ``fmt`` (``ndjson`` or ``sse``)."""
    if fmt == "sse":
        return encode_sse(event, event_id)
    return (dumps(event) + "\n").encode()


def encode_sse(event: dict[str, Any], event_id: int | str | None = None) -> bytes:
    head = f"event: {event.get('type', 'message')}\n"
    if event_id is not None:
        head += f"id: {event_id}\n"
    return f"{head}data: {dumps(event)}\n\n".encode()
