"""Checking request input before it reaches a model or the store: JSON bodies, query values.

Every problem is a ``VALIDATION_ERROR`` (400) the client can act on, never a 500: JSON that is
malformed, nested deeper than ``MAX_DEPTH`` (Python's parser and serializers recurse), or
holding strings with lone surrogates (no store can encode them). Integers of any size are
fine in free-form JSON (stored as text); typed fields bound theirs (``models.py``).
"""

from __future__ import annotations

import json
from typing import Any

from agi_jupyter.errors import UsageError

MAX_DEPTH = 64  # levels of nested arrays/objects a request body may have


MISSING = object()  # no body at all (not JSON null)


def parse_json_body(raw: bytes) -> Any:
    """The JSON value of a request body; an empty body is ``MISSING`` (one of blanks only is
    not JSON, and is refused as such)."""
    if not raw:
        return MISSING
    try:
        value = json.loads(raw)
    except RecursionError:
        raise UsageError(f"the body is nested more than {MAX_DEPTH} levels deep") from None
    except (ValueError, UnicodeDecodeError):
        raise UsageError("the body is not valid JSON") from None
    check_json(value)
    return value


def check_json(value: Any) -> None:
    """``UsageError`` for nesting deeper than ``MAX_DEPTH`` and strings that are not valid
    Unicode (lone surrogates), checked iteratively: no recursion on what the client sent."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise UsageError(f"the body is nested more than {MAX_DEPTH} levels deep")
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(item, str):
            check_text(item, "the body")


def check_text(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"{where} holds text that is not valid Unicode (a lone surrogate)"
        ) from None


def query_values(arguments: dict[str, list[bytes]]) -> dict[str, str]:
    """The last value of each query argument, as text."""
    values: dict[str, str] = {}
    for name, raw in arguments.items():
        if not raw:
            continue
        try:
            values[name] = raw[-1].decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"query parameter {name!r} is not valid UTF-8") from None
    return values
