"""One-shot: a prompt (or a short conversation) answered in a fresh session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agi_jupyter.errors import UsageError
from agi_jupyter.records import Run, TextPart
from agi_jupyter.runtime.follow import is_new
from agi_jupyter.server.handlers.base import AgiHandler, protected
from agi_jupyter.server.handlers.replies import reply_to_run
from agi_jupyter.server.models import ChatTurn, OneShotRequest

if TYPE_CHECKING:
    from agi_jupyter.app import Agi

ONE_SHOT_TITLE = "one-shot"


def start_one_shot(agi: Agi, body: OneShotRequest) -> Run:
    """A session flagged ``metadata.one_shot`` holding the given turns, and a run answering
    the last (user) turn."""
    if (body.prompt is None) == (body.messages is None):
        raise UsageError("give either prompt or messages")
    turns = [ChatTurn(role="user", content=body.prompt)] if body.prompt is not None else []
    turns = turns or list(body.messages or [])
    if not turns or turns[-1].role != "user":
        raise UsageError("the last message must be a user message")
    session = agi.new_session(
        agent=body.agent,
        model=body.model,
        sdk=body.sdk,
        title=ONE_SHOT_TITLE,
        system_prompt=body.system_prompt,
        metadata={"one_shot": True},
    )
    for turn in turns[:-1]:
        agi.store.add_message(session.id, turn.role, [TextPart(text=turn.content)])
    return agi.submit(
        turns[-1].content,
        session=session,
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
