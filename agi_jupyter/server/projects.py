"""One ``Agi`` per project folder under the server root: opened on first use, closed when idle.

The ``project`` query parameter names a folder relative to the server root (default: the
extension's ``default_project``). A path that leaves the root (``..``, an absolute path, a
symlink pointing outside) or that does not name a folder is ``PROJECT_NOT_FOUND``. The project
is that folder, or its nearest ancestor with ``.agi/`` *inside the root*: a store above the
root is never opened; if there is one, the folder gets its own ``.agi/`` instead.

An open project holds a runtime thread, database connections and provider clients, so open
projects are bounded: ``evict`` closes those not used for ``idle_timeout`` seconds, and, above
``max_open``, the least recently used ones. A project is never closed while a request holds it
(``hold``/``release``, for the length of a request or stream) or while it has runs that are not
finished (they execute, or wait for a webhook, in this process).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from agi_jupyter.config import PROJECT_DIRNAME, find_project
from agi_jupyter.errors import ErrorCode, NotFound
from agi_jupyter.store import store_exists

if TYPE_CHECKING:
    from agi_jupyter.app import Agi

log = logging.getLogger(__name__)

MAX_REMEMBERED = 1000  # project parameters remembered (they are few: one per folder in use)


def project_not_found(relative: str, why: str = "does not exist") -> NotFound:
    shown = relative if len(relative) <= 200 else relative[:200] + "…"
    return NotFound(f"project folder {shown!r} {why}", code=ErrorCode.PROJECT_NOT_FOUND)


class Projects:
    def __init__(
        self,
        root: Path,
        default: str,
        factory: Callable[[Path], Agi],
        executor: Executor | None = None,
        *,
        max_open: int = 32,
        idle_timeout: float = 600.0,
        has_store: Callable[[Path], bool] | None = None,
    ) -> None:
        self.root = root.resolve()
        self.default = default
        self.max_open = max_open
        self.idle_timeout = idle_timeout
        self._factory = factory
        self._has_store = has_store or store_exists
        self._executor = executor
        self._agis: dict[Path, Agi] = {}  # least recently used first
        self._used: dict[Path, float] = {}
        self._holds: dict[Path, int] = {}
        self._creating: dict[Path, asyncio.Future[Agi]] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._by_parameter: dict[str | None, Path] = {}

    def resolve(self, project: str | None) -> Path:
        """The project folder for a ``project`` parameter (see the module docstring)."""
        relative = self.default if project is None or project == "" else project
        if "\x00" in relative or PurePosixPath(relative).is_absolute() or Path(relative).anchor:
            raise project_not_found(relative, "is not a folder relative to the server root")
        try:
            folder = (self.root / relative).resolve()
            if not folder.is_relative_to(self.root):
                raise project_not_found(relative, "is outside the server root")
            if not folder.is_dir():
                raise project_not_found(relative)
        except (OSError, ValueError):  # a name too long for the file system, and the like
            raise project_not_found(relative) from None
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

    async def get(self, project: str | None, *, touch: bool = True) -> Agi:
        """The project's ``Agi``, opened (off the event loop) on first use. A parameter seen
        before skips the path checks (a dozen filesystem calls). ``touch=False``: a use that
        does not keep the project open (the runner's periodic tick)."""
        path = self._by_parameter.get(project)
        if path is None or path not in self._agis:
            path = self.resolve(project)
        agi = self._agis.get(path)
        if agi is None:
            agi = await self._open(path)
            self._remember(project, path)
            self._mark_used(path)
            self.evict(keep=path)
            return agi
        self._remember(project, path)
        if touch:
            self._mark_used(path)
        return agi

    async def _open(self, path: Path) -> Agi:
        pending = self._creating.get(path)
        if pending is None:
            loop = asyncio.get_running_loop()
            pending = asyncio.ensure_future(
                loop.run_in_executor(self._executor, self._factory, path)
            )
            self._creating[path] = pending
            pending.add_done_callback(lambda fut: self._created(path, fut))
        return await asyncio.shield(pending)

    def _mark_used(self, path: Path) -> None:
        self._used[path] = time.monotonic()
        agi = self._agis.pop(path, None)
        if agi is not None:
            self._agis[path] = agi  # most recently used last

    def _remember(self, project: str | None, path: Path) -> None:
        if len(self._by_parameter) < MAX_REMEMBERED or project in self._by_parameter:
            self._by_parameter[project] = path

    def _created(self, path: Path, future: asyncio.Future[Agi]) -> None:
        self._creating.pop(path, None)
        if not future.cancelled() and future.exception() is None:
            self._agis[path] = future.result()
            self._used[path] = time.monotonic()

    # --- holding and closing ------------------------------------------------------------------

    def hold(self, agi: Agi) -> Path:
        """Keep ``agi`` open until ``release``: a request or a stream is using it."""
        path = agi.project
        self._holds[path] = self._holds.get(path, 0) + 1
        return path

    def release(self, path: Path) -> None:
        count = self._holds.get(path, 0) - 1
        if count > 0:
            self._holds[path] = count
        else:
            self._holds.pop(path, None)
        self._used[path] = time.monotonic()

    def evict(self, *, now: float | None = None, keep: Path | None = None) -> list[Path]:
        """Close the projects idle for ``idle_timeout``, then the least recently used ones
        above ``max_open``; never one that is held or has unfinished runs. Returns the paths
        being closed (the closing runs in the background, off the event loop); ``keep`` is
        one about to be used."""
        now = time.monotonic() if now is None else now
        excess = len(self._agis) - self.max_open
        chosen: list[Path] = []
        for path in list(self._agis):  # least recently used first
            idle = now - self._used.get(path, now) >= self.idle_timeout
            if path == keep or not (idle or len(chosen) < excess) or not self._closable(path):
                continue
            chosen.append(path)
        for path in chosen:
            self._close_later(path)
        return chosen

    def _closable(self, path: Path) -> bool:
        if self._holds.get(path) or path in self._creating:
            return False
        if path == (self.root / self.default).resolve():
            return False  # the default project is ticked anyway: it would only reopen
        agi = self._agis[path]
        if agi.runs_manager.has_local_runs():
            return False
        try:
            active = agi.has_active_runs()
        except Exception:  # a store that cannot be read is not kept open for it
            active = False
        return not active

    def _close_later(self, path: Path) -> None:
        agi = self._agis.pop(path)
        self._used.pop(path, None)
        self._by_parameter = {k: v for k, v in self._by_parameter.items() if v != path}
        log.debug("agi: closing idle project %s", path)
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._close(agi))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _close(self, agi: Agi) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, agi.close)
        except Exception:
            log.exception("agi: closing project %s failed", agi.project)

    async def wait_closed(self) -> None:
        """Wait until every eviction under way has closed its project."""
        while self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    # --- what is open ---------------------------------------------------------------------------

    def open(self) -> list[Agi]:
        return list(self._agis.values())

    def with_store(self) -> list[str | None]:
        """Projects worth ticking: those open, and the default one (None) if it has a store
        (with a shared database it always has: other servers may have queued runs there)."""
        names: list[str | None] = [self.relative(p) for p in self._agis]
        default = (self.root / self.default).resolve()
        if default not in self._agis and self._has_store(default):
            names.append(None)
        return names

    def close(self) -> None:
        """Close every ``Agi`` (their runs still executing here are released to the queue,
        for the next server or any tick to resume)."""
        agis, self._agis = list(self._agis.values()), {}
        self._by_parameter, self._used, self._holds = {}, {}, {}
        for agi in agis:
            with contextlib.suppress(Exception):
                agi.close()
