"""asyncio helpers the runtime and the tool executor share.

``complete`` runs a piece of work that must not be cut in half by a cancellation: a claim
that was made, or a tool call that has run and whose result must be stored with it.
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
