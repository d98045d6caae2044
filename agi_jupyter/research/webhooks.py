"""OpenAI webhooks: signature verification (Standard Webhooks) and the idempotent inbox.

OpenAI signs each delivery with ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature``
headers (HMAC-SHA256 over ``id.timestamp.body`` with the ``whsec_`` secret); a timestamp more
than five minutes away from now is refused, so a captured delivery cannot be replayed later.
A verified event is stored once (a redelivery, known by its event id or by its ``webhook-id``,
is a no-op) and processed by the tick.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass

from agi_jupyter.errors import AgiError, ErrorCode, UsageError
from agi_jupyter.records import JSON, WebhookEvent
from agi_jupyter.store import Store

SIGNATURE_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")
PROVIDER = "openai"


class InvalidSignature(AgiError):
    code = ErrorCode.INVALID_SIGNATURE
    http_status = 401


class WebhookNotConfigured(AgiError):
    """This server has no webhook secret: for it, the webhook endpoint does not exist."""

    code = ErrorCode.WEBHOOK_NOT_CONFIGURED
    http_status = 404


@dataclass(frozen=True)
class WebhookDelivery:
    """A verified delivery: the event id, its type, the response it is about, the payload."""

    event_id: str
    type: str
    response_id: str | None
    payload: JSON
    delivery_id: str | None = None  # the webhook-id header (the same for every retry)


def verify_webhook(secret: str | None, body: bytes, headers: Mapping[str, str]) -> WebhookDelivery:
    """Check the signature of a delivery and parse it.

    Raises ``WebhookNotConfigured`` without a secret, ``InvalidSignature`` for a missing, bad,
    stale or future signature, and ``UsageError`` for a signed body that is not an event."""
    if not secret:
        raise WebhookNotConfigured(
            "no webhook secret is configured (set OPENAI_WEBHOOK_SECRET or "
            "c.AgiExtensionApp.webhook_secret)"
        )
    from standardwebhooks.webhooks import (
        EmptyWebhookSecretError,
        Webhook,
        WebhookVerificationError,
    )

    wanted = {k.lower(): v for k, v in headers.items() if k.lower() in SIGNATURE_HEADERS}
    missing = [h for h in SIGNATURE_HEADERS if not wanted.get(h)]
    if missing:
        raise InvalidSignature(f"missing signature header(s): {', '.join(missing)}")
    try:
        verifier = Webhook(secret)
    except (ValueError, binascii.Error, EmptyWebhookSecretError) as e:
        raise WebhookNotConfigured("the configured webhook secret is not a whsec_ secret") from e
    try:
        verifier.verify(body, wanted, json_parse=False)
    except (WebhookVerificationError, ValueError, binascii.Error, UnicodeDecodeError) as e:
        raise InvalidSignature(f"the webhook signature is invalid ({_reason(e)})") from None
    return parse_delivery(body, webhook_id=wanted["webhook-id"])


def _reason(error: Exception) -> str:
    if isinstance(error, UnicodeDecodeError):
        return "the body is not UTF-8"
    return str(error) or type(error).__name__


def parse_delivery(body: bytes, *, webhook_id: str) -> WebhookDelivery:
    try:
        payload = json.loads(body)
    except ValueError:
        raise UsageError("the webhook body is not JSON") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        raise UsageError("the webhook body is not an event (an object with a 'type')")
    data = payload.get("data")
    response_id = data.get("id") if isinstance(data, dict) else None
    event_id = payload.get("id")
    return WebhookDelivery(
        event_id=event_id if isinstance(event_id, str) and event_id else webhook_id,
        type=payload["type"],
        response_id=response_id if isinstance(response_id, str) else None,
        payload=payload,
        delivery_id=webhook_id,
    )


def store_delivery(store: Store, delivery: WebhookDelivery) -> tuple[WebhookEvent, bool]:
    """Insert the event unless its event id or its delivery's ``webhook-id`` is known;
    returns it and whether it is new."""
    return store.insert_webhook_event(
        provider=PROVIDER,
        event_id=delivery.event_id,
        type=delivery.type,
        payload=delivery.payload,
        response_id=delivery.response_id,
        delivery_id=delivery.delivery_id,
    )
