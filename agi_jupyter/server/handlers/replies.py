"""Answering with a run: stream its events (NDJSON/SSE), or wait and return the result."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from agi_jupyter.errors import ErrorCode
from agi_jupyter.server.handlers.base import ApiError
from agi_jupyter.server.responses import Message, RunResultResponse
from agi_jupyter.server.streaming import Format

if TYPE_CHECKING:
    from agi_jupyter.app import Agi
    from agi_jupyter.server.handlers.base import AgiHandler


async def events_of(source: AsyncIterator[dict[str, Any]]) -> AsyncGenerator[dict[str, Any], None]:
    """``source`` as an async generator that closes it when closed itself."""
    try:
        async for event in source:
            yield event
    finally:
        close = getattr(source, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()


def seq_of(event: dict[str, Any]) -> int | None:
    seq = event.get("seq")
    return seq if isinstance(seq, int) else None


# A run that failed at once for one of these never did what was asked: a JSON reply is the
# error (4xx), not a 200 holding a failed run. Other failures (the provider's) are outcomes.
REJECTED_RUN_STATUS: dict[str, int] = {
    ErrorCode.VALIDATION_ERROR: 400,
    ErrorCode.CONFIG_ERROR: 400,
    ErrorCode.PROVIDER_NOT_CONFIGURED: 400,
    # the server lacks what the session needs: its state, not the request
    ErrorCode.SDK_NOT_AVAILABLE: 409,
    ErrorCode.SDK_MODEL_MISMATCH: 409,
    ErrorCode.AGENT_NOT_FOUND: 404,
}


def _rejection(status: str, error: dict[str, Any] | None) -> ApiError | None:
    code = str((error or {}).get("code"))
    if status != "failed" or code not in REJECTED_RUN_STATUS:
        return None
    message = str((error or {}).get("message"))
    return ApiError(REJECTED_RUN_STATUS[code], code, message)


async def reply_to_run(
    handler: AgiHandler,
    agi: Agi,
    run_id: str,
    fmt: Format,
    *,
    after_seq: int = 0,
    fresh: bool = False,
) -> None:
    """Stream the run's events from ``after_seq`` (``run.meta`` first, ``run.final`` last),
    or wait for the end and answer with the run's result. ``fresh``: the run was just
    created here (``follow.is_new``): no store read on tornado's loop to start following."""
    # The follower's batches, not Agi.afollow's single events: each batch leaves in one write.
    batches = agi.afollow_batches(run_id, after_seq=after_seq, fresh=fresh)
    if fmt != "json":
        await handler.send_batches(fmt, batches, event_id=seq_of)
        return
    try:
        async for _ in batches:
            pass
    finally:
        await batches.aclose()
    result = await handler.call(agi.result, run_id)
    rejected = _rejection(result.run.status, result.run.error)
    if rejected is not None:
        raise rejected
    handler.reply(
        RunResultResponse(
            run=result.run,
            text=result.text,
            messages=[Message.model_validate(asdict(m)) for m in result.messages],
            usage=result.usage,
        )
    )
