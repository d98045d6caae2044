"""How ``%%agi`` and the chat widget reach notebooks: the kernel's ``NotebookAccess``.

- The kernel's own notebook, open in a JupyterLab tab with the extension: through the tab
  (``kernel.tab``), so the user's unsaved edits and undo history stay; its cells run here,
  in this kernel (``kernel.cells``), with their outputs written into the tab.
- The kernel's own notebook with no tab listening (nbclient, nbval, a console): the file
  (``notebook.file``); its cells still run in this kernel.
- Any other notebook: the file, and a private kernel of its own (as headless runs do).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from agi_jupyter.kernel.run_cell import execute_in_kernel
from agi_jupyter.kernel.tab import TabLink
from agi_jupyter.notebook.access import HeadlessAccess, NotebookTarget, locate
from agi_jupyter.notebook.document import NotebookDocument

if TYPE_CHECKING:
    from agi_jupyter.kernel.context import KernelContext
    from agi_jupyter.notebook.execution import CellRun, Execution
    from agi_jupyter.notebook.model import History


class KernelNotebookAccess:
    def __init__(self, ctx: KernelContext) -> None:
        self.ctx = ctx
        self.link = TabLink()
        self.headless = HeadlessAccess()

    def prepare(self) -> None:
        """Before a run starts (main thread): a fresh comm to the tab (see ``kernel.tab``)."""
        if self.ctx.has_agi:
            self.link.open(self.ctx.shell, self.ctx.agi.project, self.ctx.notebook_file())

    def locate(self, project: Path, path: str) -> NotebookTarget:
        return locate(project, path)

    def is_own(self, target: NotebookTarget) -> bool:
        own = self.ctx.notebook_file()
        return own is not None and own.resolve() == target.file

    async def open(self, target: NotebookTarget, *, wait: bool = True) -> NotebookDocument:
        agi = self.ctx.agi
        if self.is_own(target) and await self.link.attached(agi, wait=wait):
            return NotebookDocument(self.link.backend(agi), target.shown)
        return await self.headless.open(target)

    async def history(self, target: NotebookTarget) -> History | None:
        if not self.is_own(target):
            return await self.headless.history(target)
        raw = list(self.ctx.shell.history_manager.input_hist_raw)
        return dict(enumerate(raw))

    async def execute(self, target: NotebookTarget, run: CellRun) -> Execution:
        if not self.is_own(target):
            return await self.headless.execute(target, run)
        return await execute_in_kernel(
            self.ctx.shell, self.ctx.dispatcher, run, guard=self._keep_cell
        )

    @contextlib.contextmanager
    def _keep_cell(self) -> Iterator[None]:
        """The running ``%%agi`` cell stays the context's cell across a nested run."""
        saved = (self.ctx.cell_id, self.ctx.execution_count)
        try:
            with self.ctx.ledger.agent_running():  # recorded by notebook.run, not as the user's
                yield
        finally:
            self.ctx.cell_id, self.ctx.execution_count = saved

    async def aclose(self) -> None:
        await self.headless.aclose()
