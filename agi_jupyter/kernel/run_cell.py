"""Running a cell of the kernel's own notebook inside the kernel, for ``notebook.run``.

While a ``%%agi`` cell runs, the kernel cannot take another execute request (its shell
channel is busy with that cell), so the agent's ``notebook.run`` of a cell of the same
notebook runs here, on the kernel's main thread (``MainThreadDispatcher``), through
``shell.run_cell``: magics, history (``In[n]``, an execution count), ``Out`` and post-execute
hooks (inline plots) work as for the user's cells. Its outputs are captured as nbformat
outputs instead of going to the ``%%agi`` cell: stdout/stderr, the display publisher, the
display hook (the last expression) and tracebacks are swapped for the duration.

An ``interrupt_after``, ``CellRun.interrupt`` or a cancellation interrupts the code with
``KeyboardInterrupt`` in the main thread (the kernel interrupt of an in-process execution).
A ``KeyboardInterrupt`` the agent did not ask for (the user pressed
Interrupt) still stops the ``%%agi`` cell.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from agi_jupyter.notebook.execution import CellRun, Execution, OutputCollector

if TYPE_CHECKING:
    from agi_jupyter.kernel.dispatch import MainThreadDispatcher


class _Stream(io.TextIOBase):
    def __init__(self, name: str, collector: OutputCollector, lock: threading.Lock) -> None:
        self.name_, self.collector, self.lock = name, collector, lock

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            with self.lock:
                self.collector.add("stream", {"name": self.name_, "text": text})
        return len(text)


class _Publisher:
    """Stands in for ``shell.display_pub``: displays become outputs of the cell."""

    def __init__(self, collector: OutputCollector, lock: threading.Lock) -> None:
        self.collector, self.lock = collector, lock
        self.is_publishing = False

    def publish(self, data: Any, metadata: Any = None, source: Any = None, *,
                transient: Any = None, update: bool = False, **kwargs: Any) -> None:  # fmt: skip
        kind = "update_display_data" if update else "display_data"
        content = {"data": data, "metadata": metadata or {}, "transient": transient or {}}
        with self.lock:
            self.collector.add(kind, content)

    def clear_output(self, wait: bool = False) -> None:
        with self.lock:
            self.collector.add("clear_output", {"wait": wait})


class _ResultHook:
    """Stands in for the display hook: the cell's last expression becomes its
    ``execute_result`` (and ``_``, ``Out[n]`` are set as usual)."""

    def __init__(self, shell: Any, collector: OutputCollector, lock: threading.Lock) -> None:
        self.shell, self.collector, self.lock = shell, collector, lock

    def __call__(self, value: Any) -> None:
        hook = self.shell.displayhook
        if value is None or _quiet(hook):
            return
        with contextlib.suppress(Exception):
            hook.update_user_ns(value)
        data, metadata = self.shell.display_formatter.format(value)
        content = {"data": data, "metadata": metadata, "execution_count": hook.prompt_count}
        with self.lock:
            self.collector.add("execute_result", content)


def _quiet(hook: Any) -> bool:
    try:
        return bool(hook.quiet())
    except Exception:
        return False


@contextlib.contextmanager
def captured(shell: Any, collector: OutputCollector) -> Iterator[None]:
    """Route the shell's outputs into ``collector`` (main thread only)."""
    lock = threading.Lock()
    hook = _ResultHook(shell, collector, lock)
    saved = (sys.stdout, sys.stderr, shell.display_pub, sys.displayhook, shell.display_trap.hook)
    # run_cell is not reentrant here: the outer cell's result lives on the shell.
    outer = (shell.displayhook.exec_result, shell.last_execution_succeeded,
             shell.last_execution_result)  # fmt: skip

    def show_traceback(etype: Any, evalue: Any, stb: list[str]) -> None:
        content = {"ename": getattr(etype, "__name__", str(etype)), "evalue": str(evalue),
                   "traceback": list(stb)}  # fmt: skip
        with lock:
            collector.add("error", content)

    sys.stdout, sys.stderr = _Stream("stdout", collector, lock), _Stream("stderr", collector, lock)
    shell.display_pub = _Publisher(collector, lock)
    sys.displayhook = shell.display_trap.hook = hook
    shell._showtraceback = show_traceback  # IPython's documented override point
    try:
        yield
    finally:
        sys.stdout, sys.stderr, shell.display_pub, sys.displayhook = saved[:4]
        shell.display_trap.hook = saved[4]
        shell.displayhook.exec_result = outer[0]
        shell.last_execution_succeeded, shell.last_execution_result = outer[1:]
        with contextlib.suppress(AttributeError):
            del shell._showtraceback


@contextlib.contextmanager
def counted(shell: Any) -> Iterator[None]:
    """Give the nested cell the next execution count, keeping ``In[n]`` the source of cell
    ``n``. IPython 9 advances the count when a cell starts; IPython 8 did when it ended: inside
    a running IPython 8 cell (whose input is already ``In[N]``, and whose end will advance the
    count once more) the count is left one short, so the user's next cell still gets the count
    of its place in ``In``. The running ``%%agi`` cell's prompt then ends showing the count of
    the last cell it ran (the kernel reports the latest count)."""
    history = shell.history_manager.input_hist_raw
    inside = len(history) == shell.execution_count + 1
    shell.execution_count = len(history)
    try:
        yield
    finally:
        shell.execution_count = len(history) - (1 if inside else 0)


class _Interrupter:
    """Interrupts the main thread while (and only while) one execution runs there."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = False
        self.requested = False

    def start(self) -> None:
        with self.lock:
            self.running = True

    def finish(self) -> None:
        with self.lock:
            self.running = False

    def interrupt(self) -> bool:
        with self.lock:
            if not self.running or self.requested:
                return False
            self.requested = True
            # A real SIGINT (not _thread.interrupt_main): it also wakes a blocking call
            # such as time.sleep, as the kernel interrupt of a Jupyter front end does.
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            return True


Guard = Callable[[], AbstractContextManager[Any]]


def run_here(shell: Any, run: CellRun, state: _Interrupter, guard: Guard) -> Execution:
    """Run the cell on the main thread with its outputs captured into ``run``; ``guard`` keeps
    the kernel's own state (the running ``%%agi`` cell's id) across the nested run."""
    collector: OutputCollector = run.collector
    source, cell_id = run.source, run.cell_id
    state.start()
    try:
        try:
            with guard(), captured(shell, collector), counted(shell):
                result = shell.run_cell(source, store_history=True, cell_id=cell_id)
        finally:
            state.finish()
    except KeyboardInterrupt:
        if not state.requested:
            raise
        collector.execution.interrupted = True
        return collector.execution
    execution = collector.execution
    execution.execution_count = result.execution_count
    error = result.error_in_exec or result.error_before_exec
    if isinstance(error, KeyboardInterrupt):
        if not state.requested:
            raise KeyboardInterrupt  # the user's interrupt: it stops the %%agi cell too
        execution.interrupted = True
    elif error is not None and execution.error is None:
        execution.error = f"{type(error).__name__}: {error}"
    return execution


async def execute_in_kernel(
    shell: Any, dispatcher: MainThreadDispatcher, run: CellRun, *, guard: Guard
) -> Execution:
    """Hand the cell to the kernel's main thread and wait for it (see the module docstring)."""
    state = _Interrupter()

    async def interrupt() -> None:
        state.interrupt()

    run.bind(interrupt)
    future = dispatcher.submit(lambda: run_here(shell, run, state, guard))
    waiting = asyncio.wrap_future(future)
    try:
        return await asyncio.wait_for(asyncio.shield(waiting), run.interrupt_after)
    except TimeoutError:
        state.interrupt()
        return await waiting
    except asyncio.CancelledError:
        if not future.cancel() and run.interrupt_on_cancel:  # already running: stop it
            state.interrupt()
        raise
