"""Private kernels for headless runs: one per notebook, started by this process on first use.

With no Jupyter server around (``agi`` on the command line, a script), ``notebook.run`` still
needs the notebook's kernel: this starts one (the notebook's kernelspec, else ``python3``) in
the notebook's folder, as nbclient would, and keeps it for the following calls so variables
persist between cells. Kernels are shut down when the ``Agi`` closes.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

from agi_jupyter.errors import ErrorCode
from agi_jupyter.notebook.execution import CellRun, Execution, read_history, run_cell
from agi_jupyter.notebook.model import History
from agi_jupyter.notebook.ops import NotebookError

START_TIMEOUT = 60.0


def kernel_name_of(file: Path) -> str:
    """The notebook's kernelspec name (``python3`` when it names none or cannot be read)."""
    try:
        metadata = json.loads(file.read_text(encoding="utf-8")).get("metadata") or {}
    except (OSError, ValueError):
        return "python3"
    name = (metadata.get("kernelspec") or {}).get("name")
    return str(name) if name else "python3"


class PrivateKernels:
    def __init__(self) -> None:
        self._managers: dict[Path, Any] = {}
        self._clients: dict[Path, Any] = {}
        self._lock = asyncio.Lock()
        # One execution per kernel at a time: a client's iopub messages are read by one cell.
        self._running: dict[Path, asyncio.Lock] = {}

    def has(self, file: Path) -> bool:
        return file in self._clients

    async def client(self, file: Path) -> Any:
        async with self._lock:
            client = self._clients.get(file)
            if client is None:
                client = await self._start(file)
            return client

    async def _start(self, file: Path) -> Any:
        from jupyter_client.kernelspec import NoSuchKernel
        from jupyter_client.manager import AsyncKernelManager

        manager = AsyncKernelManager(kernel_name=kernel_name_of(file))
        try:
            # The kernel process's own stdout/stderr (not the cells' outputs, which come over
            # the protocol) would otherwise land in the output of the cell that started it.
            await manager.start_kernel(
                cwd=str(file.parent), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        except NoSuchKernel as e:
            raise NotebookError(
                f"cannot run cells of {file.name}: no kernel {e.name!r} is installed "
                "(for python3: pip install ipykernel)",
                code=ErrorCode.NO_KERNEL,
            ) from None
        client = manager.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=START_TIMEOUT)
        except RuntimeError as e:
            client.stop_channels()
            await manager.shutdown_kernel(now=True)
            raise NotebookError(f"the kernel of {file.name} did not start: {e}") from None
        except asyncio.CancelledError:  # nobody waits any more (the Agi closes): no kernel left
            client.stop_channels()
            await asyncio.shield(manager.shutdown_kernel(now=True))
            raise
        self._managers[file], self._clients[file] = manager, client
        return client

    async def execute(self, file: Path, run: CellRun) -> Execution:
        """Run ``run``'s cell to its end (after the executions before it on this kernel)."""
        client = await self.client(file)
        manager = self._managers[file]

        async def interrupt() -> None:
            await manager.interrupt_kernel()

        async with self._running.setdefault(file, asyncio.Lock()):
            return await run_cell(client, run, interrupt)

    async def history(self, file: Path) -> History | None:
        client = await self.client(file)
        async with self._running.setdefault(file, asyncio.Lock()):
            return await read_history(client)

    async def aclose(self) -> None:
        managers, clients = dict(self._managers), dict(self._clients)
        self._managers.clear()
        self._clients.clear()
        for file, client in clients.items():
            client.stop_channels()
            await managers[file].shutdown_kernel(now=True)
