"""The heartbeat (seed 002): act on due tasks without being asked.

Every ``heartbeat_interval`` seconds, each project's pending tasks due within the next interval
are handed to the agent: the task becomes ``in_progress`` (so it is handed over once) and a
background run starts in a new session titled after it, with the ``tasks`` tool and every due
task in its prompt; the agent marks the task done with that tool.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from agi_jupyter.records import Run, Task

if TYPE_CHECKING:
    from agi_jupyter.app import Agi

HEARTBEAT_TOOLS = ("tasks",)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def heartbeat_prompt(task: Task, due: list[Task], now: datetime) -> str:
    others = [
        {k: v for k, v in asdict(t).items() if k in ("id", "title", "details", "due_at", "status")}
        for t in due
        if t.id != task.id
    ]
    lines = [
        f"Heartbeat at {_iso(now)}: a scheduled task is due.",
        "",
        f"Task {task.id}: {task.title}",
        f"Due at: {task.due_at}",
    ]
    if task.details:
        lines += ["Details:", task.details]
    if others:
        lines += ["", "Other tasks due soon:", json.dumps(others, indent=1)]
    lines += [
        "",
        "Act on this task now. When it is done, mark it done with the `tasks` tool "
        f"(id {task.id}); if it cannot be done, say why.",
    ]
    return "\n".join(lines)


def start_due_tasks(agi: Agi, *, within: float, now: datetime | None = None) -> list[Run]:
    """Start a background run for each pending task due within ``within`` seconds."""
    now = now or datetime.now(UTC)
    due = agi.store.due_tasks(before=_iso(now + timedelta(seconds=within)))
    runs = []
    for task in [t for t in due if t.status == "pending"]:
        agi.store.update_task(task.id, status="in_progress")
        session = agi.new_session(
            title=f"Heartbeat: {task.title}"[:200],
            tools=HEARTBEAT_TOOLS,
            metadata={"heartbeat": {"task_id": task.id, "due_at": task.due_at}},
        )
        prompt = heartbeat_prompt(task, due, now)
        runs.append(agi.submit(prompt, session=session, execution_mode="background"))
    return runs
