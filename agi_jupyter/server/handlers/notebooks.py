"""Undo a run, list its changes, and the routes of the labextension's notebook bridge."""

from __future__ import annotations

from pathlib import Path

from agi_jupyter.errors import ErrorCode, NotFound, UsageError
from agi_jupyter.server.handlers.base import AgiHandler, protected
from agi_jupyter.server.models import (
    BridgeAnnounce,
    BridgeQuery,
    ChangesQuery,
    ExecutionsQuery,
    KeepRequest,
    NotebookQuery,
    NotebookReply,
    UndoRequest,
)
from agi_jupyter.server.responses import (
    Ack,
    ChangeList,
    ExecutionList,
    StaleCellList,
    UndoResponse,
)

REPLY_LIMIT = 256 * 1024 * 1024  # a reply holds the notebook before and after a change


class RunUndoHandler(AgiHandler):
    redo = False

    @protected
    async def post(self, run_id: str) -> None:
        body = self.body(UndoRequest)
        agi = await self.agi()
        result = await self.call(
            agi.undo,
            run_id,
            force=body.force,
            turn=body.turn,
            changes=body.changes,
            redo=self.redo,
        )
        self.reply(UndoResponse.model_validate(result.to_dict()))


class RunRedoHandler(RunUndoHandler):
    redo = True


class RunChangesHandler(AgiHandler):
    @protected
    async def get(self, run_id: str) -> None:
        agi = await self.agi()
        changes = await self.call(agi.changes, run_id)
        self.reply(ChangeList.model_validate({"changes": [c.to_dict() for c in changes]}))


class RunKeepHandler(AgiHandler):
    @protected
    async def post(self, run_id: str) -> None:
        body = self.body(KeepRequest)
        agi = await self.agi()
        changes = await self.call(agi.keep, run_id, body.changes)
        self.reply(ChangeList.model_validate({"changes": [c.to_dict() for c in changes]}))


class ChangesHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        query = self.query(ChangesQuery)
        agi = await self.agi()
        changes = await self.call(agi.changes_at, query.path, to_review=query.to_review)
        self.reply(ChangeList.model_validate({"changes": [c.to_dict() for c in changes]}))


class ExecutionsHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        query = self.query(ExecutionsQuery)
        agi = await self.agi()
        found = await self.call(agi.executions, query.path, limit=query.limit)
        self.reply(ExecutionList(executions=found))


class StaleCellsHandler(AgiHandler):
    @protected
    async def get(self) -> None:
        query = self.query(NotebookQuery)
        agi = await self.agi()
        self.reply(StaleCellList(cells=await self.call(agi.stale_cells, query.path)))


class NotebookRepliesHandler(AgiHandler):
    body_limit = REPLY_LIMIT

    @protected
    async def post(self) -> None:
        body = self.body(NotebookReply)
        reply = body.reply.model_dump(mode="json", exclude_unset=True)  # as the tab sent it
        if self.agi_app.bridge.resolve(body.request_id, reply):
            self.reply(Ack())
            return
        if body.project_dir is None:
            raise NotFound(
                f"no pending notebook request {body.request_id!r}", code=ErrorCode.REQUEST_NOT_FOUND
            )
        projects = self.agi_app.projects
        agi = await projects.get(
            await self.call(_project_parameter, projects.root, body.project_dir)
        )
        await self.call(agi.put_notebook_reply, body.request_id, reply)
        self.reply(Ack())


class NotebookBridgeHandler(AgiHandler):
    """A browser window's stream of notebook requests (GET), and its open notebooks (POST)."""

    _client_id: str | None = None

    @protected
    async def get(self) -> None:
        query = self.query(BridgeQuery)
        self._client_id = query.client_id
        await self.send_events("sse", self.agi_app.bridge.stream(query.client_id))

    @protected
    async def post(self) -> None:
        body = self.body(BridgeAnnounce)
        self.agi_app.bridge.announce(body.client_id, body.open)
        self.reply(Ack())

    def on_connection_close(self) -> None:
        super().on_connection_close()
        if self._client_id is not None:
            self.agi_app.bridge.hang_up(self._client_id)


def _project_parameter(root: Path, project_dir: str) -> str:
    """A kernel's project folder as the ``project`` parameter (relative to the root)."""
    folder = Path(project_dir).resolve()
    if not folder.is_relative_to(root):
        raise UsageError("project_dir is outside the Jupyter server's root")
    return folder.relative_to(root).as_posix() if folder != root else ""
