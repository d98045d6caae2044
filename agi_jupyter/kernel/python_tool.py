"""The notebook's ``python`` tool: code run in the kernel's user namespace, on its main thread.

The agent loop calls the tool on the runtime's loop thread; the code itself is handed to the
kernel's main thread (``MainThreadDispatcher``), run with ``exec`` in the user namespace (the
last expression is evaluated and its ``repr`` returned, as in a cell), with stdout and stderr
captured. Each run is recorded in the notebook's ledger of executions (``notebook.ledger``).
The result lists the names the code created and the names it rebound, so the model
(and the person reading the tool block) knows what changed in the notebook.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field

from agi_jupyter.kernel.dispatch import MainThreadInterrupted
from agi_jupyter.notebook import ledger
from agi_jupyter.notebook.tools import default_path
from agi_jupyter.tools import FEATURE_KERNEL, Tool, ToolArgs, ToolContext, ToolResult

if TYPE_CHECKING:
    from agi_jupyter.kernel.dispatch import MainThreadDispatcher

MAX_OUTPUT = 20_000
MAX_REPR = 2_000
_PROMPT = (
    "The `python` tool runs code in the notebook's live Python kernel, in the same namespace as "
    "the notebook's cells: variables you define stay there for the user and for later calls. "
    "Print what you want to see; the value of a last expression is returned too."
)


class PythonArgs(ToolArgs):
    code: str = Field(description="Python source to run in the notebook's namespace.")


@dataclass
class ExecutionReport:
    """What running one piece of code did."""

    stdout: str = ""
    stderr: str = ""
    result: str | None = None
    error: str | None = None
    created: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_output(self) -> str:
        """The text the model sees."""
        sections = []
        if self.stdout:
            sections.append(f"stdout:\n{_clip(self.stdout)}")
        if self.stderr:
            sections.append(f"stderr:\n{_clip(self.stderr)}")
        if self.result is not None:
            sections.append(f"result: {self.result}")
        if self.error is not None:
            sections.append(f"error:\n{_clip(self.error)}")
        names = []
        if self.created:
            names.append("created " + ", ".join(self.created))
        if self.changed:
            names.append("changed " + ", ".join(self.changed))
        sections.append("names: " + ("; ".join(names) if names else "none created or changed"))
        return "\n".join(sections)

    def to_data(self) -> dict[str, Any]:
        return {
            "stdout": _clip(self.stdout),
            "stderr": _clip(self.stderr),
            "result": self.result,
            "error": self.error,
            "created": self.created,
            "changed": self.changed,
        }


def _clip(text: str, limit: int = MAX_OUTPUT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters]"


def _short_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception as e:
        text = f"<repr failed: {type(e).__name__}: {e}>"
    return text if len(text) <= MAX_REPR else text[:MAX_REPR] + "..."


def _visible(namespace: dict[str, Any]) -> dict[str, int]:
    """Identity of every user-visible binding (IPython's own ``_``, ``_1``, ``In``... left out)."""
    return {
        name: id(value)
        for name, value in namespace.items()
        if not name.startswith("_") and name not in ("In", "Out", "exit", "quit", "get_ipython")
    }


def run_in_namespace(code: str, namespace: dict[str, Any]) -> ExecutionReport:
    """Run ``code`` in ``namespace`` like a cell (main thread only); never raises except for
    ``KeyboardInterrupt``."""
    report = ExecutionReport()
    before = _visible(namespace)
    out, err = io.StringIO(), io.StringIO()
    try:
        tree = ast.parse(code, mode="exec")
        last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        if last is not None:
            tree.body.pop()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            exec(compile(tree, "<agent python>", "exec"), namespace)
            if last is not None:
                value = eval(
                    compile(ast.Expression(last.value), "<agent python>", "eval"), namespace
                )
                if value is not None:
                    report.result = _short_repr(value)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # SystemExit too: the model's code must not end the kernel
        report.error = "".join(traceback.format_exception_only(type(e), e)).strip()
        frames = traceback.extract_tb(e.__traceback__)
        agent_frames = [f for f in frames if f.filename == "<agent python>"]
        if agent_frames:
            report.error += f" (line {agent_frames[-1].lineno})"
    report.stdout, report.stderr = out.getvalue(), err.getvalue()
    after = _visible(namespace)
    report.created = sorted(set(after) - set(before))
    report.changed = sorted(n for n in set(after) & set(before) if after[n] != before[n])
    return report


class PythonTool(Tool[PythonArgs]):
    """Runs code in the notebook's kernel (offered only where a kernel is attached)."""

    name = "python"
    description = (
        "Run Python code in the notebook's kernel, in the user namespace (like a notebook cell). "
        "Returns stdout, stderr, the value of the last expression and the names created or "
        "changed."
    )
    parameters = PythonArgs
    requires = frozenset({FEATURE_KERNEL})
    prompt = _PROMPT

    def __init__(self, dispatcher: MainThreadDispatcher, namespace: dict[str, Any]) -> None:
        self.dispatcher = dispatcher
        self.namespace = namespace

    async def execute(self, args: PythonArgs, ctx: ToolContext) -> ToolResult:
        path = await asyncio.to_thread(default_path, ctx)
        started = await ledger.agent_started(ctx, path, None, args.code) if path else None
        future = self.dispatcher.submit(lambda: run_in_namespace(args.code, self.namespace))
        try:
            report = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            await asyncio.shield(ledger.agent_ended(ctx, started, "interrupted", None, ""))
            raise
        except MainThreadInterrupted:
            await ledger.agent_ended(ctx, started, "interrupted", None, "")
            return ToolResult(output="the kernel was interrupted while running the code", ok=False)
        summary = report.error or report.result or report.stdout[:500]
        await ledger.agent_ended(ctx, started, "ok" if report.ok else "error", None, summary)
        return ToolResult(output=report.to_output(), ok=report.ok, data=report.to_data())
