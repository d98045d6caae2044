"""Recording a notebook change of a run: snapshots into the store, one ``changes`` row.

Before and after contents go into the store as content-addressed blobs (an unchanged notebook
costs nothing more), and the change names them with the run, the tool call and the turn. The
first change of a run to a notebook thus holds the snapshot undo restores.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from agi_jupyter.notebook.document import Mutation
from agi_jupyter.tools.base import ToolContext

# asyncio locks belong to one event loop: one table per loop (the kernel's and the server's).
_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


@asynccontextmanager
async def one_change_at_a_time(path: str) -> AsyncIterator[None]:
    """Apply and record a change of the notebook ``path`` before the next one is applied.

    The tool calls of a turn run concurrently, and undo restores the snapshot before a run's
    first *recorded* change: were a second change applied before the first was recorded, the
    order in the store would not be the order of the changes, and undo would restore a
    notebook that already holds one of them.
    """
    locks = _LOCKS.setdefault(asyncio.get_running_loop(), {})
    async with locks.setdefault(path, asyncio.Lock()):
        yield


@dataclass(frozen=True)
class Recorded:
    before_sha: str
    after_sha: str
    changed: bool


async def record_change(ctx: ToolContext, path: str, mutation: Mutation) -> Recorded:
    return await asyncio.to_thread(_record, ctx, path, mutation)


def _record(ctx: ToolContext, path: str, mutation: Mutation) -> Recorded:
    store = ctx.store
    before = store.put_blob(mutation.before)
    after = store.put_blob(mutation.after)
    if before != after:
        store.add_change(
            run_id=ctx.run_id,
            kind="notebook",
            path=path,
            before_sha=before,
            after_sha=after,
            tool_call_id=ctx.tool_call_id or None,
            turn=ctx.turn,
        )
    return Recorded(before, after, before != after)
