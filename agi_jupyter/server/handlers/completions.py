"""Inline completion (``/agi/v1/completions``): a short model request, not a run.

``GET`` answers the project's completion settings (what an editor reads before asking);
``POST`` completes at the cursor: one JSON body in the inline completer's shape, or NDJSON
lines of the insertion so far when ``Accept`` asks for ``application/x-ndjson``. The work runs
as a task of this request: when the client closes its connection (the suggestion was
superseded), the task is cancelled, and with it the model request upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from agi_jupyter.completion.prompt import Cell, CompletionRequest, Variable
from agi_jupyter.server.handlers.base import AgiHandler, protected
from agi_jupyter.server.models import CompletionCreate
from agi_jupyter.server.responses import (
    CompletionChunk,
    CompletionItem,
    CompletionResponse,
    CompletionSettingsResponse,
    CompletionUsage,
)

if TYPE_CHECKING:  # the service imports httpx2: loaded with the runtime, not the extension
    from agi_jupyter.completion.service import Suggestion

    Suggestions = AsyncGenerator[Suggestion, None]


def completion_request(body: CompletionCreate) -> CompletionRequest:
    return CompletionRequest(
        prefix=body.prefix,
        suffix=body.suffix,
        language=body.language,
        path=body.path,
        cell_id=body.cell_id,
        model=body.model,
        cells_before=tuple(Cell(c.cell_type, c.source) for c in body.cells_before),
        cells_after=tuple(Cell(c.cell_type, c.source) for c in body.cells_after),
        variables=tuple(Variable(v.name, v.type, v.summary) for v in body.variables),
        max_output_tokens=body.max_output_tokens,
    )


def chunk(suggestion: Suggestion) -> CompletionChunk:
    usage = suggestion.usage
    return CompletionChunk(
        type="completion.done" if suggestion.done else "completion.delta",
        insertText=suggestion.text,
        done=suggestion.done,
        model=suggestion.model,
        via=suggestion.via,  # type: ignore[arg-type]  # one of the three, from Completions
        usage=None if usage is None else CompletionUsage(**usage.to_dict()),
    )


class CompletionsHandler(AgiHandler):
    # Above every body the schema allows (2.4 M characters of prefix, suffix, cells and
    # variables, at worst 12 bytes each JSON-escaped), so a body over a field's bound is a 400
    # of validation, not a 413 of size; the server keeps what fits in ``context_tokens``.
    body_limit = 32 * 1024 * 1024
    _work: asyncio.Future[None] | None = None

    @protected
    async def get(self) -> None:
        agi = await self.agi()
        self.reply(CompletionSettingsResponse(**agi.completion_settings()))

    @protected
    async def post(self) -> None:
        body = self.body(CompletionCreate)
        fmt = self.format("json")
        agi = await self.agi()
        suggestions = agi.acomplete(completion_request(body))
        self._work = asyncio.ensure_future(self._answer(suggestions, stream=fmt != "json"))
        try:
            await self._work
        except asyncio.CancelledError:
            if not self._gone:
                raise  # this request itself was cancelled (the server stops)

    def on_connection_close(self) -> None:
        super().on_connection_close()
        if self._work is not None:
            self._work.cancel()  # closes the suggestions, and the model request with them

    async def _answer(self, suggestions: Suggestions, *, stream: bool) -> None:
        async with contextlib.aclosing(suggestions):
            first = await anext(suggestions)  # an error before any text is a status code
            if stream:
                await self.send_events("ndjson", self._lines(first, suggestions))
                return
            final = first
            async for suggestion in suggestions:
                final = suggestion
            self.reply(response(final))

    @staticmethod
    async def _lines(first: Suggestion, rest: Suggestions) -> AsyncGenerator[dict[str, Any], None]:
        yield chunk(first).model_dump()
        async for suggestion in rest:
            yield chunk(suggestion).model_dump()


def response(last: Suggestion) -> CompletionResponse:
    usage = last.usage.to_dict() if last.usage is not None else {}
    return CompletionResponse(
        items=[CompletionItem(insertText=last.text)] if last.text else [],
        model=last.model or "",
        via=last.via or "chat",  # type: ignore[arg-type]
        usage=CompletionUsage(**usage),
    )
