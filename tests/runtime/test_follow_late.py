"""A consumer that starts following after the run began publishing misses nothing: every
consumer sees every event from its starting seq, deltas included (stored or not)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.runtime.follow import afollow_run_batches, follow_run, is_new
from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.runtime.conftest import MakeAgi

WORDS = [f"word{i} " for i in range(40)]


def _check_complete(events: list[dict[str, Any]], after_seq: int = 0) -> None:
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs))
    assert seqs[0] > after_seq
    assert events[-1]["type"] == "run.final"
    text = "".join(e["delta"] for e in events if e["type"] == "output.text.delta")
    assert text == "".join(WORDS)


def _ended(agi: Agi, run_id: str) -> threading.Event:
    """Set once the run's final event is published (or at once if it already ended)."""
    done = threading.Event()
    agi.bus.subscribe_run(run_id, lambda e: done.set() if e.get("type") == "run.final" else None)
    if agi.run(run_id).is_terminal:
        done.set()
    return done


@pytest.mark.parametrize("persist_deltas", [False, True])
def test_a_stream_iterated_late_has_every_delta(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, persist_deltas: bool
) -> None:
    fake_llm.enqueue(Turn(chunks=WORDS))
    agi = make_agi(config={"persist_deltas": persist_deltas})
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    stream = agi.stream("hello there", session=session.id)
    run_id = agi.runs(session.id).items[0].id
    assert _ended(agi, run_id).wait(60), "the run ends before the stream is iterated"
    events = list(stream)
    _check_complete(events)
    assert events[0]["type"] == "run.meta"


def test_a_follower_joining_mid_stream_gets_the_deltas_not_yet_stored(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(chunks=WORDS, fault=Fault(stall_between_events=0.02)))
    agi = make_agi(config={"persist_deltas": False})
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    run = agi.submit("talk", session=session.id, start=False)
    some = threading.Event()
    agi.bus.subscribe_run(run.id, lambda e: some.set() if e.get("delta") == WORDS[5] else None)
    agi.loop.submit(agi._spawn(run.id))
    assert some.wait(60)
    _check_complete(list(agi.follow(run.id)))


def test_the_async_follower_of_a_reply_joins_late_without_loss(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(chunks=WORDS))
    agi = make_agi(config={"persist_deltas": False})
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    run = agi.submit("talk", session=session.id, start=False)
    ended = _ended(agi, run.id)
    agi.loop.submit(agi._spawn(run.id))
    assert ended.wait(60)

    async def collect() -> list[dict[str, Any]]:
        batches = afollow_run_batches(agi.store, agi.bus, run.id)
        return [event async for batch in batches for event in batch]

    _check_complete(asyncio.run(collect()))


def test_a_fresh_follower_of_a_run_executed_elsewhere_gets_every_event(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    """A follower told the run is new (``fresh``: no store read to start) of a run that another
    process executes: nothing reaches its bus, and the store, read once the bus was quiet,
    gives it every event from the first."""
    fake_llm.enqueue(Turn(chunks=WORDS))
    here, elsewhere = make_agi(), make_agi()
    session = here.new_session(model="openai-chat:gpt-4o-mini")
    run = here.submit("talk", session=session.id, start=False)
    events: list[dict[str, Any]] = []
    follower = threading.Thread(
        target=lambda: events.extend(follow_run(here.store, here.bus, run.id, fresh=is_new(run)))
    )
    follower.start()
    assert is_new(run)
    assert elsewhere.tick().executed == 1
    follower.join(60)
    assert not follower.is_alive()
    _check_complete(events)
    assert events[0]["type"] == "run.meta"
    assert [e["seq"] for e in events if e["type"] != "output.text.delta"] == [
        e.seq for e in here.store.list_run_events(run.id) if e.type != "output.text.delta"
    ]
