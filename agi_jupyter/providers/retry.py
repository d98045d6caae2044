"""Our own bounded retry around one streamed model turn (the SDK clients retry nothing).

A turn is retried only while nothing has been yielded: a 429/408/5xx answer or a connection error
before the first event is retried with exponential backoff and jitter, honouring the server's
``retry-after`` / ``retry-after-ms`` (capped at ``max_delay``). Once an event went out, a
retryable failure propagates as ``ProviderDisconnected`` and the run-level retry takes over (the
consumer has already shown part of the answer, so only the runner can decide what to do).
When the retries run out, the last typed error is raised.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass

from agi_jupyter.errors import ProviderDisconnected, ProviderError, ProviderHTTPError
from agi_jupyter.providers.base import ProviderEvent

log = logging.getLogger("agi_jupyter.providers")

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before retrying a failed start of a model turn."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 20.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        backoff = min(self.max_delay, self.base_delay * 2.0**attempt)
        return backoff * (0.5 + random.random() / 2)  # "equal jitter": between 1/2 and 1


def _retry_after(error: ProviderError) -> float | None:
    return error.retry_after if isinstance(error, ProviderHTTPError) else None


def _after_start(error: ProviderError) -> ProviderError:
    """What a failure becomes once events were yielded: retryable ones are disconnects."""
    if isinstance(error, ProviderDisconnected) or not error.retryable:
        return error
    return ProviderDisconnected(f"the stream failed after it started: {error.message}")


async def stream_with_retry(
    open_stream: Callable[[], AsyncGenerator[ProviderEvent, None]],
    policy: RetryPolicy,
    *,
    sleep: Sleep = asyncio.sleep,
) -> AsyncGenerator[ProviderEvent, None]:
    """Yield the events of ``open_stream()``, starting it again on retryable early failures."""
    attempt = 0
    while True:
        events = open_stream()
        async with aclosing(events):
            try:
                first = await anext(events)
            except StopAsyncIteration:
                return
            except ProviderError as error:
                if not error.retryable or attempt >= policy.max_retries:
                    raise
                delay = policy.delay(attempt, _retry_after(error))
                log.info("retrying in %.2fs (attempt %d): %s", delay, attempt + 1, error.message)
            else:
                yield first
                try:
                    async for event in events:
                        yield event
                except ProviderError as error:
                    failure = _after_start(error)
                    if failure is error:
                        raise
                    raise failure from error
                return
        attempt += 1
        await sleep(delay)
