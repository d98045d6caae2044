"""Recording a notebook change of a run: snapshots into the store, one ``changes`` row.

Before and after contents go into the store as content-addressed blobs (an unchanged notebook
costs nothing more), and the change names them with the run, the tool call and the turn. The
first change of a run to a notebook thus holds the snapshot undo restores.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass

from agi_jupyter.notebook.document import Mutation
from agi_jupyter.tools.base import ToolContext


@dataclass(frozen=True)
class Recorded:
    before_sha: str
    after_sha: str
    changed: bool


# One lock per notebook path and event loop (asyncio locks belong to one loop).
_ORDER: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


async def record_change(ctx: ToolContext, path: str, mutation: Mutation) -> Recorded:
    """Record a mutation that has just completed. The tool calls of one model turn run
    concurrently, and their records run in threads: without the lock, a later mutation's
    record could commit first (it did on PostgreSQL, where a write takes a round trip), and
    undo, which restores the first change's ``before``, would restore the wrong state. The
    lock is taken in the order the mutations completed (taking a free asyncio lock does not
    yield, and waiters are served first come, first served)."""
    locks = _ORDER.setdefault(asyncio.get_running_loop(), {})
    async with locks.setdefault(path, asyncio.Lock()):
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
