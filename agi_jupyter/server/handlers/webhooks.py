"""``POST /agi/v1/webhooks/openai``: authenticated by its Standard Webhooks signature alone.

Verify, store once by event id, wake the runner, answer at once; the tick does the rest.
The event goes to the ``project`` given in the URL, else to the open project that has a run
with the event's response id, else to the default project.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from agi_jupyter.errors import ErrorCode
from agi_jupyter.research import WebhookDelivery, verify_webhook
from agi_jupyter.server.handlers.base import AgiHandler, ApiError, public
from agi_jupyter.server.responses import WebhookAck

if TYPE_CHECKING:
    from agi_jupyter.app import Agi


class WebhookHandler(AgiHandler):
    challenge = 'Signature realm="openai-webhooks"'  # Standard Webhooks headers, not a token

    def check_xsrf_cookie(self) -> None:
        """No XSRF check: nothing here acts on a browser's cookies (no Jupyter auth at all)."""

    @public
    async def post(self) -> None:
        app = self.agi_app
        wait = app.webhook_limiter.retry_after(self.request.remote_ip or "unknown")
        if wait is not None:
            raise ApiError(
                429,
                ErrorCode.RATE_LIMITED,
                "too many webhook deliveries from this address",
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )
        delivery = verify_webhook(
            app.webhook_secret_value(), self.raw_body(), dict(self.request.headers)
        )
        default = await self.agi()
        explicit = self.get_query_argument("project", None) is not None
        others = [] if explicit else [a for a in self.agi_app.projects.open() if a is not default]
        inserted = await self.call(route_and_store, delivery, default, others)
        if inserted:
            app.runner.wake()
        self.reply(WebhookAck(duplicate=not inserted))


def route_and_store(delivery: WebhookDelivery, default: Agi, others: list[Agi]) -> bool:
    """Store the event in the project whose run has its response id (else the default one);
    returns whether it is new."""
    target = default
    if delivery.response_id and not default.owns_response(delivery.response_id):
        for agi in others:
            if agi.owns_response(delivery.response_id):
                target = agi
                break
    return target.accept_webhook(delivery)
