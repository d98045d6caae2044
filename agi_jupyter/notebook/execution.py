"""Running one cell in a kernel through the Jupyter messaging protocol, outputs as nbformat.

Used for kernels this process talks to with a ``jupyter_client`` client: the notebook's kernel
in a Jupyter server (``server.notebooks``) and the private kernel of a headless run
(``notebook.kernels``). The execute request carries the cell id (``metadata.cellId``, as
JupyterLab sends it) and is stored in the kernel's history, so the cell gets an execution
count as if the user had run it. At the deadline, or when the call is cancelled, the kernel is
interrupted; after a deadline the outputs up to the interrupt (the ``KeyboardInterrupt``
error included) are still collected.
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


def send_execute(client: Any, source: str, cell_id: str | None) -> str:
    """Send an execute request as JupyterLab does for a cell; returns its msg_id."""
    content = {
        "code": source,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": True,
    }
    metadata = {"cellId": cell_id} if cell_id else {}
    msg = client.session.msg("execute_request", content, metadata=metadata)
    client.shell_channel.send(msg)
    return str(msg["header"]["msg_id"])


async def run_cell(
    client: Any,
    source: str,
    cell_id: str | None,
    *,
    emit: Emit,
    timeout: float,  # noqa: ASYNC109 - a deadline after which the kernel is interrupted
    interrupt: Interrupt,
) -> Execution:
    """Execute ``source`` with ``client`` (channels started) and collect its outputs."""
    collector = OutputCollector(emit)
    msg_id = send_execute(client, source, cell_id)
    try:
        async with asyncio.timeout(timeout):
            await _until_idle(client, msg_id, collector)
    except TimeoutError:
        collector.execution.interrupted = True
        await interrupt()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SETTLE_AFTER_INTERRUPT):
                await _until_idle(client, msg_id, collector)
    except asyncio.CancelledError:
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
