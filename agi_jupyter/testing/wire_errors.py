"""Error bodies in each API's own shape.

OpenAI: ``{"error": {"message", "type", "param", "code"}}``.
Anthropic: ``{"type": "error", "error": {"type", "message"}, "request_id"}``.
"""

from __future__ import annotations

from agi_jupyter.testing.script import JSON

_OPENAI: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "not_found"),
    409: ("invalid_request_error", "conflict"),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", "server_error"),
    503: ("server_error", "service_unavailable"),
}
_ANTHROPIC: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def error_body(
    protocol: str, status: int, message: str | None = None, request_id: str = ""
) -> JSON:
    """The error JSON ``protocol``'s API answers ``status`` with."""
    text = message or f"(fake) error {status}"
    if protocol == "anthropic":
        kind = _ANTHROPIC.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": text}, "request_id": request_id}
    default = ("server_error", None) if status >= 500 else ("invalid_request_error", None)
    kind, code = _OPENAI.get(status, default)
    return {"error": {"message": text, "type": kind, "param": None, "code": code}}
