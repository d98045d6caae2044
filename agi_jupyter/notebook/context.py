"""The notebook outline a run's system prompt gets: ``%%agi`` and side-panel runs whose agent
may read notebooks see their notebook's cells at a glance (``outline.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection
from pathlib import Path

from agi_jupyter.errors import AgiError
from agi_jupyter.notebook.access import NotebookAccess
from agi_jupyter.notebook.outline import outline
from agi_jupyter.records import Run, Session

log = logging.getLogger(__name__)
READ_TIMEOUT = 5.0


class NotebookContext:
    def __init__(self, access: NotebookAccess, project: Path) -> None:
        self.access = access
        self.project = project

    async def __call__(self, run: Run, session: Session, tools: Collection[str]) -> str | None:
        """The outline of the run's notebook, or None (no notebook, no ``notebook.read``, or
        the notebook cannot be read now: the run goes on without it)."""
        path = run.notebook_path or session.notebook_path
        if "notebook.read" not in tools or not path or not path.endswith(".ipynb"):
            return None
        with contextlib.suppress(AgiError, OSError, TimeoutError):
            async with asyncio.timeout(READ_TIMEOUT):
                target = self.access.locate(self.project, path)
                # Advisory: a kernel's tab that has not said hello yet is not waited for
                # (the file is outlined instead); the tools wait.
                doc = await self.access.open(target, wait=False)
                state = await doc.read(await self.access.history(target))
                return outline(state.path, state.cells, run.cell_id)
        log.debug("no outline of %s for run %s", path, run.id)
        return None
