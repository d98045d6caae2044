"""The one thread that makes the runtime loop's store calls, in the order they were made.

Every store call can block: SQLite waits up to its busy timeout while another process (``agi
tick``, a second kernel) holds the write lock, and PostgreSQL waits for a free connection of
its pool. The runtime loop runs every agent of the process, so a call made on it stalls every
stream. The runtime hands its store calls to this thread instead and awaits them.

One thread, not a pool: calls run one after another in submission order, so a write made after
another is stored after it (an event after the message it announces, a run's status after its
events), and a read sees every write submitted before it, as when the calls were made inline.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class StoreThread:
    def __init__(self, name: str = "agi-store") -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=name)

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[T]:
        """Queue ``fn(*args, **kwargs)`` behind the calls submitted before it (call on the
        loop); the future completes on the loop, in submission order."""
        loop = asyncio.get_running_loop()
        return loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

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
        self._executor.shutdown(wait=True)
