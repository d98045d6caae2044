"""Work that must run on the kernel's main thread, handed over from the runtime's loop thread.

Runs execute on the runtime's private loop thread, but the notebook's ``python`` tool must run
its code on the kernel's main thread, in the user namespace. ``MainThreadDispatcher.submit``
queues a callable from any thread and returns a ``concurrent.futures.Future``; the main thread
runs queued work in ``drain()``, which is called

- by ``follow_with_dispatch`` while a ``%%agi`` cell waits for its run (the cell's main thread
  wakes at once for new work, between two events), and
- by the kernel's own event loop when the kernel is idle (a widget or ``--background`` run), via
  ``call_soon_threadsafe`` on the loop captured from the main thread.

Whichever comes first runs the work; the other finds the queue empty. Work whose future was
cancelled (the tool call timed out) is skipped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from agi_jupyter.runtime.follow import POLL_INTERVAL

if TYPE_CHECKING:
    from agi_jupyter.app import Agi

T = TypeVar("T")
_WAKE = object()


class MainThreadInterrupted(Exception):
    """The kernel was interrupted while it ran the work (set on the work's future instead of the
    ``KeyboardInterrupt``, which must never reach the runtime's event loop)."""


class MainThreadDispatcher:
    def __init__(self) -> None:
        self._work: deque[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = deque()
        self._lock = threading.Lock()
        self._wakers: list[Callable[[], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main = threading.main_thread()

    def capture_loop(self) -> None:
        """Remember the kernel's event loop (call on the main thread, e.g. from a magic)."""
        if threading.current_thread() is not self._main:
            return
        with contextlib.suppress(RuntimeError):
            self._loop = asyncio.get_running_loop()

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Queue ``fn`` for the main thread; on the main thread itself it runs at once."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            self._work.append((fn, future))
            wakers = list(self._wakers)
        if threading.current_thread() is self._main:
            self.drain()
            return future
        for wake in wakers:
            wake()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.drain)
        return future

    def drain(self) -> None:
        """Run the queued work (main thread only). A ``KeyboardInterrupt`` raised by the work
        fails its future with ``MainThreadInterrupted`` and is raised again, so the cell stops."""
        while True:
            with self._lock:
                if not self._work:
                    return
                fn, future = self._work.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn()
            except KeyboardInterrupt:
                future.set_exception(MainThreadInterrupted("the kernel was interrupted"))
                raise
            except Exception as e:
                future.set_exception(e)
            else:
                future.set_result(result)

    @contextlib.contextmanager
    def waiting(self, wake: Callable[[], None]) -> Iterator[None]:
        """While the block runs, ``wake()`` is called whenever work is submitted."""
        with self._lock:
            self._wakers.append(wake)
        try:
            yield
        finally:
            with self._lock:
                self._wakers.remove(wake)


def join_with_dispatch(
    thread: threading.Thread,
    dispatcher: MainThreadDispatcher,
    timeout: float | None = None,
    *,
    settled: Callable[[], bool] | None = None,
) -> None:
    """``thread.join(timeout)``, running main-thread work meanwhile when called on the main
    thread (a widget's or a background run's ``python`` tool calls while a cell waits).
    ``settled``: also stop once it says so (the thread follows a run that now waits for a
    person, and goes on only after a decision)."""
    on_main = threading.current_thread() is threading.main_thread()
    deadline = None if timeout is None else time.monotonic() + timeout
    while thread.is_alive() and not (settled is not None and settled()):
        if on_main:
            dispatcher.drain()
        left = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
        if left <= 0:
            return
        thread.join(left)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[list[int]]:
    """Hold kernel interrupts (SIGINT) back while the block runs on the main thread: the list
    yielded says whether one came, for the caller to act on once the block is done. Used
    where an interrupt must not land half-way (between creating a run and knowing its id, or
    while the run's cancel is being sent). Elsewhere (another thread, no signals): a no-op."""
    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    except ValueError:  # signals cannot be set here (an embedded interpreter)
        yield caught
        return
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)


def _drain(inbox: queue.Queue[Any]) -> list[dict[str, Any]]:
    """The events waiting in ``inbox`` (wake-ups dropped), without waiting."""
    events: list[dict[str, Any]] = []
    while True:
        try:
            item = inbox.get_nowait()
        except queue.Empty:
            return events
        if item is not _WAKE:
            events.append(item)


def follow_with_dispatch(
    agi: Agi,
    run_id: str,
    dispatcher: MainThreadDispatcher,
    *,
    after_seq: int = 0,
    wait: float | None = None,
) -> Iterator[dict[str, Any]]:
    """``Agi.follow`` for the kernel's main thread: yields the run's events until ``run.final``
    and runs work submitted to the main thread while it waits. Every wait is a short one,
    so a kernel interrupt lands at once; ``wait``: stop after that many seconds at most."""
    deadline = None if wait is None else time.monotonic() + wait
    cursor = agi.run_cursor(run_id, after_seq=after_seq)
    inbox: queue.Queue[Any] = queue.Queue()
    unsubscribe = agi.bus.subscribe_run(run_id, inbox.put)
    try:
        with dispatcher.waiting(lambda: inbox.put(_WAKE)):
            recent = agi.bus.recent(run_id)
            yield from cursor.catch_up([*recent, *_drain(inbox)])
            while not cursor.done:
                if deadline is not None and time.monotonic() > deadline:
                    return
                dispatcher.drain()
                try:
                    item = inbox.get(timeout=POLL_INTERVAL)
                except queue.Empty:
                    yield from cursor.from_store()
                    continue
                if item is not _WAKE and cursor.accept(item):
                    yield item
    finally:
        unsubscribe()
