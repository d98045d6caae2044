"""One-shot: a prompt (or a short conversation) answered in a fresh session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agi_jupyter.runtime.follow import is_new
from agi_jupyter.server.handlers.base import AgiHandler, protected
from agi_jupyter.server.handlers.replies import reply_to_run
from agi_jupyter.server.models import OneShotRequest

if TYPE_CHECKING:
    from agi_jupyter.app import Agi
    from agi_jupyter.records import Run


def start_one_shot(agi: Agi, body: OneShotRequest) -> Run:
    """``Agi.one_shot`` for the request's prompt or conversation."""
    return agi.one_shot(
        body.prompt,
        messages=None if body.messages is None else [(m.role, m.content) for m in body.messages],
        agent=body.agent,
        model=body.model,
        sdk=body.sdk,
        system_prompt=body.system_prompt,
        thinking_level=body.thinking_level,
        max_iterations=body.max_iterations,
    )


class OneShotHandler(AgiHandler):
    @protected
    async def post(self) -> None:
        body = self.body(OneShotRequest)
        fmt = self.format("json")
        agi = await self.agi()
        run = await self.call(start_one_shot, agi, body)
        await reply_to_run(self, agi, run.id, fmt, fresh=is_new(run))
