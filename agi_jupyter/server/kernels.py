"""``python`` for server runs: code runs in the live kernel of the session's notebook.

A session bound to a notebook (``notebook_path``) whose kernel is running in this Jupyter
server gets the ``notebook-kernel`` feature, so agents allowed ``python`` (``build``) are
offered it; other sessions are not. The code is sent to that kernel through jupyter-server's
kernel manager as an ``execute_request`` (it queues behind whatever the kernel is running),
its stdout/stderr stream live as ``tool.call.delta`` events, and the result, errors and
outputs come back as the tool's answer. The snapshot of running notebook kernels is refreshed
on the server's loop every second and before each call.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from agi_jupyter.errors import ToolError
from agi_jupyter.records import Session
from agi_jupyter.tools import Tool, ToolArgs, ToolContext, ToolResult

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

FEATURE_NOTEBOOK_KERNEL = "notebook-kernel"
FEATURES = frozenset({FEATURE_NOTEBOOK_KERNEL})
MAX_OUTPUT = 20_000
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _key(path: Path) -> str:
    return os.path.normcase(os.path.normpath(os.path.abspath(path)))


@dataclass
class KernelReport:
    stdout: str = ""
    stderr: str = ""
    results: list[str] = field(default_factory=list)
    error: str | None = None

    def to_output(self) -> str:
        sections = []
        if self.stdout:
            sections.append(f"stdout:\n{_clip(self.stdout)}")
        if self.stderr:
            sections.append(f"stderr:\n{_clip(self.stderr)}")
        sections += [f"result: {_clip(r)}" for r in self.results]
        if self.error:
            sections.append(f"error:\n{_clip(self.error)}")
        return "\n".join(sections) or "(no output)"


def _clip(text: str) -> str:
    if len(text) <= MAX_OUTPUT:
        return text
    return text[:MAX_OUTPUT] + f"\n[... {len(text) - MAX_OUTPUT} more characters]"


class NotebookKernels:
    """Running notebook kernels of this server, and code execution in them."""

    def __init__(self, serverapp: ServerApp) -> None:
        self.serverapp = serverapp
        self.root = Path(serverapp.root_dir).expanduser()
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's loop, once started
        self._kernels: dict[str, str] = {}  # notebook file -> kernel id

    async def refresh(self) -> None:
        """Read the server's notebook sessions (on the server's loop)."""
        self.loop = asyncio.get_running_loop()
        found: dict[str, str] = {}
        for model in await self.serverapp.session_manager.list_sessions():
            kernel = model.get("kernel") or {}
            path = str(model.get("path") or "")
            if kernel.get("id") and path.endswith(".ipynb"):
                found[_key(self.root / path)] = str(kernel["id"])
        self._kernels = found

    def kernel_for(self, project: Path, session: Session) -> str | None:
        if not session.notebook_path:
            return None
        notebook = Path(session.notebook_path).expanduser()
        return self._kernels.get(_key(notebook if notebook.is_absolute() else project / notebook))

    def session_features(self, project: Path) -> Callable[[Session], frozenset[str]]:
        """For ``RuntimeDeps.session_features``: the feature when the notebook's kernel runs."""

        def features(session: Session) -> frozenset[str]:
            return FEATURES if self.kernel_for(project, session) else frozenset()

        return features

    async def execute(
        self, project: Path, session: Session, code: str, emit: Callable[[str, str], None]
    ) -> KernelReport:
        """Run ``code`` in the session's notebook kernel (call from any loop)."""
        if self.loop is None:
            raise ToolError("the server's kernel manager is not ready yet")
        future = asyncio.run_coroutine_threadsafe(
            self._execute(project, session, code, emit), self.loop
        )
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise

    async def _execute(
        self, project: Path, session: Session, code: str, emit: Callable[[str, str], None]
    ) -> KernelReport:
        await self.refresh()
        kernel_id = self.kernel_for(project, session)
        if kernel_id is None:
            raise ToolError(
                f"no running kernel for notebook {session.notebook_path!r}: open it in Jupyter"
            )
        manager: Any = self.serverapp.kernel_manager.get_kernel(kernel_id)
        client: Any = manager.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=30)
            msg_id = client.execute(code, store_history=False, allow_stdin=False)
            return await _collect(client, msg_id, emit)
        except asyncio.CancelledError:  # the tool timed out or the run was cancelled
            kernels: Any = self.serverapp.kernel_manager
            interrupted = kernels.interrupt_kernel(kernel_id)
            if inspect.isawaitable(interrupted):
                await interrupted
            raise
        finally:
            client.stop_channels()


async def _collect(client: Any, msg_id: str, emit: Callable[[str, str], None]) -> KernelReport:
    """Read the kernel's iopub messages of ``msg_id`` until it is idle again."""
    report = KernelReport()
    while True:
        message = await client.get_iopub_msg()
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "status" and content.get("execution_state") == "idle":
            return report
        if kind == "stream":
            name, text = content.get("name", "stdout"), content.get("text", "")
            if name == "stderr":
                report.stderr += text
            else:
                report.stdout += text
            emit("stderr" if name == "stderr" else "stdout", text)
        elif kind in ("execute_result", "display_data"):
            data = content.get("data", {})
            report.results.append(str(data.get("text/plain", f"<{', '.join(data)}>")))
        elif kind == "error":
            trace = _ANSI.sub("", "\n".join(content.get("traceback") or []))
            report.error = trace or f"{content.get('ename')}: {content.get('evalue')}"


class NotebookPythonArgs(ToolArgs):
    code: str = Field(description="Python source to run in the notebook's kernel.")


class NotebookPython(Tool[NotebookPythonArgs]):
    """``python`` in the live kernel of the notebook the session is bound to."""

    name = "python"
    description = (
        "Run Python code in the live kernel of the notebook this session is bound to, in the "
        "notebook's namespace (like a cell): variables stay for the user. Returns stdout, "
        "stderr, the value of the last expression and any error."
    )
    parameters = NotebookPythonArgs
    requires = FEATURES

    def __init__(self, kernels: NotebookKernels) -> None:
        self.kernels = kernels

    async def execute(self, args: NotebookPythonArgs, ctx: ToolContext) -> ToolResult:
        if ctx.session_id is None:
            raise ToolError("python needs a session bound to a notebook")
        session = ctx.store.get_session(ctx.session_id)
        report = await self.kernels.execute(ctx.project, session, args.code, ctx.emit)
        return ToolResult(
            output=report.to_output(),
            ok=report.error is None,
            data={"stdout": _clip(report.stdout), "stderr": _clip(report.stderr),
                  "results": report.results, "error": report.error},
        )  # fmt: skip
