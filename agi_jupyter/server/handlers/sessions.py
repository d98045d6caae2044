"""Sessions: list, create, read, change, delete; history; the live session stream (SSE)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import asdict
from typing import Any

from agi_jupyter.server.handlers.base import AgiHandler, protected
from agi_jupyter.server.models import (
    Deleted,
    History,
    HistoryQuery,
    Message,
    PageQuery,
    SessionCreate,
    SessionPage,
    SessionResponse,
    SessionStreamQuery,
    SessionUpdate,
)


class SessionsHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        query = self.query(PageQuery)
        agi = await self.agi()
        page = await self.call(agi.sessions, limit=query.page_size, cursor=query.cursor)
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
        agi = await self.agi()
        session = await self.call(agi.update_session, session_id, **changes)
        self.reply(SessionResponse(session=session))

    @protected
    async def delete(self, session_id: str) -> None:
        agi = await self.agi()
        await self.call(agi.delete_session, session_id)
        self.reply(Deleted())


class HistoryHandler(AgiHandler):
    @protected
    async def get(self, session_id: str) -> None:
        query = self.query(HistoryQuery)
        agi = await self.agi()
        await self.call(agi.session, session_id)
        messages = await self.call(agi.history, session_id, view=query.view)
        items = [Message.model_validate(asdict(m)) for m in messages]
        self.reply(History(view=query.view, messages=items))


class SessionStreamHandler(AgiHandler):
    """Server-sent events of every run of the session, wherever it executes."""

    @protected
    async def get(self, session_id: str) -> None:
        query = self.query(SessionStreamQuery)
        after = query.after_cursor or self.request.headers.get("Last-Event-ID") or None
        agi = await self.agi()
        await self.call(agi.session, session_id)
        if after is not None:  # a malformed cursor (or another store's) is a 400, not a stream
            await self.call(
                agi.store.list_session_run_events, session_id, after_cursor=after, limit=1
            )
        positions: dict[int, str] = {}

        async def events() -> AsyncGenerator[dict[str, Any], None]:
            from agi_jupyter.runtime.follow import afollow_session

            follower = afollow_session(
                agi.store,
                agi.bus,
                session_id,
                after_cursor=after,
                idle_every=self.agi_app.stream_keepalive,
            )
            try:
                async for item in follower:
                    if item is None:
                        yield {}
                        continue
                    cursor, event = item
                    if cursor is not None:
                        positions[id(event)] = cursor
                    yield event
            finally:
                await follower.aclose()

        await self.send_events("sse", events(), event_id=lambda e: positions.pop(id(e), None))
