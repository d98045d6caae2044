"""A private asyncio event loop on a daemon thread, where every run of a process executes.

Runs must outlive the caller that started them (a consumer that stops reading does not cancel
a run), must not block a Jupyter kernel's own loop, and must be reachable from any thread
(the kernel's main thread, tornado's loop, a CLI). One loop thread per ``Agi`` gives all three.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import AsyncGenerator, Coroutine
from typing import Any, Literal, TypeVar

T = TypeVar("T")


class BackgroundLoop:
    def __init__(self, name: str = "agi-runtime") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop, started on first use."""
        with self._lock:
            if self._loop is None:
                ready = threading.Event()
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=self._run, args=(loop, ready), name=self._name, daemon=True
                )
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        loop.run_forever()

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule a coroutine on the loop from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run a coroutine on the loop and wait for its result (never call from the loop)."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError("BackgroundLoop.run() called from its own loop thread")
        return self.submit(coro).result(timeout)

    async def aiterate(self, source: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
        """``source`` run on this loop, read from the caller's. When the caller stops reading
        (it closes this generator, or is cancelled), ``source`` is cancelled on this loop at
        once: what it holds open (an HTTP response) closes."""
        if self.in_loop_thread():
            async with contextlib.aclosing(source) as items:
                async for item in items:
                    yield item
            return
        caller = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[Literal["item", "end", "error"], Any]] = asyncio.Queue()

        def put(kind: Literal["item", "end", "error"], value: Any = None) -> None:
            caller.call_soon_threadsafe(queue.put_nowait, (kind, value))

        async def pump() -> None:
            try:
                async with contextlib.aclosing(source) as items:
                    async for item in items:
                        put("item", item)
                put("end")
            except Exception as error:  # handed to the caller, raised there
                put("error", error)

        future = self.submit(pump())
        try:
            while True:
                kind, value = await queue.get()
                if kind == "end":
                    return
                if kind == "error":
                    raise value
                yield value
        finally:
            future.cancel()

    def close(self, timeout: float = 5.0) -> None:
        """Cancel what is still running and stop the thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return

        async def _shutdown() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if thread.is_alive() and not self.in_loop_thread():
            with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
                asyncio.run_coroutine_threadsafe(_shutdown(), loop).result(timeout)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
        if not loop.is_running():
            loop.close()
