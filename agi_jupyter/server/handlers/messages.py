"""A session's messages: list them, or post a user message and get the reply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from pydantic import BaseModel

from agi_jupyter.errors import ErrorCode, NotFound
from agi_jupyter.records import (
    MAX_ATTACHED_BASE64,
    MAX_ATTACHED_IMAGES,
    ImagePart,
    Part,
    TextPart,
)
from agi_jupyter.runtime.follow import is_new
from agi_jupyter.server.handlers.base import AgiHandler, ApiError, B, cursor_not_found, protected
from agi_jupyter.server.handlers.replies import reply_to_run
from agi_jupyter.server.mentions import mention_parts
from agi_jupyter.server.models import ImageInput, MessageCreate, PageQuery, TextInput
from agi_jupyter.server.responses import Message, MessagePage

# What a body's attached images may add to it: each image's base64 at its bound.
IMAGES_ALLOWANCE = MAX_ATTACHED_IMAGES * MAX_ATTACHED_BASE64


class ImagesBodyHandler(AgiHandler):
    """A handler whose body may hold attached images (base64 image parts, a run body's
    ``images``): the body takes ``max_body_size`` bytes besides its images' base64, which
    ``app.attachments`` bounds on its own (``ATTACHMENT_TOO_LARGE``)."""

    @property
    def limit(self) -> int:
        return self.agi_app.max_body_size + IMAGES_ALLOWANCE

    def body(self, model: type[B]) -> B:
        parsed = super().body(model)
        images = sum(len(image.data_base64 or "") for image in _images_of(parsed))
        limit = self.agi_app.max_body_size
        if self._body_size - images > limit:
            message = f"the request body is over {limit} bytes besides its images"
            raise ApiError(413, ErrorCode.PAYLOAD_TOO_LARGE, message)
        return parsed


def _images_of(body: BaseModel) -> list[ImageInput]:
    content = getattr(body, "content", None)
    parts = content if isinstance(content, list) else getattr(body, "images", [])
    return [p for p in parts if isinstance(p, ImageInput)]


def input_parts(content: str | Sequence[TextInput | ImageInput]) -> list[Part]:
    """The message parts of a request's ``content``."""
    if isinstance(content, str):
        return [TextPart(text=content)]
    return [
        ImagePart(mime=p.mime, data_base64=p.data_base64, url=p.url)
        if isinstance(p, ImageInput)
        else TextPart(text=p.text)
        for p in content
    ]


class MessagesHandler(ImagesBodyHandler):
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
