"""``tasks``: seed 002's manage_tasks over the store (create/list/get/update/complete/delete)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from agi_jupyter.errors import NotFound, ToolError
from agi_jupyter.records import Task
from agi_jupyter.tools.base import Tool, ToolArgs, ToolContext, ToolResult

Action = Literal["create", "list", "get", "update", "complete", "delete"]
Status = Literal["pending", "in_progress", "done", "cancelled"]
READ_ACTIONS = frozenset({"list", "get"})


class TasksArgs(ToolArgs):
    action: Action = Field(description="create, list, get, update, complete or delete.")
    id: str | None = Field(None, description="Task id (for get, update, complete, delete).")
    title: str | None = Field(None, description="Task title (required for create).")
    details: str | None = Field(None, description="Task details.")
    status: Status | None = Field(None, description="New status (update), or filter (list).")
    due_at: str | None = Field(None, description="Due date and time, ISO 8601.")


def _task_json(task: Task) -> dict[str, Any]:
    return asdict(task)


def _check_due(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(
            f"due_at {value!r} is not an ISO 8601 date/time (e.g. 2026-01-31T09:00:00Z)"
        ) from None
    return value


class Tasks(Tool[TasksArgs]):
    name = "tasks"
    description = (
        "Manage the project's tasks: create, list (optionally by status), get, update, "
        "complete or delete. Answers with task data as JSON."
    )
    parameters = TasksArgs
    read_only = True  # list/get only, when the agent is read-only

    async def execute(self, args: TasksArgs, ctx: ToolContext) -> ToolResult:
        if ctx.read_only and args.action not in READ_ACTIONS:
            raise ToolError(
                f"tasks: action {args.action!r} changes tasks; this agent may only read"
            )
        try:
            data = await asyncio.to_thread(self._run, args, ctx)
        except NotFound:
            raise ToolError(f"tasks: no task with id {args.id!r}") from None
        return ToolResult(output=json.dumps(data, ensure_ascii=False, default=str), data=data)

    def _run(self, args: TasksArgs, ctx: ToolContext) -> dict[str, Any]:
        store = ctx.store
        if args.action == "create":
            if not args.title:
                raise ToolError("tasks: 'title' is required to create a task")
            task = store.create_task(
                args.title, details=args.details, due_at=_check_due(args.due_at)
            )
            return {"task": _task_json(task)}
        if args.action == "list":
            return {"tasks": [_task_json(t) for t in store.list_tasks(status=args.status)]}
        task_id = self._require_id(args)
        if args.action == "get":
            return {"task": _task_json(store.get_task(task_id))}
        if args.action == "delete":
            store.delete_task(task_id)
            return {"deleted": task_id}
        changes = self._changes(args)
        return {"task": _task_json(store.update_task(task_id, **changes))}

    @staticmethod
    def _require_id(args: TasksArgs) -> str:
        if not args.id:
            raise ToolError(f"tasks: 'id' is required for {args.action}")
        return args.id

    @staticmethod
    def _changes(args: TasksArgs) -> dict[str, Any]:
        if args.action == "complete":
            return {"status": "done"}
        changes: dict[str, Any] = {
            key: value
            for key, value in (
                ("title", args.title),
                ("details", args.details),
                ("status", args.status),
                ("due_at", _check_due(args.due_at)),
            )
            if value is not None
        }
        if not changes:
            raise ToolError("tasks: update needs at least one of title, details, status, due_at")
        return changes
