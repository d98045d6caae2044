"""Webhook inbox, tasks, capabilities and statistics on PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

from agi_jupyter.errors import NotFound
from agi_jupyter.records import (
    JSON,
    Capability,
    Task,
    TaskStatus,
    WebhookEvent,
    new_id,
    utc_now,
)
from agi_jupyter.store.misc import UNKNOWN_USAGE_RUNS, stats_dict
from agi_jupyter.store.postgres.core import PgCore
from agi_jupyter.store.rows import CAPABILITIES, TASKS, WEBHOOK_EVENTS, check_limit

_WEBHOOK_SELECT = f"SELECT {WEBHOOK_EVENTS.select()} FROM webhook_events"
_TASK_SELECT = f"SELECT {TASKS.select()} FROM tasks"
_CAPABILITY_SELECT = f"SELECT {CAPABILITIES.select()} FROM capabilities"


def _task_not_found(task_id: str) -> NotFound:
    return NotFound(f"task {task_id!r} not found", code="TASK_NOT_FOUND")


class PgWebhooksMixin(PgCore):
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
        marks = ", ".join("%s" for _ in row)
        with self._write() as conn:
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
                f"{_WEBHOOK_SELECT} WHERE event_id = %s OR delivery_id = %s ORDER BY pos LIMIT 1",
                [event_id, delivery_id],
            ).fetchone()
        assert stored is not None  # the conflicting row exists (rows are never deleted)
        return WEBHOOK_EVENTS.from_row(stored), False

    def list_unprocessed_webhook_events(self, *, limit: int = 50) -> list[WebhookEvent]:
        rows = self._all(
            f"{_WEBHOOK_SELECT} WHERE processed_at IS NULL ORDER BY received_at, pos LIMIT %s",
            [check_limit(limit)],
        )
        return [WEBHOOK_EVENTS.from_row(r) for r in rows]

    def mark_webhook_event_processed(self, id: str, *, error: str | None = None) -> bool:
        now = utc_now()
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE webhook_events SET processed_at = %s, processing_error = %s,"
                " updated_at = %s WHERE id = %s AND processed_at IS NULL",
                [now, error, now, id],
            )
            if cur.rowcount == 1:
                return True
            if conn.execute("SELECT 1 FROM webhook_events WHERE id = %s", [id]).fetchone():
                return False
        raise NotFound(f"webhook event {id!r} not found", code="WEBHOOK_EVENT_NOT_FOUND")


class PgTasksMixin(PgCore):
    def create_task(
        self, title: str, *, details: str | None = None, due_at: str | None = None
    ) -> Task:
        now = utc_now()
        task = Task(
            id=new_id("tsk"),
            title=title,
            details=details,
            due_at=due_at,
            created_at=now,
            updated_at=now,
        )
        with self._write() as conn:
            self._insert(conn, "tasks", TASKS.to_row(task))
        return task

    def get_task(self, id: str) -> Task:
        row = self._one(f"{_TASK_SELECT} WHERE id = %s", [id])
        if row is None:
            raise _task_not_found(id)
        return TASKS.from_row(row)

    def list_tasks(self, *, status: TaskStatus | None = None) -> list[Task]:
        if status is None:
            rows = self._all(f"{_TASK_SELECT} ORDER BY created_at, pos")
        else:
            TASKS.encode({"status": status})  # validates the value
            rows = self._all(f"{_TASK_SELECT} WHERE status = %s ORDER BY created_at, pos", [status])
        return [TASKS.from_row(r) for r in rows]

    def update_task(self, id: str, /, **changes: Any) -> Task:
        values = {**TASKS.changes(changes), "updated_at": utc_now()}
        assignments, params = self._set_clause(values)
        with self._write() as conn:
            row = conn.execute(
                f"UPDATE tasks SET {assignments} WHERE id = %s RETURNING {TASKS.select()}",
                [*params, id],
            ).fetchone()
        if row is None:
            raise _task_not_found(id)
        return TASKS.from_row(row)

    def delete_task(self, id: str) -> None:
        with self._write() as conn:
            if conn.execute("DELETE FROM tasks WHERE id = %s", [id]).rowcount == 0:
                raise _task_not_found(id)

    def due_tasks(self, *, before: str) -> list[Task]:
        rows = self._all(
            f"{_TASK_SELECT} WHERE status IN ('pending', 'in_progress')"
            " AND due_at IS NOT NULL AND due_at <= %s ORDER BY due_at, pos",
            [before],
        )
        return [TASKS.from_row(r) for r in rows]


class PgCapabilitiesMixin(PgCore):
    def upsert_capability(
        self, name: str, *, description: str, file_path: str, tool_schema: JSON
    ) -> Capability:
        now = utc_now()
        new = Capability(
            id=new_id("cap"),
            name=name,
            description=description,
            file_path=file_path,
            tool_schema=tool_schema,
            created_at=now,
            updated_at=now,
        )
        row = CAPABILITIES.to_row(new)
        with self._write() as conn:
            stored = conn.execute(
                "INSERT INTO capabilities (id, name, description, file_path, tool_schema,"
                " created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (name) DO UPDATE SET description = excluded.description,"
                " file_path = excluded.file_path, tool_schema = excluded.tool_schema,"
                f" updated_at = excluded.updated_at RETURNING {CAPABILITIES.select()}",
                [row[c] for c in CAPABILITIES.columns],
            ).fetchone()
        assert stored is not None  # RETURNING of an upsert always has the row
        return CAPABILITIES.from_row(stored)

    def get_capability(self, name: str) -> Capability | None:
        row = self._one(f"{_CAPABILITY_SELECT} WHERE name = %s", [name])
        return None if row is None else CAPABILITIES.from_row(row)

    def list_capabilities(self) -> list[Capability]:
        return [CAPABILITIES.from_row(r) for r in self._all(f"{_CAPABILITY_SELECT} ORDER BY name")]

    def delete_capability(self, name: str) -> bool:
        with self._write() as conn:
            return conn.execute("DELETE FROM capabilities WHERE name = %s", [name]).rowcount == 1

    def set_notebook_budget(self, path: str, budget: JSON | None) -> None:
        """Store the budget of the notebook ``path`` (None removes it)."""
        with self._write() as conn:
            if budget is None:
                conn.execute("DELETE FROM notebook_budgets WHERE path = %s", [path])
                return
            conn.execute(
                "INSERT INTO notebook_budgets (path, budget, updated_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (path) DO UPDATE SET budget = excluded.budget,"
                " updated_at = excluded.updated_at",
                [path, json.dumps(budget), utc_now()],
            )

    def notebook_budgets(self) -> dict[str, JSON]:
        """The stored notebook budgets, by path."""
        rows = self._all("SELECT path, budget FROM notebook_budgets ORDER BY path")
        return {str(r[0]): json.loads(r[1]) for r in rows}


class PgStatsMixin(PgCore):
    def stats(self) -> dict[str, Any]:
        """Counts and totals over the project (one snapshot)."""
        with self._read() as conn:
            counts = {
                table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # type: ignore[index]
                for table in ("messages", "artifacts", "tasks", "webhook_events")
            }
            runs = conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall()
            unknown = conn.execute(UNKNOWN_USAGE_RUNS).fetchone()
            tools = conn.execute(
                "SELECT name, COUNT(*) FROM tool_calls GROUP BY name ORDER BY name"
            ).fetchall()
            usage = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0)::bigint,"
                " COALESCE(SUM(output_tokens), 0)::bigint, COALESCE(SUM(cost_usd), 0.0)"
                " FROM sessions"
            ).fetchone()
        assert usage is not None
        return stats_dict(counts, runs, tools, usage, unknown[0] if unknown else 0)
