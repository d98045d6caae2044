"""How a front door reaches notebooks: which backend holds a notebook now, how its cells run.

``NotebookAccess`` is what the notebook tools, the outline and undo use; each front door gives
``Agi`` its own:

- ``HeadlessAccess`` (here; the default, e.g. ``agi`` on the command line): the file through
  nbformat, and cells run in a private kernel this process starts per notebook;
- the kernel's (``kernel.notebook``): the open JupyterLab tab over a comm, else the file; the
  kernel's own notebook runs in the kernel itself;
- the server's (``server.notebooks``): the RTC shared document, else an open tab through the
  labextension, else the file; cells run in the notebook's kernel in the server.

The backend is chosen per call, so a tab opened or closed during a run is picked up.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agi_jupyter.notebook.document import NotebookDocument
from agi_jupyter.notebook.file import FileBackend
from agi_jupyter.notebook.ops import NotebookError
from agi_jupyter.tools.paths import relative_posix, resolve_in_project

if TYPE_CHECKING:
    from agi_jupyter.notebook.execution import CellRun, Execution
    from agi_jupyter.notebook.kernels import PrivateKernels
    from agi_jupyter.notebook.model import History


@dataclass(frozen=True)
class NotebookTarget:
    """One notebook: its project, its resolved file, its path as shown (relative to the
    project, or to the server root) and the folder it is confined to (the project, or the
    server root for the notebook the user has open there)."""

    project: Path
    file: Path
    shown: str
    root: Path

    def backend(self) -> FileBackend:
        """The file itself (nbformat), opened inside ``root`` only."""
        return FileBackend(self.root, self.file, self.shown)


def locate(project: Path, path: str) -> NotebookTarget:
    """A notebook path given by a model, a session or a run, confined to the project."""
    if not path.endswith(".ipynb"):
        raise NotebookError(f"{path!r} is not a notebook (.ipynb) path")
    root = project.resolve()
    file = resolve_in_project(root, path)
    return NotebookTarget(project=root, file=file, shown=relative_posix(root, file), root=root)


class NotebookAccess(Protocol):
    def locate(self, project: Path, path: str) -> NotebookTarget: ...

    async def open(self, target: NotebookTarget, *, wait: bool = True) -> NotebookDocument:
        """The notebook through the backend that holds it now; ``wait=False``: do not wait
        to find out (a kernel's tab that has not said hello yet), use what is known now."""
        ...

    async def history(self, target: NotebookTarget) -> History | None:
        """The input history of the notebook's kernel (None: unknown, no kernel)."""
        ...

    async def execute(self, target: NotebookTarget, run: CellRun) -> Execution:
        """Run one cell in the notebook's kernel to its end, its outputs collected into
        ``run`` as they come (interrupted by ``run.interrupt``, at its ``interrupt_after``,
        or on cancellation)."""
        ...

    async def aclose(self) -> None: ...


class HeadlessAccess:
    """Files through nbformat; cells in a private kernel per notebook (started on first use,
    shut down when the ``Agi`` closes)."""

    def __init__(self) -> None:
        self._kernels: PrivateKernels | None = None

    def locate(self, project: Path, path: str) -> NotebookTarget:
        return locate(project, path)

    async def open(self, target: NotebookTarget, *, wait: bool = True) -> NotebookDocument:
        return NotebookDocument(target.backend(), target.shown)

    @property
    def kernels(self) -> PrivateKernels:
        if self._kernels is None:
            from agi_jupyter.notebook.kernels import PrivateKernels

            self._kernels = PrivateKernels()
        return self._kernels

    async def history(self, target: NotebookTarget) -> History | None:
        if self._kernels is None or not self._kernels.has(target.file):
            return None
        return await self._kernels.history(target.file)

    async def execute(self, target: NotebookTarget, run: CellRun) -> Execution:
        return await self.kernels.execute(target.file, run)

    async def aclose(self) -> None:
        if self._kernels is not None:
            await self._kernels.aclose()
