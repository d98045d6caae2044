"""The task list (``tasks.*`` tools, due reminders)."""

from __future__ import annotations

from typing import Any

from agi_jupyter.errors import NotFound
from agi_jupyter.records import Task, TaskStatus, new_id, utc_now
from agi_jupyter.store.rows import TASKS
from agi_jupyter.store.sql import Database, insert, set_clause

_SELECT = f"SELECT {TASKS.select()} FROM tasks"


def _not_found(task_id: str) -> NotFound:
    return NotFound(f"task {task_id!r} not found", code="TASK_NOT_FOUND")


class Tasks:
    """The ``tasks`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._pos = db.dialect.pos

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
        with self._db.write() as conn:
            insert(conn, "tasks", TASKS.to_row(task))
        return task

    def get_task(self, id: str) -> Task:
        row = self._db.one(f"{_SELECT} WHERE id = ?", [id])
        if row is None:
            raise _not_found(id)
        return TASKS.from_row(row)

    def list_tasks(self, *, status: TaskStatus | None = None) -> list[Task]:
        """Tasks in creation order, optionally only those in ``status``."""
        order = f"ORDER BY created_at, {self._pos}"
        if status is None:
            rows = self._db.all(f"{_SELECT} {order}")
        else:
            TASKS.encode({"status": status})  # validates the value
            rows = self._db.all(f"{_SELECT} WHERE status = ? {order}", [status])
        return [TASKS.from_row(r) for r in rows]

    def update_task(self, id: str, /, **changes: Any) -> Task:
        values = {**TASKS.changes(changes), "updated_at": utc_now()}
        assignments, params = set_clause(values)
        with self._db.write() as conn:
            row = conn.execute(
                f"UPDATE tasks SET {assignments} WHERE id = ? RETURNING {TASKS.select()}",
                [*params, id],
            ).fetchone()
        if row is None:
            raise _not_found(id)
        return TASKS.from_row(row)

    def delete_task(self, id: str) -> None:
        with self._db.write() as conn:
            if conn.execute("DELETE FROM tasks WHERE id = ?", [id]).rowcount == 0:
                raise _not_found(id)

    def due_tasks(self, *, before: str) -> list[Task]:
        """Pending or in-progress tasks due at or before ``before``, soonest first."""
        rows = self._db.all(
            f"{_SELECT} WHERE status IN ('pending', 'in_progress')"
            f" AND due_at IS NOT NULL AND due_at <= ? ORDER BY due_at, {self._pos}",
            [before],
        )
        return [TASKS.from_row(r) for r in rows]
