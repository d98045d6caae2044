"""Running one cell in a kernel through the Jupyter messaging protocol, outputs as nbformat.

Used for kernels this process talks to with a ``jupyter_client`` client: the notebook's kernel
in a Jupyter server (``server.notebooks``) and the private kernel of a headless run
(``notebook.kernels``). The execute request carries the cell id (``metadata.cellId``, as
JupyterLab sends it) and is stored in the kernel's history, so the cell gets an execution
count as if the user had run it.

A ``CellRun`` is one execution as its caller sees it while it runs: the outputs so far, who
listens to its live output, and its interrupt, callable from any event loop. Nothing
interrupts a cell by itself: only ``CellRun.interrupt``, an ``interrupt_after`` the caller set
on purpose, or the cancellation of the execution (unless ``interrupt_on_cancel`` is off).
After an interrupt the outputs up to it (the ``KeyboardInterrupt`` error included) are still
collected.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agi_jupyter.notebook.model import History, joined, strip_ansi

Emit = Callable[[str, str], None]
Interrupt = Callable[[], Awaitable[None]]
Origin = dict[str, str]
SETTLE_AFTER_INTERRUPT = 10.0
HISTORY_TIMEOUT = 3.0


@dataclass(kw_only=True)
class Execution:
    """What running one cell produced."""

    outputs: list[dict[str, Any]] = field(default_factory=list)
    execution_count: int | None = None
    error: str | None = None
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.interrupted


class OutputCollector:
    """Folds a cell's iopub messages into nbformat outputs (streams merged, display updates
    and ``clear_output`` applied)."""

    def __init__(self, emit: Emit) -> None:
        self.execution = Execution()
        self.emit = emit
        self._clear_pending = False
        self._displays: dict[str, list[int]] = {}

    def add(self, kind: str, content: dict[str, Any]) -> None:
        if kind == "execute_input":
            self.execution.execution_count = content.get("execution_count")
            return
        if kind == "clear_output":
            if content.get("wait"):
                self._clear_pending = True
            else:
                self._clear()
            return
        if kind == "update_display_data":
            self._update_display(content)
            return
        output = to_output(kind, content)
        if output is None:
            return
        if self._clear_pending:
            self._clear()
        self._append(output, content)

    def _append(self, output: dict[str, Any], content: dict[str, Any]) -> None:
        outputs = self.execution.outputs
        kind = output["output_type"]
        if kind == "stream":
            self.emit("stderr" if output["name"] == "stderr" else "stdout", output["text"])
            last = outputs[-1] if outputs else None
            if last and last["output_type"] == "stream" and last["name"] == output["name"]:
                last["text"] += output["text"]
                return
        if kind == "error":
            trace = "\n".join(output.get("traceback") or [])
            self.execution.error = strip_ansi(trace) or f"{output['ename']}: {output['evalue']}"
        display_id = (content.get("transient") or {}).get("display_id")
        if display_id:
            self._displays.setdefault(str(display_id), []).append(len(outputs))
        outputs.append(output)

    def _update_display(self, content: dict[str, Any]) -> None:
        display_id = str((content.get("transient") or {}).get("display_id"))
        for index in self._displays.get(display_id, []):
            output = self.execution.outputs[index]
            output["data"] = content.get("data") or {}
            output["metadata"] = content.get("metadata") or {}

    def _clear(self) -> None:
        self._clear_pending = False
        self.execution.outputs.clear()
        self._displays.clear()


class CellRun:
    """One cell's execution while it runs: its outputs so far (``collector``), the listener
    of its live output (swapped as callers come and go), and its interrupt, bound by the
    kernel side to the loop it runs on and callable from any loop."""

    def __init__(
        self,
        source: str,
        cell_id: str,
        *,
        interrupt_after: float | None = None,
        listener: Emit | None = None,
        origin: Origin | None = None,
    ) -> None:
        self.source, self.cell_id = source, cell_id
        self.interrupt_after = interrupt_after
        self.listener = listener
        self.origin = origin or {}
        """Who asked (``run_id``, ``tool_call_id``): sent with the execute request."""
        self.collector = OutputCollector(self._emit)
        self.interrupt_on_cancel = True
        self._interrupt: Interrupt | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def execution(self) -> Execution:
        return self.collector.execution

    def _emit(self, channel: str, chunk: str) -> None:
        listener = self.listener
        if listener is not None:
            listener(channel, chunk)

    def bind(self, interrupt: Interrupt) -> None:
        """The kernel side: how to interrupt this execution (on the running loop)."""
        self._interrupt, self._loop = interrupt, asyncio.get_running_loop()

    async def interrupt(self) -> bool:
        """Interrupt the execution; one that has not reached its kernel yet will not run
        (False: it has ended)."""
        interrupt, loop = self._interrupt, self._loop
        self.execution.interrupted = True
        if interrupt is None or loop is None:
            return True  # run_cell sees it before it sends the request
        if loop.is_closed():
            return False
        if loop is asyncio.get_running_loop():
            await interrupt()
        else:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_awaited(interrupt), loop))
        return True


async def _awaited(interrupt: Interrupt) -> None:
    await interrupt()


def to_output(kind: str, content: dict[str, Any]) -> dict[str, Any] | None:
    """An iopub message as an nbformat output (None for messages that are no output)."""
    if kind == "stream":
        return {
            "output_type": "stream",
            "name": content.get("name", "stdout"),
            "text": joined(content.get("text")),
        }
    if kind in ("display_data", "execute_result"):
        output = {
            "output_type": kind,
            "data": content.get("data") or {},
            "metadata": content.get("metadata") or {},
        }
        if kind == "execute_result":
            output["execution_count"] = content.get("execution_count")
        return output
    if kind == "error":
        return {
            "output_type": "error",
            "ename": str(content.get("ename", "")),
            "evalue": str(content.get("evalue", "")),
            "traceback": list(content.get("traceback") or []),
        }
    return None


def send_execute(
    client: Any, source: str, cell_id: str | None, origin: Origin | None = None
) -> str:
    """Send an execute request as JupyterLab does for a cell (``origin``: the agent's run and
    tool call, as ``metadata.agi``); returns its msg_id."""
    content = {
        "code": source,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": True,
    }
    metadata: dict[str, Any] = {"cellId": cell_id} if cell_id else {}
    if origin:
        metadata["agi"] = dict(origin)
    msg = client.session.msg("execute_request", content, metadata=metadata)
    client.shell_channel.send(msg)
    return str(msg["header"]["msg_id"])


async def run_cell(client: Any, run: CellRun, interrupt: Interrupt) -> Execution:
    """Execute ``run``'s cell with ``client`` (channels started) to its end, collecting its
    outputs into ``run``; ``interrupt`` interrupts the kernel."""
    run.bind(interrupt)
    collector = run.collector
    if collector.execution.interrupted:  # interrupted while it waited for its kernel
        return collector.execution
    msg_id = send_execute(client, run.source, run.cell_id, run.origin)
    try:
        async with asyncio.timeout(run.interrupt_after):
            await _until_idle(client, msg_id, collector)
    except TimeoutError:
        collector.execution.interrupted = True
        await interrupt()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SETTLE_AFTER_INTERRUPT):
                await _until_idle(client, msg_id, collector)
    except asyncio.CancelledError:
        if run.interrupt_on_cancel:
            await asyncio.shield(interrupt())
        raise
    execution = collector.execution
    if execution.execution_count is None and not execution.outputs and execution.error is None:
        # No execute_input: the kernel aborted the request (it came in while an earlier
        # error was being handled) and ran nothing.
        execution.error = "the kernel did not run the cell (it aborted the request); run it again"
    return execution


async def _until_idle(client: Any, msg_id: str, collector: OutputCollector) -> None:
    while True:
        message = await client.get_iopub_msg()
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "status":
            if content.get("execution_state") == "idle":
                return
            continue
        collector.add(kind, content)


async def read_history(client: Any) -> History | None:
    """The kernel's input history of its current session (None if it does not answer soon:
    a busy kernel answers only after the cell it runs)."""
    msg_id = client.history(
        raw=True, output=False, hist_access_type="range", session=0, start=1, stop=None
    )
    try:
        async with asyncio.timeout(HISTORY_TIMEOUT):
            while True:
                reply = await client.get_shell_msg()
                if reply.get("parent_header", {}).get("msg_id") == msg_id:
                    break
    except TimeoutError:
        return None
    entries = reply.get("content", {}).get("history") or []
    return {int(line): str(text) for _session, line, text in entries}
