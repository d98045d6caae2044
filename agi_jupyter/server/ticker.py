"""The in-process runner: a periodic tick of every project in use, woken early by webhooks,
and the heartbeat loop. Both run on the server's event loop and only schedule work: ticks
execute on each project's runtime loop, and a project whose previous tick is still running
is skipped (ticks are safe to overlap, but there is no point)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agi_jupyter.app import Agi
    from agi_jupyter.server.kernels import NotebookKernels
    from agi_jupyter.server.projects import Projects

log = logging.getLogger(__name__)

WAKE_DEBOUNCE = 0.05  # seconds to wait after a wake-up for more of the same burst
KERNELS_EVERY = 1.0  # seconds between refreshes of the running notebook kernels
EVICT_EVERY = 10.0  # seconds between looks for idle projects to close (at most)


class BackgroundRunner:
    def __init__(
        self,
        projects: Projects,
        *,
        tick_interval: float,
        heartbeat_interval: float,
        max_runs: int = 10,
        max_webhook_events: int = 50,
        executor: Executor | None = None,
        logger: logging.Logger | None = None,
        kernels: NotebookKernels | None = None,
    ) -> None:
        self.projects = projects
        self.tick_interval = tick_interval
        self.heartbeat_interval = heartbeat_interval
        self.max_runs = max_runs
        self.max_webhook_events = max_webhook_events
        self.executor = executor
        self.log = logger or log
        self.kernels = kernels
        self._wake = asyncio.Event()
        self.beats = 0  # heartbeats completed (over every project in use)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loops: list[asyncio.Task[None]] = []
        self._ticking: dict[int, asyncio.Task[None]] = {}
        self._stopped = False

    def start(self) -> None:
        if self._loops or self._stopped:
            return
        loop = self._loop = asyncio.get_running_loop()
        self._loops.append(loop.create_task(self._tick_loop()))
        if self.heartbeat_interval > 0:
            self._loops.append(loop.create_task(self._every(self.heartbeat_interval, self.beat)))
        if self.kernels is not None:
            self._loops.append(loop.create_task(self._every(KERNELS_EVERY, self.kernels.refresh)))
        every = min(EVICT_EVERY, max(self.projects.idle_timeout / 4, 0.25))
        self._loops.append(loop.create_task(self._every(every, self.projects.evict)))

    def wake(self) -> None:
        """Tick soon (a webhook event arrived, a run was queued)."""
        self._wake.set()

    def wake_threadsafe(self) -> None:
        """``wake`` from another thread (the store's notification listener)."""
        loop = self._loop
        if loop is not None and not self._stopped:
            with contextlib.suppress(RuntimeError):  # the loop has closed meanwhile
                loop.call_soon_threadsafe(self.wake)

    async def stop(self) -> None:
        self._stopped = True
        tasks = [*self._loops, *self._ticking.values()]
        self._loops, self._ticking = [], {}
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _tick_loop(self) -> None:
        interval = self.tick_interval if self.tick_interval > 0 else None
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=interval)
                await asyncio.sleep(WAKE_DEBOUNCE)  # a burst of deliveries: one tick
            self._wake.clear()
            await self._for_each_project(self._start_tick)

    async def _every(self, seconds: float, action: Callable[[], object]) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                result = action()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                self.log.exception("agi: %s failed", getattr(action, "__name__", action))

    async def _for_each_project(self, action: Callable[[Agi], None]) -> None:
        for name in self.projects.with_store():
            try:
                action(await self.projects.get(name, touch=False))
            except Exception:
                self.log.exception("agi: project %r", name)

    def _start_tick(self, agi: Agi) -> None:
        key = id(agi)
        running = self._ticking.get(key)
        if running is not None and not running.done():
            return
        task = asyncio.get_running_loop().create_task(self._tick(agi))
        self._ticking[key] = task

    async def _tick(self, agi: Agi) -> None:
        try:
            result = await agi.atick(
                max_runs=self.max_runs, max_webhook_events=self.max_webhook_events
            )
        except Exception:
            self.log.exception("agi: tick of %s failed", agi.project)
            return
        if result.executed + result.recovered + result.failed_stale >= self.max_runs:
            self.wake()  # a full tick: more runs are likely queued, so tick again at once

    async def beat(self) -> None:
        """One heartbeat over every project in use."""
        loop = asyncio.get_running_loop()
        for name in self.projects.with_store():
            agi = await self.projects.get(name, touch=False)
            start = functools.partial(agi.start_due_tasks, within=self.heartbeat_interval)
            runs = await loop.run_in_executor(self.executor, start)
            if runs:
                self.log.info("agi: heartbeat started %d run(s) in %s", len(runs), agi.project)
        self.beats += 1
