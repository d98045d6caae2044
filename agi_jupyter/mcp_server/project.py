"""The project's sessions and runs as MCP tools: list, read history, start a run, follow it.

| tool          | does                                                                   |
|---------------|------------------------------------------------------------------------|
| agi_sessions  | the project's sessions, newest first (paged)                           |
| agi_history   | a session's messages, simple (text) or full (tool calls and results)   |
| agi_runs      | runs, of a session or of the project, newest first                     |
| agi_start_run | a background run for a prompt, in a new or an existing session          |
| agi_follow    | a run's events after a seq, waiting up to N seconds; its answer at end |
| agi_cancel    | cancel a run                                                           |

Runs started here belong to the exposed agent: a new session of it, or an existing session of
the same agent (so exposing the read-only ``plan`` agent never lets a client run ``build``).
They execute in this process (the ``agi mcp`` process, or the Jupyter server) and are stored
like every run. Reading tools change nothing and are not recorded.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agi_jupyter.errors import UsageError
from agi_jupyter.records import JSON, Message, part_to_dict

if TYPE_CHECKING:
    from agi_jupyter.app import Agi

MAX_TEXT = 4000
MAX_WAIT = 60.0


@dataclass(frozen=True)
class ProjectTool:
    name: str
    description: str
    schema: JSON
    read_only: bool
    handler: Callable[[Agi, str, dict[str, Any]], Awaitable[JSON]]


def _schema(properties: JSON, required: tuple[str, ...] = ()) -> JSON:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


_ID = {"type": "string"}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}


async def sessions(agi: Agi, agent: str, args: dict[str, Any]) -> JSON:
    page = await asyncio.to_thread(
        agi.sessions, limit=_int(args, "limit", 20), cursor=args.get("cursor")
    )
    items = [
        {
            "id": s.id,
            "title": s.title,
            "agent": s.agent,
            "sdk": s.sdk,
            "model": f"{s.provider}:{s.model}" if s.provider else s.model,
            "messages": s.message_count,
            "updated_at": s.updated_at,
        }
        for s in page.items
    ]
    return {"sessions": items, "next_cursor": page.next_cursor}


async def history(agi: Agi, agent: str, args: dict[str, Any]) -> JSON:
    view = args.get("view", "simple")
    # the simple view returns roles and texts only: its parts need not be decoded
    messages = await asyncio.to_thread(
        agi.history, str(args["session_id"]), view=view, lazy=view != "full"
    )
    return {"messages": [_message(m, full=view == "full") for m in messages]}


async def runs(agi: Agi, agent: str, args: dict[str, Any]) -> JSON:
    page = await asyncio.to_thread(
        agi.runs, args.get("session_id"), limit=_int(args, "limit", 20), cursor=args.get("cursor")
    )
    items = [
        {
            "id": r.id,
            "session_id": r.session_id,
            "status": r.status,
            "model": f"{r.provider}:{r.model}" if r.provider else r.model,
            "error": r.error,
            "created_at": r.created_at,
        }
        for r in page.items
    ]
    return {"runs": items, "next_cursor": page.next_cursor}


async def start_run(agi: Agi, agent: str, args: dict[str, Any]) -> JSON:
    prompt = str(args.get("prompt") or "")
    session_id = args.get("session_id")

    def start() -> JSON:
        if session_id:
            session = agi.session(str(session_id))
            if session.agent != agent:
                raise UsageError(
                    f"session {session.id} belongs to agent {session.agent!r}; runs started "
                    f"over MCP use agent {agent!r} (leave session_id out for a new session)"
                )
        else:
            session = agi.new_session(agent=agent, model=args.get("model"), title=prompt[:60])
        run = agi.submit(
            prompt, session=session.id, model=args.get("model"), execution_mode="background"
        )
        return {"run_id": run.id, "session_id": session.id, "status": run.status}

    return await asyncio.to_thread(start)


async def follow(agi: Agi, agent: str, args: dict[str, Any]) -> JSON:
    run_id = str(args["run_id"])
    after = _int(args, "after_seq", 0, maximum=None, minimum=0)
    wait = min(float(args.get("wait_seconds", 20)), MAX_WAIT)
    events: list[JSON] = []
    next_seq = after
    deadline = time.monotonic() + max(wait, 0.0)
    stream = await asyncio.to_thread(agi.afollow, run_id, after_seq=after)  # RUN_NOT_FOUND first
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                async with asyncio.timeout(remaining):
                    event = await anext(stream)
            except (TimeoutError, StopAsyncIteration):
                break
            next_seq = max(next_seq, int(event.get("seq") or 0))
            if not str(event.get("type", "")).endswith(".delta"):
                events.append(_event(event))
            if event.get("type") == "run.final":
                break
    finally:
        await stream.aclose()
    run = await asyncio.to_thread(agi.run, run_id)
    answer = (await asyncio.to_thread(agi.result, run_id)).text if run.is_terminal else None
    return {
        "run_id": run_id,
        "status": run.status,
        "done": run.is_terminal,
        "next_seq": next_seq,
        "events": events,
        "answer": answer,
    }


async def cancel(agi: Agi, agent: str, args: dict[str, Any]) -> JSON:
    run = await asyncio.to_thread(agi.cancel, str(args["run_id"]))
    return {"run_id": run.id, "status": run.status}


TOOLS: tuple[ProjectTool, ...] = (
    ProjectTool(
        "agi_sessions",
        "List the project's agent sessions, newest first.",
        _schema({"limit": _LIMIT, "cursor": _ID}),
        True,
        sessions,
    ),
    ProjectTool(
        "agi_history",
        "Read a session's messages: 'simple' (user and assistant text) or 'full' "
        "(with tool calls, tool results and reasoning).",
        _schema({"session_id": _ID, "view": {"enum": ["simple", "full"]}}, ("session_id",)),
        True,
        history,
    ),
    ProjectTool(
        "agi_runs",
        "List runs (of one session, or of the whole project), newest first.",
        _schema({"session_id": _ID, "limit": _LIMIT, "cursor": _ID}),
        True,
        runs,
    ),
    ProjectTool(
        "agi_start_run",
        "Start a background agent run for a prompt, in a new session (or an existing session "
        "of the same agent); returns its run_id. Follow it with agi_follow.",
        _schema({"prompt": {"type": "string"}, "session_id": _ID, "model": _ID}, ("prompt",)),
        False,
        start_run,
    ),
    ProjectTool(
        "agi_follow",
        "Wait for a run's events after after_seq (up to wait_seconds, at most 60) and return "
        "them, the run's status, the next after_seq and, once it ended, its answer.",
        _schema(
            {
                "run_id": _ID,
                "after_seq": {"type": "integer", "minimum": 0, "default": 0},
                "wait_seconds": {"type": "number", "minimum": 0, "maximum": 60, "default": 20},
            },
            ("run_id",),
        ),
        True,
        follow,
    ),
    ProjectTool(
        "agi_cancel",
        "Cancel a run.",
        _schema({"run_id": _ID}, ("run_id",)),
        False,
        cancel,
    ),
)
BY_NAME = {tool.name: tool for tool in TOOLS}


def _int(
    args: dict[str, Any], key: str, default: int, *, minimum: int = 1, maximum: int | None = 100
) -> int:
    value = args.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise UsageError(f"{key} must be an integer of at least {minimum}")
    return value if maximum is None else min(value, maximum)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " … [cut]"


def _message(message: Message, *, full: bool) -> JSON:
    data: JSON = {"id": message.id, "role": message.role, "text": _cut(message.text)}
    if full:
        data["parts"] = [part_to_dict(p) for p in message.parts]
        data["meta"] = message.meta
    return data


def _event(event: dict[str, Any]) -> JSON:
    """An event without the bulk: long texts cut, whole messages and runs summarised."""
    kept: JSON = {}
    for key, value in event.items():
        if key == "message" and isinstance(value, dict):
            kept[key] = {"role": value.get("role"), "text": _cut(str(value.get("text") or ""))}
        elif key == "run" and isinstance(value, dict):
            kept[key] = {k: value.get(k) for k in ("id", "status", "error", "usage", "cost_usd")}
        elif isinstance(value, str):
            kept[key] = _cut(value)
        else:
            kept[key] = value
    return kept
