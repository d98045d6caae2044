"""The user's executions into the notebook's ledger (``Agi.record_execution``).

How user executions are seen: IPython's ``pre_run_cell`` / ``post_run_cell`` events in a kernel
that loaded the extension (``%load_ext agi_jupyter``), registered by ``KernelContext``. Every
cell the kernel runs through ``run_cell`` passes there, whoever sent it; these are left out,
because the agent records them itself (``notebook.ledger``), with its run and tool call:

- an execute request sent by ``notebook.run`` (its ``metadata.agi`` names the run), seen in the
  request the kernel is handling (``kernel.get_parent``);
- a cell of this kernel's notebook run inside ``%%agi`` for ``notebook.run``
  (``kernel.run_cell``), marked by ``agent_running``.

The row is written once the cell ended, on a thread of its own (one, so rows keep their
order), so a slow store never delays the user's cells. Before the runtime exists (no ``%%agi``
or magic used yet and the warm-up not done), cells are not recorded.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agi_jupyter.records import ExecutionStatus, utc_now

if TYPE_CHECKING:
    from agi_jupyter.kernel.context import KernelContext

log = logging.getLogger(__name__)
MAX_SUMMARY = 500


@dataclass(frozen=True)
class _Started:
    cell_id: str | None
    source: str
    started_at: str


class UserExecutions:
    def __init__(self, ctx: KernelContext) -> None:
        self.ctx = ctx
        self._nested = 0
        self._started: _Started | None = None
        self._writer: ThreadPoolExecutor | None = None

    @contextlib.contextmanager
    def agent_running(self) -> Iterator[None]:
        """Cells run inside this block are the agent's (recorded by ``notebook.run``)."""
        self._nested += 1
        try:
            yield
        finally:
            self._nested -= 1

    def started(self, info: Any) -> None:
        if self._nested:  # the running %%agi cell's own row stays pending
            return
        self._started = None
        if self._from_agent():
            return
        cell_id = getattr(info, "cell_id", None) or None
        source = getattr(info, "raw_cell", None) or ""
        self._started = _Started(cell_id, source, utc_now())

    def ended(self, result: Any) -> None:
        if self._nested:
            return
        started, self._started = self._started, None
        ctx = self.ctx
        if started is None or not ctx.has_agi:
            return
        path = ctx.notebook_file()
        if path is None:
            return  # a console: no notebook to keep a ledger of
        status, summary = _outcome(result)
        count = getattr(result, "execution_count", None)
        agi = ctx.agi

        def write() -> None:
            try:
                agi.record_execution(
                    str(path),
                    cell_id=started.cell_id,
                    source=started.source,
                    started_at=started.started_at,
                    status=status,
                    execution_count=count,
                    summary=summary,
                )
            except Exception as e:  # the ledger must not disturb the user's cells
                log.warning("could not record the execution of a cell: %s", e)

        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agi-ledger")
        self._writer.submit(write)

    def flush(self) -> None:
        """Wait for the rows written so far (tests, shutdown)."""
        if self._writer is not None:
            self._writer.submit(lambda: None).result()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None

    def _from_agent(self) -> bool:
        kernel = getattr(self.ctx.shell, "kernel", None)
        get_parent = getattr(kernel, "get_parent", None)
        if get_parent is None:
            return False
        try:
            parent = get_parent("shell")
        except TypeError:  # older ipykernel: no channel argument
            parent = get_parent()
        metadata = (parent or {}).get("metadata") or {}
        return bool(metadata.get("agi"))


def _outcome(result: Any) -> tuple[ExecutionStatus, str]:
    error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
    if isinstance(error, KeyboardInterrupt):
        return "interrupted", "KeyboardInterrupt"
    if error is not None:
        return "error", f"error: {type(error).__name__}: {error}"[:MAX_SUMMARY]
    value = getattr(result, "result", None)
    return "ok", ("" if value is None else f"result: {value!r}"[:MAX_SUMMARY])
