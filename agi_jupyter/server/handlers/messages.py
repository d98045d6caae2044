"""A session's messages: list them, or post a user message and get the reply."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agi_jupyter.errors import NotFound
from agi_jupyter.records import ImagePart, Part, TextPart
from agi_jupyter.runtime.follow import is_new
from agi_jupyter.server.handlers.base import AgiHandler, cursor_not_found, protected
from agi_jupyter.server.handlers.replies import reply_to_run
from agi_jupyter.server.mentions import mention_parts
from agi_jupyter.server.models import ImageInput, MessageCreate, PageQuery, TextInput
from agi_jupyter.server.responses import Message, MessagePage


def input_parts(content: str | list[TextInput | ImageInput]) -> list[Part]:
    """The message parts of a request's ``content``."""
    if isinstance(content, str):
        return [TextPart(text=content)]
    return [
        ImagePart(mime=p.mime, data_base64=p.data_base64, url=p.url)
        if isinstance(p, ImageInput)
        else TextPart(text=p.text)
        for p in content
    ]


class MessagesHandler(AgiHandler):
    @protected
    async def get(self, session_id: str) -> None:
        query = self.query(PageQuery)
        agi = await self.agi()
        await self.call(agi.session, session_id)
        try:
            messages = await self.call(
                agi.messages,
                session_id,
                after_id=query.cursor,
                limit=query.page_size + 1,
            )
        except NotFound:
            raise cursor_not_found(query.cursor or "") from None
        page = messages[: query.page_size]
        more = len(messages) > query.page_size
        self.reply(
            MessagePage(
                messages=[Message.model_validate(asdict(m)) for m in page],
                next_cursor=page[-1].id if more and page else None,
            )
        )

    @protected
    async def post(self, session_id: str) -> None:
        body = self.body(MessageCreate)
        agi = await self.agi()
        parts = input_parts(body.content) + await mention_parts(self, agi, body.mentions)
        if not body.run:
            message = await self.call(agi.append_message, session_id, parts)
            self.reply(Message.model_validate(asdict(message)), status=201)
            return
        fmt = self.format("json")
        run = await self.call(
            agi.submit,
            parts,
            session=session_id,
            model=body.model,
            agent=body.agent,
            thinking_level=body.thinking_level,
            max_iterations=body.max_iterations,
            **_where(body),
        )
        await reply_to_run(self, agi, run.id, fmt, fresh=is_new(run))


def _where(body: MessageCreate) -> dict[str, Any]:
    """The run fields saying which notebook and cell the user is in, when given."""
    fields = {"notebook_path": body.notebook_path, "cell_id": body.cell_id}
    return {k: v for k, v in fields.items() if v}
