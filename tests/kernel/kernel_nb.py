"""Running notebooks in real kernels for the kernel tests (nbclient, cell ids as JupyterLab sends).

nbclient does not send a cell's id with its execute request; ``CellIdClient`` adds it to the
request metadata (``cellId``) the way JupyterLab does, so ipykernel hands it to IPython.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from traitlets import default

RUN_ID = re.compile(r"\b(run|ses|msg|tc|art)_[0-9a-z]{26}\b")


class CellIdClient(AsyncKernelClient):  # type: ignore[misc]
    cell_id: str | None = None

    def execute(
        self,
        code: str,
        silent: bool = False,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool | None = None,
        stop_on_error: bool = True,
    ) -> str:
        content = {
            "code": code,
            "silent": silent,
            "store_history": store_history,
            "user_expressions": user_expressions or {},
            "allow_stdin": bool(allow_stdin),
            "stop_on_error": stop_on_error,
        }
        metadata = {"cellId": self.cell_id} if self.cell_id else {}
        msg = self.session.msg("execute_request", content, metadata=metadata)
        self.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])


class CellIdNotebookClient(NotebookClient):  # type: ignore[misc]
    async def async_execute_cell(self, cell: Any, cell_index: int, *args: Any, **kw: Any) -> Any:
        self.kc.cell_id = cell.get("id")
        return await super().async_execute_cell(cell, cell_index, *args, **kw)


def notebook(*sources: str) -> Any:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    return nb


class CellIdKernelManager(AsyncKernelManager):  # type: ignore[misc]
    @default("client_factory")
    def _cell_id_client(self) -> type[CellIdClient]:
        return CellIdClient


def execute(nb: Any, folder: Path, *, timeout: int = 60) -> Any:
    """Run ``nb`` top to bottom in a fresh kernel started in ``folder`` (a Restart & Run All)."""
    client = CellIdNotebookClient(
        nb,
        kernel_manager_class=CellIdKernelManager,
        kernel_name="python3",
        timeout=timeout,
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    return nb


def execute_file(path: Path, *, timeout: int = 60) -> None:
    """Restart & Run All of the notebook file as nbclient does it (no cell ids sent, no
    timing metadata), saving the result back to the file."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=timeout,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    nbformat.write(nb, path)


def texts(nb: Any) -> list[list[str]]:
    """Each cell's outputs as text (markdown preferred), ids replaced by their kind."""
    result = []
    for cell in nb.cells:
        shown = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            text = data.get("text/markdown") or data.get("text/plain") or output.get("text", "")
            shown.append(RUN_ID.sub(lambda m: m.group(1) + "_ID", str(text)))
        result.append(shown)
    return result
