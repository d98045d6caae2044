"""Stamps, persists and publishes the events of one run.

The emitter owns the run's ``seq`` counter, so every live event — persisted or not — carries a
unique, increasing ``seq``; the store keeps the coarse events (and the deltas only with
``persist_deltas``), so a replay with ``after_seq`` resumes exactly where a client left off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agi_jupyter.events import Event, event_to_dict, is_persisted
from agi_jupyter.records import utc_now

if TYPE_CHECKING:
    from agi_jupyter.runtime.bus import EventBus
    from agi_jupyter.store import Store


class RunEmitter:
    def __init__(
        self,
        store: Store,
        bus: EventBus,
        *,
        run_id: str,
        session_id: str,
        persist_deltas: bool,
        last_seq: int,
    ) -> None:
        self.store = store
        self.bus = bus
        self.run_id = run_id
        self.session_id = session_id
        self.persist_deltas = persist_deltas
        self.seq = last_seq

    def emit(self, event: Event) -> dict[str, Any]:
        self.seq += 1
        event.run_id, event.seq, event.ts = self.run_id, self.seq, utc_now()
        data = event_to_dict(event)
        if is_persisted(data["type"], persist_deltas=self.persist_deltas):
            payload = {k: v for k, v in data.items() if k not in ("type", "run_id", "seq")}
            self.store.append_run_event(self.run_id, data["type"], payload, seq=self.seq)
        self.bus.publish(self.session_id, data)
        return data
