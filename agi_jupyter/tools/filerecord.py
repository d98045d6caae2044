"""Recording the file changes of a run (``fs.write``, ``apply_patch``) for undo.

Like notebook changes (``notebook/record.py``): the bytes before and after go into the store as
content-addressed blobs, and one ``changes`` row of kind ``file`` names them with the run, the
tool call and the turn. A file that did not exist before has no ``before_sha``; a deleted file
has no ``after_sha``. Writing the files and recording their changes happen under one lock, so
two tool calls of a turn that touch the same file are recorded in the order they wrote it
(undo restores the snapshot before a run's first recorded change of each file).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from agi_jupyter.tools.base import ToolContext
from agi_jupyter.tools.paths import MissingPath, read_bytes_in_project

T = TypeVar("T")

# One write-and-record of project files at a time in this process (they run in threads).
_WRITES = threading.Lock()


def bytes_or_none(root: Path, rel: str) -> bytes | None:
    """A project file's bytes, or None when it does not exist."""
    try:
        return read_bytes_in_project(root, rel)[0]
    except MissingPath:
        return None


@contextmanager
def one_write_at_a_time() -> Iterator[None]:
    with _WRITES:
        yield


def write_and_record(ctx: ToolContext, root: Path, paths: list[str], write: Callable[[], T]) -> T:
    """Run ``write`` (which changes the project files ``paths``) and record what changed."""
    with one_write_at_a_time():
        before = {rel: bytes_or_none(root, rel) for rel in paths}
        result = write()
        if ctx.run_id is not None:
            for rel in paths:
                record_file_change(ctx, rel, before[rel], bytes_or_none(root, rel))
        return result


def record_file_change(
    ctx: ToolContext, path: str, before: bytes | None, after: bytes | None
) -> None:
    """One ``changes`` row of kind ``file`` (nothing when the content did not change)."""
    if before == after:
        return
    store = ctx.store
    store.add_change(
        run_id=ctx.run_id,
        kind="file",
        path=path,
        before_sha=None if before is None else store.put_blob(before),
        after_sha=None if after is None else store.put_blob(after),
        tool_call_id=ctx.tool_call_id or None,
        turn=ctx.turn,
    )
