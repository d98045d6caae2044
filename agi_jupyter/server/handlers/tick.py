"""``POST /agi/v1/runner/tick``: one bounded tick of the project's runner, with its counts."""

from __future__ import annotations

from agi_jupyter.server.handlers.base import AgiHandler, protected
from agi_jupyter.server.models import TickRequest
from agi_jupyter.server.responses import TickResponse


class TickHandler(AgiHandler):
    @protected
    async def post(self) -> None:
        body = self.body(TickRequest)
        agi = await self.agi()
        result = await agi.atick(max_runs=body.max_runs, max_webhook_events=body.max_webhook_events)
        self.reply(TickResponse(**result.to_dict()))
