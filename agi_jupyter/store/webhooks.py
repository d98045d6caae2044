"""The webhook inbox: provider deliveries stored once, then processed by a tick."""

from __future__ import annotations

from agi_jupyter.errors import NotFound
from agi_jupyter.records import JSON, WebhookEvent, new_id, utc_now
from agi_jupyter.store.rows import WEBHOOK_EVENTS, check_limit
from agi_jupyter.store.sql import Database

_SELECT = f"SELECT {WEBHOOK_EVENTS.select()} FROM webhook_events"


class Webhooks:
    """The ``webhook_events`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._pos = db.dialect.pos

    def insert_webhook_event(
        self,
        *,
        provider: str,
        event_id: str,
        type: str,
        payload: JSON,
        response_id: str | None = None,
        delivery_id: str | None = None,
    ) -> tuple[WebhookEvent, bool]:
        """Store a webhook delivery once: returns the stored event and whether this call
        inserted it (False for a redelivery: a known ``event_id``, or a known ``delivery_id``,
        the delivery's ``webhook-id``)."""
        now = utc_now()
        event = WebhookEvent(
            id=new_id("whk"),
            provider=provider,
            event_id=event_id,
            type=type,
            response_id=response_id,
            payload=payload,
            received_at=now,
            created_at=now,
            updated_at=now,
            delivery_id=delivery_id,
        )
        row = WEBHOOK_EVENTS.to_row(event)
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._db.write() as conn:
            # No conflict target: a known event_id or a known delivery_id (both unique) makes
            # it a redelivery. A concurrent insert of either waits for the other to commit.
            inserted = conn.execute(
                f"INSERT INTO webhook_events ({columns}) VALUES ({marks})"
                " ON CONFLICT DO NOTHING RETURNING 1",
                list(row.values()),
            ).fetchone()
            if inserted is not None:
                return event, True
            stored = conn.execute(
                f"{_SELECT} WHERE event_id = ? OR delivery_id = ? ORDER BY {self._pos} LIMIT 1",
                [event_id, delivery_id],
            ).fetchone()
        assert stored is not None  # the conflicting row exists (rows are never deleted)
        return WEBHOOK_EVENTS.from_row(stored), False

    def list_unprocessed_webhook_events(self, *, limit: int = 50) -> list[WebhookEvent]:
        """Events not yet processed, oldest first."""
        rows = self._db.all(
            f"{_SELECT} WHERE processed_at IS NULL ORDER BY received_at, {self._pos} LIMIT ?",
            [check_limit(limit)],
        )
        return [WEBHOOK_EVENTS.from_row(r) for r in rows]

    def mark_webhook_event_processed(self, id: str, *, error: str | None = None) -> bool:
        """Mark an event processed (with the error, if processing failed), unless someone
        already did; returns whether this caller did it."""
        now = utc_now()
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE webhook_events SET processed_at = ?, processing_error = ?, updated_at = ?"
                " WHERE id = ? AND processed_at IS NULL",
                [now, error, now, id],
            )
            if cur.rowcount == 1:
                return True
            if conn.execute("SELECT 1 FROM webhook_events WHERE id = ?", [id]).fetchone():
                return False
        raise NotFound(f"webhook event {id!r} not found", code="WEBHOOK_EVENT_NOT_FOUND")
