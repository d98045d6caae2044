"""Sessions: list, create, read, change, delete; history; compaction on demand; the live
session stream (SSE)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import asdict
from typing import Any

from agi_jupyter.server.cursors import check_position, parse_session_cursor, session_cursor
from agi_jupyter.server.handlers.base import AgiHandler, protected
from agi_jupyter.server.models import (
    HistoryQuery,
    PageQuery,
    SessionCreate,
    SessionStreamQuery,
    SessionUpdate,
)
from agi_jupyter.server.responses import (
    CompactionResponse,
    Deleted,
    History,
    Message,
    SessionPage,
    SessionResponse,
)

KEPT_WHEN_NULL = (
    "agent",
    "sdk",
    "model",
    "queue_mode",
    "tools",
    "metadata",
    "review_mode",
    "permissions",
    "hosted_tools",
    "vector_store_ids",
)


class SessionsHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        query = self.query(PageQuery)
        agi = await self.agi()
        page = await self.page(agi.sessions, limit=query.page_size, cursor=query.cursor)
        self.reply(SessionPage(sessions=page.items, next_cursor=page.next_cursor))

    @protected
    async def post(self) -> None:
        body = self.body(SessionCreate)
        agi = await self.agi()
        session = await self.call(agi.new_session, **body.model_dump())
        self.reply(SessionResponse(session=session), status=201)


class SessionHandler(AgiHandler):
    @protected
    async def get(self, session_id: str) -> None:
        agi = await self.agi()
        self.reply(SessionResponse(session=await self.call(agi.session, session_id)))

    @protected
    async def patch(self, session_id: str) -> None:
        changes = self.body(SessionUpdate).model_dump(exclude_unset=True)
        for name in KEPT_WHEN_NULL:  # null: leave as it is (these cannot be cleared)
            if changes.get(name, "") is None:
                del changes[name]
        agi = await self.agi()
        session = await self.call(agi.update_session, session_id, **changes)
        self.reply(SessionResponse(session=session))

    @protected
    async def delete(self, session_id: str) -> None:
        agi = await self.agi()
        await self.call(agi.delete_session, session_id)
        self.reply(Deleted())


class CompactHandler(AgiHandler):
    @protected
    async def post(self, session_id: str) -> None:
        agi = await self.agi()
        compaction = await self.call(agi.compact, session_id)
        self.reply(CompactionResponse(compaction=compaction))


class HistoryHandler(AgiHandler):
    @protected
    async def get(self, session_id: str) -> None:
        query = self.query(HistoryQuery)
        agi = await self.agi()
        await self.call(agi.session, session_id)
        # every part is converted: decoded eagerly, in batches (cheaper than one by one)
        messages = await self.call(agi.history, session_id, view=query.view, lazy=False)
        items = [Message.model_validate(asdict(m)) for m in messages]
        compactions = await self.call(agi.compactions, session_id)
        self.reply(History(view=query.view, messages=items, compactions=compactions))


class SessionStreamHandler(AgiHandler):
    """Server-sent events of every run of the session, wherever it executes. Every event of
    a run carries an ``id:`` (an opaque cursor): ``Last-Event-ID`` or ``after_cursor`` resume
    right after it."""

    @protected
    async def get(self, session_id: str) -> None:
        query = self.query(SessionStreamQuery)
        text = self.request.headers.get("Last-Event-ID") or query.after_cursor
        after = parse_session_cursor(text) if text else None
        agi = await self.agi()
        await self.call(agi.session, session_id)
        if after is not None and text:  # refused before the stream starts, not inside it
            await self.call(check_position, agi, session_id, after, text)
        ids: dict[int, str] = {}

        async def events() -> AsyncGenerator[dict[str, Any], None]:
            follower = agi.afollow_session(
                session_id,
                after=after,
                idle_every=self.agi_app.stream_keepalive,
            )
            try:
                async for item in follower:
                    if item is None:
                        yield {}
                        continue
                    mark, event = item
                    ids[id(event)] = session_cursor(mark)
                    yield event
            finally:
                await follower.aclose()

        await self.send_events(
            "sse", self.bounded(events()), event_id=lambda e: ids.pop(id(e), None)
        )
