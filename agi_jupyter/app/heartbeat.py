"""The heartbeat (seed 002): act on due tasks without being asked.

Every ``heartbeat_interval`` seconds, each project's pending tasks due within the next interval
are handed to the agent: the task becomes ``in_progress`` (so it is handed over once) and a
background run starts in a new session titled after it, with the ``tasks`` tool and every due
task in its prompt; the agent marks the task done with that tool (``Agi.start_due_tasks``;
the server's runner calls it).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime, timedelta

from agi_jupyter.records import Task

HEARTBEAT_TOOLS = ("tasks",)


def due_before(now: datetime, within: float) -> str:
    """The store's timestamp ``within`` seconds after ``now``: tasks due before it are due."""
    return _iso(now + timedelta(seconds=within))


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
