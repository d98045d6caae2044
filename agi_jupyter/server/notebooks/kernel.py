"""Cells of server runs execute in the notebook's kernel in this Jupyter server.

The kernel of the notebook's session (the one JupyterLab shows for the notebook); when the
notebook has none, a session is started for it, as opening the notebook would, so the user
finds the agent's variables when they open it. Each execution uses its own kernel client;
interrupts go through the kernel manager (a front end's Interrupt button does the same).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agi_jupyter.notebook.execution import CellRun, Execution, read_history, run_cell
from agi_jupyter.notebook.kernels import kernel_name_of
from agi_jupyter.notebook.model import History

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

READY_TIMEOUT = 60.0


class ServerKernels:
    """On the server's event loop only."""

    def __init__(self, serverapp: ServerApp) -> None:
        self.serverapp = serverapp

    async def kernel_id(self, api_path: str, file: Path, *, start: bool) -> str | None:
        sessions: Any = self.serverapp.session_manager
        for model in await sessions.list_sessions():
            kernel = model.get("kernel") or {}
            if str(model.get("path") or "").strip("/") == api_path and kernel.get("id"):
                return str(kernel["id"])
        if not start:
            return None
        model = await sessions.create_session(
            path=api_path, name=file.name, type="notebook", kernel_name=kernel_name_of(file)
        )
        return str(model["kernel"]["id"])

    async def _client(self, kernel_id: str) -> Any:
        manager: Any = self.serverapp.kernel_manager.get_kernel(kernel_id)
        client = manager.client()  # an async client: the server's kernel managers are async
        client.start_channels()
        await client.wait_for_ready(timeout=READY_TIMEOUT)
        return client

    async def execute(self, api_path: str, file: Path, run: CellRun) -> Execution:
        kernel_id = await self.kernel_id(api_path, file, start=True)
        assert kernel_id is not None
        client = await self._client(kernel_id)

        async def interrupt() -> None:
            kernels: Any = self.serverapp.kernel_manager  # async in jupyter-server, typed sync
            done = kernels.interrupt_kernel(kernel_id)
            if inspect.isawaitable(done):
                await done

        try:
            return await run_cell(client, run, interrupt)
        finally:
            client.stop_channels()

    async def history(self, api_path: str, file: Path) -> History | None:
        kernel_id = await self.kernel_id(api_path, file, start=False)
        if kernel_id is None:
            return None
        client = await self._client(kernel_id)
        try:
            return await read_history(client)
        finally:
            client.stop_channels()
