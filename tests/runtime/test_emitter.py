"""The emitter's delta coalescing: fragments that arrive in one turn of the event loop go out as
one event; everything else (order, seqs, persistence, the text itself) stays as it was."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter import events as ev
from agi_jupyter.runtime.bus import EventBus
from agi_jupyter.runtime.emitter import RunEmitter
from agi_jupyter.store import open_store
from agi_jupyter.store.sqlite import SqliteStore


@dataclass
class Wired:
    """A store with one run, a bus, and the events published for the run (``live``)."""

    store: SqliteStore
    bus: EventBus
    run_id: str
    live: list[dict[str, Any]]

    def emitter(self, *, persist_deltas: bool = False) -> RunEmitter:
        session_id = self.store.get_run(self.run_id).session_id
        return RunEmitter(
            self.store,
            self.bus,
            run_id=self.run_id,
            session_id=session_id,
            persist_deltas=persist_deltas,
            last_seq=0,
        )

    def kinds(self) -> list[tuple[str, str]]:
        return [(e["type"], e.get("delta", "")) for e in self.live]


@pytest.fixture
def wired(tmp_path: Path) -> Iterator[Wired]:
    store = open_store(tmp_path / "proj")
    session = store.create_session(provider="fake", model="echo")
    run = store.create_run(session.id, provider="fake", model="echo")
    bus = EventBus()
    live: list[dict[str, Any]] = []
    bus.subscribe_run(run.id, live.append)
    yield Wired(store, bus, run.id, live)
    store.close()


def test_fragments_of_one_loop_turn_are_one_event(wired: Wired) -> None:
    async def burst() -> None:
        emitter = wired.emitter()
        for word in ("Hel", "lo ", "there"):
            emitter.emit_delta("output.text.delta", word)  # no await: one turn of the loop
        assert wired.live == [], "nothing goes out before the turn ends"
        await asyncio.sleep(0)

    asyncio.run(burst())
    assert wired.kinds() == [("output.text.delta", "Hello there")]
    assert wired.live[0]["seq"] == 1
    assert wired.live[0]["ts"]


def test_fragments_of_separate_turns_stay_separate(wired: Wired) -> None:
    async def paced() -> None:
        emitter = wired.emitter()
        for word in ("a", "b", "c"):
            emitter.emit_delta("output.text.delta", word)
            await asyncio.sleep(0)  # the model's next token comes in a later read

    asyncio.run(paced())
    assert wired.kinds() == [("output.text.delta", d) for d in "abc"]
    assert [e["seq"] for e in wired.live] == [1, 2, 3]


def test_another_event_sends_the_waiting_delta_first(wired: Wired) -> None:
    async def mixed() -> None:
        emitter = wired.emitter()
        emitter.emit_delta("reasoning.delta", "think")
        emitter.emit_delta("reasoning.delta", "ing")
        emitter.emit_delta("output.text.delta", "An")  # another kind: the reasoning goes out
        emitter.emit(ev.TextDelta(delta="swer"))  # event objects join the same delta
        emitter.emit(ev.TextDone(text="Answer"))
        emitter.emit_delta("output.text.delta", "!")
        await asyncio.sleep(0)

    asyncio.run(mixed())
    assert wired.kinds() == [
        ("reasoning.delta", "thinking"),
        ("output.text.delta", "Answer"),
        ("output.text.done", ""),
        ("output.text.delta", "!"),
    ]
    assert [e["seq"] for e in wired.live] == [1, 2, 3, 4]
    stored = wired.store.list_run_events(wired.run_id)
    assert [(e.type, e.seq) for e in stored] == [("output.text.done", 3)]


def test_without_a_running_loop_each_delta_goes_out_at_once(wired: Wired) -> None:
    emitter = wired.emitter()
    emitter.emit_delta("output.text.delta", "a")
    emitter.emit_delta("output.text.delta", "b")
    assert wired.kinds() == [("output.text.delta", "a"), ("output.text.delta", "b")]


def test_persisted_deltas_are_stored_coalesced_and_in_order(wired: Wired) -> None:
    async def burst() -> None:
        emitter = wired.emitter(persist_deltas=True)
        emitter.emit_delta("output.text.delta", "one ")
        emitter.emit_delta("output.text.delta", "two")
        await asyncio.sleep(0)
        emitter.emit_delta("output.text.delta", " three")
        emitter.emit(ev.TextDone(text="one two three"))

    asyncio.run(burst())
    stored = wired.store.list_run_events(wired.run_id)
    assert [(e.seq, e.type, e.payload.get("delta")) for e in stored] == [
        (1, "output.text.delta", "one two"),
        (2, "output.text.delta", " three"),
        (3, "output.text.done", None),
    ]
    assert [e["seq"] for e in wired.live] == [1, 2, 3]
