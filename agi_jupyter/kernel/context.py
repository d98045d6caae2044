"""The kernel's agi state: one ``Agi`` (created on first use), the notebook session, the cell
being run, the errors of earlier cells, and the main-thread dispatcher of the ``python`` tool.

One ``KernelContext`` per IPython shell, shared by the magics and the chat widget. Creating
it is cheap (no ``Agi`` until a magic or widget needs one), so ``%load_ext`` stays fast.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import threading
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agi_jupyter.kernel.dispatch import MainThreadDispatcher
from agi_jupyter.kernel.ledger import UserExecutions
from agi_jupyter.kernel.running_cell import NotebookCellIds

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agi_jupyter.app import Agi
    from agi_jupyter.kernel.magics import AgiMagics
    from agi_jupyter.kernel.notebook import KernelNotebookAccess
    from agi_jupyter.records import Session

MAX_ERROR_CHARS = 4_000
_CONTEXTS: dict[int, KernelContext] = {}
_LOCK = threading.Lock()


def context_for(shell: Any, magics: AgiMagics | None = None) -> KernelContext:
    """The context of ``shell`` (created, with default settings, on first use)."""
    with _LOCK:
        ctx = _CONTEXTS.get(id(shell))
        if ctx is None or ctx.shell is not shell:
            if magics is None:
                from agi_jupyter.kernel.magics import AgiMagics

                magics = AgiMagics(shell=shell)
            ctx = KernelContext(shell, magics)
            _CONTEXTS[id(shell)] = ctx
        elif magics is not None:
            ctx.settings = magics
        return ctx


def drop_context(shell: Any) -> None:
    with _LOCK:
        ctx = _CONTEXTS.pop(id(shell), None)
    if ctx is not None:
        ctx.close()


class KernelContext:
    def __init__(self, shell: Any, settings: AgiMagics) -> None:
        self.shell = shell
        self.settings = settings
        self.dispatcher = MainThreadDispatcher()
        self.session_id: str | None = None
        self.errors: dict[int, str] = {}
        self.cell_id: str | None = None
        self.cell_source: str = ""
        self.execution_count: int | None = None
        self.background: dict[str, threading.Thread] = {}
        self.warm_up: threading.Thread | None = None
        self.cell_ids = NotebookCellIds()
        self._agi: Agi | None = None
        self._agi_key: tuple[Any, ...] = ()
        self._agi_lock = threading.Lock()
        self._notebooks: KernelNotebookAccess | None = None
        self.ledger = UserExecutions(self)

    # --- IPython hooks -------------------------------------------------------------------------

    def register_hooks(self) -> None:
        self.shell.events.register("pre_run_cell", self.pre_run_cell)
        self.shell.events.register("post_run_cell", self.post_run_cell)
        if hasattr(self.shell, "observe"):
            # ipykernel sets it when the kernel is asked to shut down, before the interpreter
            # starts to wind down (after which no worker thread can be started any more).
            self.shell.observe(self._on_exit_now, names="exit_now")

    def unregister_hooks(self) -> None:
        for name, hook in (
            ("pre_run_cell", self.pre_run_cell),
            ("post_run_cell", self.post_run_cell),
        ):
            with contextlib.suppress(ValueError):
                self.shell.events.unregister(name, hook)
        if hasattr(self.shell, "unobserve"):
            with contextlib.suppress(ValueError):
                self.shell.unobserve(self._on_exit_now, names="exit_now")

    def _on_exit_now(self, change: Any) -> None:
        """The kernel shuts down: release the runs it executes (see ``close``)."""
        if change.get("new"):
            self.close()

    def pre_run_cell(self, info: Any) -> None:
        self.cell_id = getattr(info, "cell_id", None) or None
        self.cell_source = getattr(info, "raw_cell", None) or ""
        stored = getattr(info, "store_history", True)
        self.execution_count = self.shell.execution_count - 1 if stored else None
        self.dispatcher.capture_loop()
        self.ledger.started(info)

    def post_run_cell(self, result: Any) -> None:
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        count = getattr(result, "execution_count", None)
        if error is not None and count is not None:
            self.errors[int(count)] = format_error(error)
        self.ledger.ended(result)

    # --- the runtime ---------------------------------------------------------------------------

    @property
    def agi(self) -> Agi:
        """The kernel's runtime, created on first use. One made with other settings (the
        warm-up's, before ``c.AgiMagics.project`` changed) is replaced."""
        with self._agi_lock:
            key = self._settings_key()
            if self._agi is not None and key != self._agi_key:
                stale, self._agi = self._agi, None
                threading.Thread(target=stale.close, name="agi-close", daemon=True).start()
            if self._agi is None:
                self._agi, self._agi_key = self._make_agi(*key), key
                # A kernel that shuts down (not killed) releases the runs it still executes,
                # so the next kernel or any tick resumes them at once.
                atexit.register(self.close)
            return self._agi

    def _settings_key(self) -> tuple[Path, tuple[tuple[str, Any], ...], float]:
        """What an ``Agi`` is made of, read once (settings may change on another thread)."""
        layer = tuple(sorted(self.settings.config_layer().items()))
        return (self.project_dir(), layer, self.settings.research_poll_interval)

    @property
    def has_agi(self) -> bool:
        return self._agi is not None

    def prepare_notebook(self) -> None:
        """Before a run starts: reach out to the notebook's open tab (``kernel.tab``)."""
        if self._notebooks is not None:
            self._notebooks.prepare()

    def _make_agi(
        self, project: Path, layer: tuple[tuple[str, Any], ...], poll_interval: float
    ) -> Agi:
        from agi_jupyter.app import Agi
        from agi_jupyter.kernel.notebook import KernelNotebookAccess
        from agi_jupyter.kernel.python_tool import PythonTool
        from agi_jupyter.research import ResearchSettings
        from agi_jupyter.tools import FEATURE_KERNEL

        self._notebooks = KernelNotebookAccess(self)
        return Agi(
            project=project,
            traitlets=dict(layer),
            features=frozenset({FEATURE_KERNEL}),
            tools=[PythonTool(self.dispatcher, self.shell.user_ns)],
            research=ResearchSettings(poll_interval=poll_interval),
            notebooks=self._notebooks,
        )

    def project_dir(self) -> Path:
        if self.settings.project:
            return Path(self.settings.project).expanduser()
        path = self.notebook_file()
        return path.parent if path is not None else Path.cwd()

    def notebook_file(self) -> Path | None:
        """The notebook's file, when the front end told the kernel (else None)."""
        configured = self.settings.notebook_path
        candidates = [
            configured,
            os.environ.get("JPY_SESSION_NAME", ""),
            str(self.shell.user_ns.get("__session__") or ""),
            str(self.shell.user_ns.get("__vsc_ipynb_file__") or ""),
        ]
        for candidate in candidates:
            if candidate and candidate.endswith(".ipynb"):
                path = Path(candidate).expanduser()
                return path if path.is_absolute() else Path.cwd() / path
        return None

    def notebook_path(self) -> str | None:
        """The notebook's path relative to the project (as stored on sessions and runs)."""
        path = self.notebook_file()
        if path is None:
            return None
        try:
            return path.resolve().relative_to(self.agi.project.resolve()).as_posix()
        except ValueError:
            return str(path)

    # --- sessions ------------------------------------------------------------------------------

    def current_session(self) -> Session:
        """The notebook session of this kernel (a fresh one on first use)."""
        if self.session_id is not None:
            return self.agi.session(self.session_id)
        return self.new_session()

    def new_session(
        self,
        *,
        agent: str | None = None,
        model: str | None = None,
        sdk: str | None = None,
        review_mode: str | None = None,
        budget: dict[str, Any] | None = None,
        hosted_tools: Sequence[str] = (),
        vector_store_ids: Sequence[str] = (),
    ) -> Session:
        path = self.notebook_path()
        title = f"notebook {Path(path).name}" if path else "notebook session"
        session = self.agi.new_session(
            agent=agent or self.settings.default_agent or None,
            model=model or self.settings.model or None,
            title=title,
            notebook_path=path,
            metadata={"front_door": "kernel"},
            sdk=sdk,
            review_mode=review_mode,
            budget=budget,
            hosted_tools=hosted_tools,
            vector_store_ids=vector_store_ids,
        )
        self.session_id = session.id
        return session

    def use_session(self, session_id: str) -> Session:
        """Make ``session_id`` the notebook's session. A session of no notebook yet (one made
        in the side panel) becomes this notebook's, so the panel follows it here."""
        session = self.agi.session(session_id)
        path = self.notebook_path()
        if path and not session.notebook_path:
            session = self.agi.update_session(session.id, notebook_path=path)
        self.session_id = session.id
        return session

    def run_fields(self) -> dict[str, Any]:
        """What every run started from this kernel records about its cell. The cell id comes
        from the front end (JupyterLab sends it), else from the notebook file: the cell whose
        source is the code being run (nbclient and papermill send none)."""
        cell_id = self.cell_id
        if cell_id is None and self.cell_source:
            path = self.notebook_file()
            cell_id = self.cell_ids.find(path, self.cell_source) if path else None
        return {
            "notebook_path": self.notebook_path(),
            "cell_id": cell_id,
            "execution_count": self.execution_count,
        }

    def close(self) -> None:
        """Unhook, and close the runtime: runs still executing here are released."""
        self.unregister_hooks()
        self.ledger.close()  # the rows of the last cells first
        with self._agi_lock:
            agi, self._agi = self._agi, None
        atexit.unregister(self.close)
        if agi is not None:
            agi.close()


_CELL_FILE = re.compile(r"(ipykernel_\d+/\d+\.py|<ipython-input-[\d-]+-\w+>)$")
_INTERNAL = ("/IPython/", "/ipykernel/", "/agi_jupyter/kernel/")
MAX_FRAMES = 4


def format_error(error: BaseException) -> str:
    """The last error of a cell as a model should see it: the exception and the last frames of
    the user's code (IPython's own frames left out, cell files shown as ``<cell>``)."""
    frames = [
        f
        for f in traceback.extract_tb(error.__traceback__)
        if not any(part in f.filename for part in _INTERNAL)
    ]
    lines = []
    for frame in frames[-MAX_FRAMES:]:
        filename = "<cell>" if _CELL_FILE.search(frame.filename) else frame.filename
        code = f": {frame.line.strip()}" if frame.line else ""
        lines.append(f'  File "{filename}", line {frame.lineno}, in {frame.name}{code}')
    lines.extend(traceback.format_exception_only(type(error), error))
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)[
        -MAX_ERROR_CHARS:
    ].strip("\n")
