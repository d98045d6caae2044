"""The bounded retry around a model turn, with scripted streams and a recording sleep."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

import pytest

from agi_jupyter.errors import ProviderDisconnected, ProviderError, ProviderHTTPError
from agi_jupyter.providers import (
    Finish,
    ProviderEvent,
    RetryPolicy,
    TextDelta,
    stream_with_retry,
)
from agi_jupyter.providers._common import parse_retry_after

Script = list[ProviderEvent | ProviderError]


class Streams:
    """``open()`` plays the next script: its events, then raises its error if it has one."""

    def __init__(self, *scripts: Script) -> None:
        self.scripts = list(scripts)
        self.opened = 0
        self.closed = 0

    def open(self) -> AsyncGenerator[ProviderEvent, None]:
        script = self.scripts[self.opened]
        self.opened += 1
        return self._play(script)

    async def _play(self, script: Script) -> AsyncGenerator[ProviderEvent, None]:
        try:
            for item in script:
                if isinstance(item, ProviderError):
                    raise item
                yield item
        finally:
            self.closed += 1


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


async def run(streams: Streams, policy: RetryPolicy, sleep: Sleeps) -> list[ProviderEvent]:
    return [e async for e in stream_with_retry(streams.open, policy, sleep=sleep)]


OK: Script = [TextDelta(text="ok"), Finish(reason="stop")]
POLICY = RetryPolicy(max_retries=3, base_delay=0.5, max_delay=20.0)


def http(status: int, retry_after: float | None = None) -> ProviderHTTPError:
    return ProviderHTTPError(f"HTTP {status}", status=status, retry_after=retry_after)


@pytest.mark.asyncio
async def test_retries_before_the_first_event_with_backoff() -> None:
    streams, sleep = (
        Streams([http(500)], [http(502)], [ProviderDisconnected("reset")], OK),
        Sleeps(),
    )
    assert await run(streams, POLICY, sleep) == OK
    assert streams.opened == streams.closed == 4
    # equal jitter: between half and all of 0.5, 1, 2
    for delay, full in zip(sleep.delays, [0.5, 1.0, 2.0], strict=True):
        assert full / 2 <= delay <= full


@pytest.mark.asyncio
async def test_retry_after_is_honoured_and_capped() -> None:
    streams, sleep = (
        Streams([http(429, retry_after=7.0)], [http(429, retry_after=999)], OK),
        Sleeps(),
    )
    await run(streams, POLICY, sleep)
    assert sleep.delays == [7.0, 20.0]


@pytest.mark.asyncio
@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_not_retried(status: int) -> None:
    streams, sleep = Streams([http(status)], OK), Sleeps()
    with pytest.raises(ProviderHTTPError) as caught:
        await run(streams, POLICY, sleep)
    assert caught.value.status == status
    assert streams.opened == 1
    assert sleep.delays == []


@pytest.mark.asyncio
@pytest.mark.parametrize("status", [408, 429, 500, 503, 529])
async def test_retryable_statuses(status: int) -> None:
    streams = Streams([http(status)], OK)
    assert await run(streams, POLICY, Sleeps()) == OK


@pytest.mark.asyncio
async def test_exhausted_raises_the_last_error() -> None:
    streams, sleep = Streams([http(500)], [http(503)], [http(502)], [http(504)], OK), Sleeps()
    with pytest.raises(ProviderHTTPError) as caught:
        await run(streams, POLICY, sleep)
    assert caught.value.status == 504
    assert streams.opened == 4  # the first try and 3 retries
    assert len(sleep.delays) == 3


@pytest.mark.asyncio
async def test_no_retry_once_an_event_went_out() -> None:
    streams, sleep = Streams([TextDelta(text="par"), http(503)], OK), Sleeps()
    seen: list[ProviderEvent] = []
    with pytest.raises(ProviderDisconnected, match="after it started: HTTP 503") as caught:
        await collect_into(stream_with_retry(streams.open, POLICY, sleep=sleep), seen)
    assert seen == [TextDelta(text="par")]
    assert isinstance(caught.value.__cause__, ProviderHTTPError)
    assert streams.opened == 1


@pytest.mark.asyncio
async def test_a_late_non_retryable_error_keeps_its_type() -> None:
    late = ProviderError("the model failed (invalid_prompt)", retryable=False)
    streams = Streams([TextDelta(text="x"), late])
    with pytest.raises(ProviderError) as caught:
        await collect_into(stream_with_retry(streams.open, POLICY, sleep=Sleeps()), [])
    assert caught.value is late


@pytest.mark.asyncio
async def test_closing_early_closes_the_inner_stream() -> None:
    streams = Streams([TextDelta(text="a"), TextDelta(text="b"), Finish(reason="stop")])
    events = stream_with_retry(streams.open, POLICY, sleep=Sleeps())
    assert await anext(events) == TextDelta(text="a")
    await events.aclose()
    assert streams.closed == 1


async def collect_into(events: AsyncIterator[ProviderEvent], seen: list[ProviderEvent]) -> None:
    async for event in events:
        seen.append(event)


def test_policy_delay() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)
    assert policy.delay(0, retry_after=0.25) == 0.25
    assert policy.delay(0, retry_after=-3) == 0.0
    assert policy.delay(0, retry_after=60) == 5.0
    assert all(2.5 <= policy.delay(10) <= 5.0 for _ in range(50))  # capped, then jittered


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "3"}, 3.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # in the past
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers) == expected
