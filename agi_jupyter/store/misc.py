"""Webhook inbox, tasks, capabilities (self-written tools) and store statistics."""

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
from agi_jupyter.store.connection import StoreCore
from agi_jupyter.store.rows import CAPABILITIES, TASKS, WEBHOOK_EVENTS, check_limit

_WEBHOOK_SELECT = f"SELECT {WEBHOOK_EVENTS.select()} FROM webhook_events"
_TASK_SELECT = f"SELECT {TASKS.select()} FROM tasks"
_CAPABILITY_SELECT = f"SELECT {CAPABILITIES.select()} FROM capabilities"


def _task_not_found(task_id: str) -> NotFound:
    return NotFound(f"task {task_id!r} not found", code="TASK_NOT_FOUND")


class WebhooksMixin(StoreCore):
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
        with self._write() as conn:
            known = conn.execute(
                f"{_WEBHOOK_SELECT} WHERE event_id = ? OR delivery_id = ? LIMIT 1",
                [event_id, delivery_id],
            ).fetchone()
            if known is not None:
                return WEBHOOK_EVENTS.from_row(known), False
            conn.execute(
                f"INSERT INTO webhook_events ({columns}) VALUES ({marks})", list(row.values())
            )
        return event, True

    def list_unprocessed_webhook_events(self, *, limit: int = 50) -> list[WebhookEvent]:
        """Events not yet processed, oldest first."""
        rows = self._all(
            f"{_WEBHOOK_SELECT} WHERE processed_at IS NULL ORDER BY received_at, rowid LIMIT ?",
            [check_limit(limit)],
        )
        return [WEBHOOK_EVENTS.from_row(r) for r in rows]

    def mark_webhook_event_processed(self, id: str, *, error: str | None = None) -> bool:
        """Mark an event processed (with the error, if processing failed), unless someone
        already did; returns whether this caller did it."""
        now = utc_now()
        with self._write() as conn:
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


class TasksMixin(StoreCore):
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
        row = TASKS.to_row(task)
        with self._write() as conn:
            self._insert(conn, "tasks", row)
        return task

    def get_task(self, id: str) -> Task:
        row = self._one(f"{_TASK_SELECT} WHERE id = ?", [id])
        if row is None:
            raise _task_not_found(id)
        return TASKS.from_row(row)

    def list_tasks(self, *, status: TaskStatus | None = None) -> list[Task]:
        """Tasks in creation order, optionally only those in ``status``."""
        if status is None:
            rows = self._all(f"{_TASK_SELECT} ORDER BY created_at, rowid")
        else:
            TASKS.encode({"status": status})  # validates the value
            rows = self._all(
                f"{_TASK_SELECT} WHERE status = ? ORDER BY created_at, rowid", [status]
            )
        return [TASKS.from_row(r) for r in rows]

    def update_task(self, id: str, /, **changes: Any) -> Task:
        values = {**TASKS.changes(changes), "updated_at": utc_now()}
        assignments, params = self._set_clause(values)
        with self._write() as conn:
            cur = conn.execute(f"UPDATE tasks SET {assignments} WHERE id = ?", [*params, id])
            if cur.rowcount == 0:
                raise _task_not_found(id)
            row = conn.execute(f"{_TASK_SELECT} WHERE id = ?", [id]).fetchone()
        return TASKS.from_row(row)

    def delete_task(self, id: str) -> None:
        with self._write() as conn:
            if conn.execute("DELETE FROM tasks WHERE id = ?", [id]).rowcount == 0:
                raise _task_not_found(id)

    def due_tasks(self, *, before: str) -> list[Task]:
        """Pending or in-progress tasks due at or before ``before``, soonest first."""
        rows = self._all(
            f"{_TASK_SELECT} WHERE status IN ('pending', 'in_progress')"
            " AND due_at IS NOT NULL AND due_at <= ? ORDER BY due_at, rowid",
            [before],
        )
        return [TASKS.from_row(r) for r in rows]


class CapabilitiesMixin(StoreCore):
    def upsert_capability(
        self, name: str, *, description: str, file_path: str, tool_schema: JSON
    ) -> Capability:
        """Create or replace the capability called ``name`` (its id and created_at stay)."""
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
            conn.execute(
                "INSERT INTO capabilities (id, name, description, file_path, tool_schema,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET description = excluded.description,"
                " file_path = excluded.file_path, tool_schema = excluded.tool_schema,"
                " updated_at = excluded.updated_at",
                [row[c] for c in CAPABILITIES.columns],
            )
            stored = conn.execute(f"{_CAPABILITY_SELECT} WHERE name = ?", [name]).fetchone()
        return CAPABILITIES.from_row(stored)

    def get_capability(self, name: str) -> Capability | None:
        row = self._one(f"{_CAPABILITY_SELECT} WHERE name = ?", [name])
        return None if row is None else CAPABILITIES.from_row(row)

    def list_capabilities(self) -> list[Capability]:
        """All capabilities, by name."""
        return [CAPABILITIES.from_row(r) for r in self._all(f"{_CAPABILITY_SELECT} ORDER BY name")]

    def delete_capability(self, name: str) -> bool:
        """Delete a capability; returns whether it existed."""
        with self._write() as conn:
            return conn.execute("DELETE FROM capabilities WHERE name = ?", [name]).rowcount == 1

    def set_notebook_budget(self, path: str, budget: JSON | None) -> None:
        """Store the budget of the notebook ``path`` (None removes it)."""
        with self._write() as conn:
            if budget is None:
                conn.execute("DELETE FROM notebook_budgets WHERE path = ?", [path])
                return
            conn.execute(
                "INSERT INTO notebook_budgets (path, budget, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (path) DO UPDATE SET budget = excluded.budget,"
                " updated_at = excluded.updated_at",
                [path, json.dumps(budget), utc_now()],
            )

    def notebook_budgets(self) -> dict[str, JSON]:
        """The stored notebook budgets, by path."""
        rows = self._all("SELECT path, budget FROM notebook_budgets ORDER BY path")
        return {str(r[0]): json.loads(r[1]) for r in rows}


class StatsMixin(StoreCore):
    def stats(self) -> dict[str, Any]:
        """Counts and totals over the whole store (all zeros before the first write)."""
        with self._read() as conn:
            if conn is None:
                return stats_dict({}, [], [], (0, 0, 0, 0.0))
            counts = {
                table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for table in ("messages", "artifacts", "tasks", "webhook_events")
            }
            runs = conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall()
            unknown = conn.execute(UNKNOWN_USAGE_RUNS).fetchone()
            tools = conn.execute(
                "SELECT name, COUNT(*) FROM tool_calls GROUP BY name ORDER BY name"
            ).fetchall()
            usage = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0),"
                " COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cost_usd), 0.0) FROM sessions"
            ).fetchone()
        return stats_dict(counts, runs, tools, usage, unknown[0] if unknown else 0)


# Runs with a model turn whose server sent no usage (``runner.add_turn_usage``): their tokens
# are not in the totals, so the totals are a lower bound. ``usage`` is JSON text on both
# backends; the key only appears when such a turn happened.
UNKNOWN_USAGE_RUNS = "SELECT COUNT(*) FROM runs WHERE usage LIKE '%\"unknown_turns\"%'"


def stats_dict(
    counts: dict[str, int],
    runs: list[tuple[str, int]],
    tools: list[tuple[str, int]],
    usage: tuple[int, int, int, float],
    unknown_usage_runs: int = 0,
) -> dict[str, Any]:
    sessions, input_tokens, output_tokens, cost = usage
    return {
        "sessions": sessions,
        "messages": counts.get("messages", 0),
        "runs": sum(n for _, n in runs),
        "runs_by_status": dict(sorted(runs)),
        "tool_calls": sum(n for _, n in tools),
        "tool_calls_by_name": dict(tools),
        "artifacts": counts.get("artifacts", 0),
        "tasks": counts.get("tasks", 0),
        "webhook_events": counts.get("webhook_events", 0),
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
        "cost_usd": float(cost),
        "unknown_usage_runs": int(unknown_usage_runs),
    }
