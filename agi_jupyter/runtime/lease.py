"""Keeping the leases of the runs this process owns: the heartbeat, on a thread of its own.

An owner's heartbeat (``store.heartbeat(fence)``) is what tells other processes it is alive;
a run whose heartbeat is older than ``stale_after`` is taken over by the next tick. The beat
therefore must not wait for the runtime loop, which runs every agent of the process and can be
busy for seconds (importing an SDK, building a client, a long synchronous tool): it runs on
this daemon thread, with a store connection of its own (a write of the loop waiting on the
database lock does not hold it up either).

Each beat reports back through the callbacks given to ``hold``, called on this thread:
``on_lost`` when the fence no longer holds (the run was taken over: the owner must stop and
write nothing more) and ``on_cancel`` when the run is no longer ``running`` (someone else
asked for its cancel: the owner should end it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agi_jupyter.errors import RunLost

if TYPE_CHECKING:
    from agi_jupyter.records import RunFence
    from agi_jupyter.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Lease:
    fence: RunFence
    on_lost: Callable[[], None]
    on_cancel: Callable[[], None]


class LeaseKeeper:
    """Heartbeats every held run every ``interval`` seconds from its own thread."""

    def __init__(
        self, open_store: Callable[[], Store], interval: float, *, shared: Store | None = None
    ) -> None:
        self._open_store = open_store
        self._shared = shared  # the runtime's own store: never closed here
        self.interval = interval
        self._leases: dict[str, _Lease] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._store: Store | None = None

    def hold(
        self, fence: RunFence, *, on_lost: Callable[[], None], on_cancel: Callable[[], None]
    ) -> None:
        """Keep ``fence``'s run alive until ``drop`` (starts the thread on first use)."""
        with self._lock:
            self._leases[fence.run_id] = _Lease(fence, on_lost, on_cancel)
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._beat_forever, name="agi-leases", daemon=True
                )
                self._thread.start()

    def drop(self, fence: RunFence) -> None:
        """Stop beating this fence's run (a newer fence of the same run stays)."""
        with self._lock:
            lease = self._leases.get(fence.run_id)
            if lease is not None and lease.fence == fence:
                del self._leases[fence.run_id]

    def held(self) -> list[RunFence]:
        with self._lock:
            return [lease.fence for lease in self._leases.values()]

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        if self._store is not None and self._store is not self._shared:
            self._store.close()
        self._store = None

    def _beat_forever(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()

    def beat(self) -> None:
        """One heartbeat of every held run (what the thread does every ``interval``)."""
        with self._lock:
            leases = list(self._leases.values())
        if not leases:
            return
        if self._store is None:
            self._store = self._open_store()
        for lease in leases:
            try:
                running = self._store.heartbeat(lease.fence)
            except RunLost:
                self._report(lease, lease.on_lost)
            except Exception:  # a busy or broken store: the next beat tries again
                log.warning("heartbeat of run %s failed", lease.fence.run_id, exc_info=True)
            else:
                if not running:
                    self._report(lease, lease.on_cancel)

    def _report(self, lease: _Lease, callback: Callable[[], None]) -> None:
        self.drop(lease.fence)
        try:
            callback()
        except Exception:
            log.exception("lease callback of run %s failed", lease.fence.run_id)
