"""Answers that need no model turn: the ``/_fake/*`` control endpoints and model lists.

Control endpoints let another process script a server it did not start::

    POST /_fake/enqueue         JSON list of turns (Turn fields; tool_calls/fault as objects)
    GET  /_fake/requests        the request log, oldest first
    POST /_fake/reset           empty queue, log and stored responses; restore the default rule
    POST /_fake/complete/{id}   make a background response due now
    POST /_fake/release         let streams held by ``Fault.hold_after`` go on
    GET  /_fake/closed          streams their client closed before their end: path, and when
                                (``time.monotonic()``, system-wide on Linux)
    GET  /_fake/health          {"ok": true}
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from agi_jupyter.testing.rules import default_rule
from agi_jupyter.testing.script import JSON, request_to_dict, turn_from_dict
from agi_jupyter.testing.state import FakeState

MODELS = ("fake", "gpt-fake", "claude-fake")


def handle_control(state: FakeState, method: str, path: str, body: Any) -> tuple[int, Any]:
    """``(status, JSON)`` for a ``/_fake/...`` request."""
    action = path.removeprefix("/_fake/")
    try:
        if (method, action) == ("POST", "enqueue"):
            return 200, _enqueue(state, body)
        if (method, action) == ("GET", "requests"):
            return 200, [request_to_dict(r) for r in state.requests]
        if (method, action) == ("POST", "reset"):
            reset(state)
            return 200, {"ok": True}
        if method == "POST" and action.startswith("complete/"):
            state.store.complete(unquote(action.removeprefix("complete/")))
            return 200, {"ok": True}
        if (method, action) == ("POST", "release"):
            state.gate.set()
            return 200, {"ok": True}
        if (method, action) == ("GET", "closed"):
            return 200, [{"path": path, "monotonic": at} for path, at in state.closed]
        if (method, action) == ("GET", "health"):
            return 200, {"ok": True, "pending_turns": state.pending()}
    except (ValueError, TypeError) as exc:
        return 400, {"error": str(exc)}
    except KeyError as exc:
        return 404, {"error": f"unknown response id {exc}"}
    return 404, {"error": f"no control endpoint {method} {path}"}


def reset(state: FakeState) -> None:
    state.clear()
    state.default_rule = default_rule


def _enqueue(state: FakeState, body: Any) -> JSON:
    items = body if isinstance(body, list) else [body]
    turns = [turn_from_dict(item) for item in items]
    state.enqueue(*turns)
    return {"queued": len(turns), "pending_turns": state.pending()}


def models_list(anthropic_style: bool) -> JSON:
    """``GET /v1/models`` in the OpenAI shape, or Anthropic's when its version header came."""
    if anthropic_style:
        models: list[JSON] = [
            {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
            for m in MODELS
        ]
        return {"data": models, "has_more": False, "first_id": MODELS[0], "last_id": MODELS[-1]}
    data = [{"id": m, "object": "model", "created": 0, "owned_by": "agi-jupyter"} for m in MODELS]
    return {"object": "list", "data": data}
