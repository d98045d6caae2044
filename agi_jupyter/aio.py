"""asyncio helpers the runtime and the tool executor share.

``complete`` runs a piece of work that must not be cut in half by a cancellation: a claim
that was made, or a tool call that has run and whose result must be stored with it.
``regardless`` runs an attempt's ending, which a cancellation must not turn into another one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def complete(work: Coroutine[Any, Any, T]) -> T:
    """The result of ``work`` even when the task is cancelled meanwhile; the cancellation is
    then delivered again at the task's next await (so the task still stops, after ``work``)."""
    future = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(future)
            break
        except asyncio.CancelledError:
            if future.cancelled():
                raise
            cancelled = True
    current = asyncio.current_task()
    if cancelled and current is not None:
        current.cancel()
    return result


async def regardless(ending: Coroutine[Any, Any, T]) -> T:
    """The result of an attempt's ending even when the task is cancelled meanwhile: the run
    is ending already (a cancel now finds it ended; a takeover fails its fenced writes). With
    the ending's writes on the store thread there is time for the lease keeper to see the
    run ended and report it lost, which must not turn a finished run's task into a cancelled
    one."""
    future = asyncio.ensure_future(ending)
    current = asyncio.current_task()
    while True:
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if future.cancelled():
                raise
            if current is not None:
                current.uncancel()
