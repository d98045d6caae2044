"""Cells of server runs execute in the notebook's kernel in this Jupyter server.

The kernel of the notebook's session (the one JupyterLab shows for the notebook); when the
notebook has none, a session is started for it, as opening the notebook would, so the user
finds the agent's variables when they open it. Each execution uses its own kernel client;
interrupts go through the kernel manager (a front end's Interrupt button does the same).
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agi_jupyter.errors import ErrorCode
from agi_jupyter.notebook.execution import CellRun, Execution, read_history, run_cell
from agi_jupyter.notebook.kernels import kernel_name_of
from agi_jupyter.notebook.model import History
from agi_jupyter.notebook.ops import NotebookError

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

READY_TIMEOUT = 60.0
EVALUATE_TIMEOUT = 10.0  # a busy kernel answers after the cell it runs


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

    async def evaluate(
        self, api_path: str, file: Path, expressions: dict[str, str]
    ) -> dict[str, Any] | None:
        """The kernel's ``user_expressions`` replies to ``expressions`` (a silent request:
        no execution count, no history), or None when the notebook has no kernel."""
        kernel_id = await self.kernel_id(api_path, file, start=False)
        if kernel_id is None:
            return None
        client = await self._client(kernel_id)
        try:
            return await user_expressions(client, expressions)
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


async def user_expressions(client: Any, expressions: dict[str, str]) -> dict[str, Any]:
    """Evaluate ``expressions`` in the kernel of ``client`` without running a cell: each name
    to its reply (``{"status": "ok", "data": {"text/plain": ...}}`` or an error's)."""
    msg_id = client.execute("", silent=True, store_history=False, user_expressions=expressions)
    try:
        async with asyncio.timeout(EVALUATE_TIMEOUT):
            while True:
                reply = await client.get_shell_msg()
                if reply.get("parent_header", {}).get("msg_id") == msg_id:
                    break
    except TimeoutError:
        raise NotebookError(
            "the notebook's kernel did not answer (busy running a cell?)", code=ErrorCode.NO_KERNEL
        ) from None
    return dict(reply.get("content", {}).get("user_expressions") or {})
