"""A run's events with only the text that stays: ``Agi.stream(..., final_only=True)``.

A retried attempt streams its model turn again from the start; before it, every stream carries
``output.text.reset`` (see ``events.TextReset``). A consumer that shows deltas as they come must
take the discarded ones back; one that only wants the answer can follow the run through
``FinalText`` instead: it holds each turn's text and reasoning deltas (and the events after
them, so the order is kept) until the turn is known to stay — its ``output.text.done``, a
stored message, a status, the end of the run — drops them at a reset, and passes every other
event through unchanged. The joined ``output.text.delta`` of what it yields is then exactly the
stored answer; no ``output.text.reset`` comes out of it (there is nothing to take back).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

Event = dict[str, Any]

HELD = frozenset({"output.text.delta", "reasoning.delta"})
RESET = "output.text.reset"
# Events after which a turn's streamed text is not streamed again.
SETTLED = frozenset({"output.text.done", "message.completed", "run.status", "run.final"})


class FinalText:
    """The filter's state for one run's events: ``feed`` each event, ``end`` at the end."""

    def __init__(self) -> None:
        self._held: list[Event] = []  # from the first unsettled delta on, in order

    def feed(self, event: Event) -> list[Event]:
        """The events to yield now, after ``event``."""
        kind = event.get("type")
        if kind == RESET:
            kept = [e for e in self._held if e.get("type") not in HELD]
            self._held = []
            return kept
        if kind in HELD or self._held:
            self._held.append(event)
            return self.end() if kind in SETTLED else []
        return [event]

    def end(self) -> list[Event]:
        """What is still held (the events stopped mid-turn): yielded as it is."""
        held, self._held = self._held, []
        return held


def final_text_only(events: Iterable[Event]) -> Iterator[Event]:
    text = FinalText()
    for event in events:
        yield from text.feed(event)
    yield from text.end()


async def afinal_text_only(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    text = FinalText()
    async for event in events:
        for out in text.feed(event):
            yield out
    for out in text.end():
        yield out
