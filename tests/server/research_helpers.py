"""Signing OpenAI-style webhooks (Standard Webhooks) and scripting deep research answers."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime
from typing import Any

from standardwebhooks.webhooks import Webhook

from agi_jupyter.testing import Turn

SECRET = "whsec_" + base64.b64encode(b"agi-jupyter-test-webhook-secret!").decode()
REPORT = "# Tidal power in 2026\n\nTidal power is growing [1]. Costs fell [2].\n"
CITATIONS = [
    ("https://example.org/tides", "Tides report"),
    ("https://example.org/costs", "Cost study"),
]


def report_turn(response_id: str, *, delay: float = 60.0) -> Turn:
    """A background answer that stays pending ``delay`` seconds (or until completed)."""
    return Turn(
        text=REPORT,
        citations=list(CITATIONS),
        usage=(120, 480),
        background_delay=delay,
        response_id=response_id,
    )


def event_for(
    response_id: str, *, event_id: str = "evt_1", kind: str = "response.completed"
) -> dict[str, Any]:
    return {
        "id": event_id,
        "object": "event",
        "created_at": int(time.time()),
        "type": kind,
        "data": {"id": response_id},
    }


def signed(
    payload: dict[str, Any],
    *,
    secret: str = SECRET,
    msg_id: str | None = None,
    at: datetime | None = None,
) -> tuple[bytes, dict[str, str]]:
    """A delivery as OpenAI signs it; its ``webhook-id`` is ``msg_<event id>`` unless given
    (each delivery of an event has its own)."""
    msg_id = msg_id or f"msg_{payload.get('id', '1')}"
    body = json.dumps(payload)
    moment = at or datetime.now(UTC)
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(moment.timestamp())),
        "webhook-signature": Webhook(secret).sign(msg_id, moment, body),
        "Content-Type": "application/json",
    }
    return body.encode(), headers
