"""How server runs (side panel, REST) reach notebooks: the server's ``NotebookAccess``.

Per call, the first that holds the notebook: the RTC shared document (jupyter-collaboration,
when someone has the notebook open), an open JupyterLab tab (the labextension's bridge), the
file through nbformat. Cells run in the notebook's kernel in this server. Paths are taken
relative to the project and, failing that, to the server root (the side panel names the
active notebook from the root).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from agi_jupyter.errors import ErrorCode
from agi_jupyter.notebook.access import NotebookTarget, locate
from agi_jupyter.notebook.document import NotebookDocument
from agi_jupyter.notebook.ops import NotebookError
from agi_jupyter.server.notebooks.bridge import TabBridge, tab_backend
from agi_jupyter.server.notebooks.kernel import ServerKernels
from agi_jupyter.server.notebooks.rtc import RtcBackend, on_loop, shared_document
from agi_jupyter.tools.paths import relative_posix, resolve_in_project

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

    from agi_jupyter.notebook.execution import CellRun, Execution
    from agi_jupyter.notebook.model import History


class ServerNotebookAccess:
    def __init__(self, serverapp: ServerApp, bridge: TabBridge) -> None:
        self.serverapp = serverapp
        self.root = Path(serverapp.root_dir).expanduser().resolve()
        self.bridge = bridge
        self.kernels = ServerKernels(serverapp)
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's, once it runs

    def locate(self, project: Path, path: str) -> NotebookTarget:
        target = locate(project, path)
        if target.file.exists() or Path(path).is_absolute():
            return target
        file = resolve_in_project(self.root, path)
        if file.exists():
            inside = file.is_relative_to(target.project)
            shown = relative_posix(target.project if inside else self.root, file)
            return NotebookTarget(project=target.project, file=file, shown=shown, root=self.root)
        return target

    def api_path(self, target: NotebookTarget) -> str:
        if not target.file.is_relative_to(self.root):
            raise NotebookError(f"{target.shown} is outside the Jupyter server's root")
        return relative_posix(self.root, target.file)

    def _loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None:
            raise NotebookError(
                "the Jupyter server is not ready yet", code=ErrorCode.SERVER_NOT_READY
            )
        return self.loop

    async def open(self, target: NotebookTarget, *, wait: bool = True) -> NotebookDocument:
        loop, api_path = self._loop(), self.api_path(target)
        ydoc = await on_loop(loop, shared_document(self.serverapp, api_path))
        if ydoc is not None:
            return NotebookDocument(RtcBackend(ydoc, loop), target.shown)
        client = self.bridge.client_for(api_path)
        if client is not None:
            return NotebookDocument(tab_backend(self.bridge, client, api_path, loop), target.shown)
        return NotebookDocument(target.backend(), target.shown)

    async def history(self, target: NotebookTarget) -> History | None:
        coro = self.kernels.history(self.api_path(target), target.file)
        return await on_loop(self._loop(), coro)

    async def execute(self, target: NotebookTarget, run: CellRun) -> Execution:
        coro = self.kernels.execute(self.api_path(target), target.file, run)
        return await on_loop(self._loop(), coro)

    async def aclose(self) -> None:
        return None
