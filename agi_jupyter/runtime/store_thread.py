"""The one thread that makes the runtime loop's store calls, in the order they were made.

Every store call can block: SQLite waits up to its busy timeout while another process (``agi
tick``, a second kernel) holds the write lock, and PostgreSQL waits for a free connection of
its pool. The runtime loop runs every agent of the process, so a call made on it stalls every
stream. The runtime hands its store calls to this thread instead and awaits them.

One thread, not a pool: calls run one after another in submission order, so a write made after
another is stored after it (an event after the message it announces, a run's status after its
events), and a read sees every write submitted before it, as when the calls were made inline.

A trip costs two wake-ups (this thread's, then the loop's) and the bookkeeping of a future. So
this is a queue and a thread of its own rather than a ``ThreadPoolExecutor`` behind
``run_in_executor`` (a concurrent future with its lock, a work item, a chained asyncio future,
one ``call_soon_threadsafe`` per call): calls that complete while the loop has not yet taken
their results are handed back together, with one wake-up of the loop, in submission order.
With many runs on one loop (a server) the thread often finishes several calls per wake-up.

Nothing of the runtime writes inline on the loop: the emitter hands its batches here without
waiting (``emitter.py``), an attempt's endings run here as emitter sections
(``endings.py``), the SDK adapters' history writes one trip per step (``sdk/history.py``), and
deep research parks, polls and completes its runs here. Calls that follow each other with
nothing between go in one trip: a run just submitted makes one trip before its first model
request (``RunManager.spawn(created=)``, see ``runs.py``), and a model turn's loop state is
saved in its assistant message's trip.
"""

from __future__ import annotations

import asyncio
import atexit
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

# (the loop to complete it on, its future, the call, its arguments), or None: stop.
_Job = tuple[
    asyncio.AbstractEventLoop,
    "asyncio.Future[Any]",
    Callable[..., Any],
    tuple[Any, ...],
    dict[str, Any] | None,
]
# (its future, the call's error or None, its result)
_Done = tuple["asyncio.Future[Any]", BaseException | None, Any]

_open: weakref.WeakSet[StoreThread] = weakref.WeakSet()


class StoreThread:
    def __init__(self, name: str = "agi-store") -> None:
        self._name = f"{name}_0"  # (the name its executor thread had)
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()  # guards what follows
        self._thread: threading.Thread | None = None  # started by the first call
        self._closed = False
        self._done: dict[asyncio.AbstractEventLoop, list[_Done]] = {}  # not yet handed back

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[T]:
        """Queue ``fn(*args, **kwargs)`` behind the calls submitted before it (call on the
        loop); the future completes on the loop, in submission order."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        if self._thread is None or self._closed:
            self._start()
        self._jobs.put((loop, future, fn, args, kwargs or None))
        return future

    async def call(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` on the store thread, after the calls submitted before it.

        A caller cancelled while its call runs waits for the call to end before the
        cancellation goes on: what follows (an ending that writes the run's status) must not
        overtake a write still being made, nor share the emitter with it."""
        future = self.submit(fn, *args, **kwargs)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            while not future.done():
                try:
                    await asyncio.shield(future)
                except asyncio.CancelledError:
                    continue
                except BaseException:
                    break
            raise

    def close(self) -> None:
        """Finish the calls queued, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._jobs.put(None)
            if thread is not threading.current_thread():
                thread.join()
        _open.discard(self)

    def _start(self) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new calls after the store thread closed")
            if self._thread is None:
                # A daemon thread, finished at exit (``_close_all``): an ``Agi`` left open
                # does not keep the interpreter from exiting, and its queued writes are made.
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()
                _open.add(self)

    def _work(self) -> None:
        jobs, lock, done = self._jobs, self._lock, self._done
        while True:
            job = jobs.get()
            if job is None:
                return
            loop, future, fn, args, kwargs = job
            outcome: _Done
            try:
                outcome = (future, None, fn(*args, **kwargs) if kwargs else fn(*args))
            except BaseException as error:  # handed to the caller, as an executor does
                outcome = (future, error, None)
            with lock:
                waiting = done.get(loop)
                if waiting is None:
                    done[loop] = [outcome]
                else:
                    waiting.append(outcome)
            if waiting is None:  # the loop was not woken yet for what is waiting
                try:
                    loop.call_soon_threadsafe(self._hand_back, loop)
                except RuntimeError:  # the loop was closed: nobody waits for these
                    with lock:
                        done.pop(loop, None)

    def _hand_back(self, loop: asyncio.AbstractEventLoop) -> None:
        """Complete the futures of the calls that ended, in order (on ``loop``)."""
        with self._lock:
            finished = self._done.pop(loop, ())
        for future, error, result in finished:
            if future.cancelled():
                continue
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)


@atexit.register
def _close_all() -> None:
    """At exit, make the writes still queued (the threads are daemons)."""
    for thread in list(_open):
        thread.close()
