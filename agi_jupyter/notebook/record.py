"""Recording a notebook change of a run: snapshots into the store, one ``changes`` row.

Before and after contents go into the store as content-addressed blobs (an unchanged notebook
costs nothing more), and the change names them with the run, the tool call and the turn. The
first change of a run to a notebook thus holds the snapshot undo restores.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from agi_jupyter.notebook.document import Mutation
from agi_jupyter.tools.base import ToolContext


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
