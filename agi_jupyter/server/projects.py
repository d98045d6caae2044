"""One ``Agi`` per project folder under the server root, created on first use, closed at stop.

The ``project`` query parameter names a folder relative to the server root (default: the
extension's ``default_project``). A path that leaves the root (``..``, an absolute path, a
symlink pointing outside) is refused. The project is that folder, or its nearest ancestor
with ``.agi/`` *inside the root*: a store above the root is never opened; if there is one,
the folder gets its own ``.agi/`` instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from agi_jupyter.config import PROJECT_DIRNAME, find_project
from agi_jupyter.errors import NotFound, UsageError

if TYPE_CHECKING:
    from agi_jupyter.app import Agi

DB_FILE = "agi.sqlite"
MAX_REMEMBERED = 1000  # project parameters remembered (they are few: one per folder in use)


class Projects:
    def __init__(
        self,
        root: Path,
        default: str,
        factory: Callable[[Path], Agi],
        executor: Executor | None = None,
    ) -> None:
        self.root = root.resolve()
        self.default = default
        self._factory = factory
        self._executor = executor
        self._agis: dict[Path, Agi] = {}
        self._creating: dict[Path, asyncio.Future[Agi]] = {}
        self._by_parameter: dict[str | None, Agi] = {}

    def resolve(self, project: str | None) -> Path:
        """The project folder for a ``project`` parameter (see the module docstring)."""
        relative = self.default if project is None or project == "" else project
        if "\x00" in relative or PurePosixPath(relative).is_absolute() or Path(relative).anchor:
            raise UsageError("project must be a folder relative to the server root")
        folder = (self.root / relative).resolve()
        if not folder.is_relative_to(self.root):
            raise UsageError(f"project {relative!r} is outside the server root")
        if not folder.is_dir():
            raise NotFound(f"project folder {relative!r} does not exist", code="PROJECT_NOT_FOUND")
        return self._project_of(folder)

    def _project_of(self, folder: Path) -> Path:
        for candidate in (folder, *folder.parents):
            if not candidate.is_relative_to(self.root):
                break
            if (candidate / PROJECT_DIRNAME).is_dir():
                return candidate
        if find_project(folder) != folder:  # a .agi/ above the root would be picked: pin here
            (folder / PROJECT_DIRNAME).mkdir(exist_ok=True)
        return folder

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path != self.root else ""

    async def get(self, project: str | None) -> Agi:
        """The project's ``Agi``, created (off the event loop) on first use. A parameter
        seen before skips the path checks (a dozen filesystem calls)."""
        known = self._by_parameter.get(project)
        if known is not None:
            return known
        path = self.resolve(project)
        agi = self._agis.get(path)
        if agi is not None:
            self._remember(project, agi)
            return agi
        pending = self._creating.get(path)
        if pending is None:
            loop = asyncio.get_running_loop()
            pending = asyncio.ensure_future(
                loop.run_in_executor(self._executor, self._factory, path)
            )
            self._creating[path] = pending
            pending.add_done_callback(lambda fut: self._created(path, fut))
        agi = await asyncio.shield(pending)
        self._remember(project, agi)
        return agi

    def _remember(self, project: str | None, agi: Agi) -> None:
        if len(self._by_parameter) < MAX_REMEMBERED:
            self._by_parameter[project] = agi

    def _created(self, path: Path, future: asyncio.Future[Agi]) -> None:
        self._creating.pop(path, None)
        if not future.cancelled() and future.exception() is None:
            self._agis[path] = future.result()

    def open(self) -> list[Agi]:
        return list(self._agis.values())

    def with_store(self) -> list[str | None]:
        """Projects worth ticking: those open, and the default one (None) if it has a store."""
        names: list[str | None] = [self.relative(p) for p in self._agis]
        default = (self.root / self.default).resolve()
        if (default / PROJECT_DIRNAME / DB_FILE).is_file() and default not in self._agis:
            names.append(None)
        return names

    def close(self) -> None:
        """Close every ``Agi`` (their runs still executing here are released to the queue,
        for the next server or any tick to resume)."""
        agis, self._agis = list(self._agis.values()), {}
        self._by_parameter = {}
        for agi in agis:
            agi.close()
