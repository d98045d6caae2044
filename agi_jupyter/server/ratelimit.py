"""A token bucket per client address (for the unauthenticated webhook route)."""

from __future__ import annotations

import time
from collections.abc import Callable

MAX_CLIENTS = 10_000


class RateLimiter:
    """``per_minute`` requests per key, in bursts of up to ``per_minute``; 0 disables."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last refill)

    def allow(self, key: str) -> bool:
        return self.retry_after(key) is None

    def retry_after(self, key: str) -> float | None:
        """None if a request of ``key`` may go ahead now (it is counted), else the seconds
        until it may (for ``Retry-After``)."""
        if self.per_minute <= 0:
            return None
        now = self._clock()
        tokens, last = self._buckets.get(key, (float(self.per_minute), now))
        tokens = min(float(self.per_minute), tokens + (now - last) * self.per_minute / 60.0)
        allowed = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
        if len(self._buckets) > MAX_CLIENTS:
            self._forget_full(now)
        return None if allowed else (1.0 - tokens) * 60.0 / self.per_minute

    def _forget_full(self, now: float) -> None:
        """Drop buckets that have refilled completely (they hold no information)."""
        for key, (tokens, last) in list(self._buckets.items()):
            if tokens + (now - last) * self.per_minute / 60.0 >= self.per_minute:
                del self._buckets[key]
