"""``codex exec --json`` events -> canonical history events (seed 003's Codex mapping table).

``CodexMapper.feed(line)`` takes one stdout line and returns the history events it means; it
also keeps what the adapter decides on (thread id, whether the turn completed or failed, the
last error, consecutive reconnect errors, the reported token totals). Pure: no I/O, no clock.

| codex event                              | history                                            |
|------------------------------------------|----------------------------------------------------|
| ``thread.started``                       | ``thread_id`` (saved for ``resume``)               |
| ``turn.started``                         | a new turn                                         |
| item ``agent_message`` (completed)       | ``AssistantText``                                  |
| item ``reasoning`` (completed)           | ``AssistantThinking``                              |
| item ``command_execution``               | ``shell`` call (started), its result (completed)   |
| item ``file_change``                     | ``apply_patch`` call + result with ``file_diff``   |
| item ``mcp_tool_call``                   | ``server.tool`` call + result                      |
| item ``web_search``                      | ``web_search`` call + result                       |
| item ``todo_list``                       | ``todo_list`` call (started) + result (completed)  |
| item ``error`` / top-level ``error``     | nothing; kept (``warnings`` / ``last_error``)      |
| ``turn.completed``                       | ``TurnMeta`` (usage) then ``TurnDone``             |
| ``turn.failed``                          | results for unfinished calls, ``TurnDone``         |

Unknown event and item types and lines that are not JSON objects are ignored, so a newer CLI
that adds events keeps working.

Item ids (``item_0``, ...) restart with every ``codex exec`` process, so tool call ids are
``id_prefix + item id``; the adapter makes the prefix unique per run attempt.

Token usage: ``turn.completed`` reports the *thread's* totals — a resumed thread counts the
earlier runs again — so the mapper reports the difference to ``baseline`` (the totals after the
previous run of the session), and ``totals`` for the adapter to save.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agi_jupyter.providers.base import Usage
from agi_jupyter.providers.catalog import cost_usd
from agi_jupyter.records import JSON
from agi_jupyter.sdk.base import (
    AssistantText,
    AssistantThinking,
    HistoryEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnMeta,
)
from agi_jupyter.tools.base import ArtifactDraft

RECONNECTING = "reconnecting"  # codex's "Reconnecting... waiting for network" errors
_OPS = {"add": "add", "update": "update", "delete": "delete"}
_MARKS = {"add": "A", "update": "M", "delete": "D"}


@dataclass(frozen=True)
class CodexUsage:
    """Token totals as ``turn.completed`` reports them (or the difference of two reports)."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0

    @classmethod
    def from_json(cls, data: Any) -> CodexUsage:
        data = data if isinstance(data, dict) else {}
        return cls(
            input_tokens=_int(data.get("input_tokens")),
            cached_input_tokens=_int(data.get("cached_input_tokens")),
            output_tokens=_int(data.get("output_tokens")),
            reasoning_output_tokens=_int(data.get("reasoning_output_tokens")),
        )

    def to_json(self) -> JSON:
        return {
            "input_tokens": self.input_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_output_tokens": self.reasoning_output_tokens,
        }

    def since(self, baseline: CodexUsage) -> CodexUsage:
        """This report minus ``baseline``; a report below it (a new thread) counts whole."""
        if self.input_tokens < baseline.input_tokens or self.output_tokens < baseline.output_tokens:
            return self
        return CodexUsage(
            input_tokens=self.input_tokens - baseline.input_tokens,
            cached_input_tokens=max(self.cached_input_tokens - baseline.cached_input_tokens, 0),
            output_tokens=self.output_tokens - baseline.output_tokens,
            reasoning_output_tokens=max(
                self.reasoning_output_tokens - baseline.reasoning_output_tokens, 0
            ),
        )


class CodexMapper:
    """Maps one ``codex exec --json`` process's output, line by line."""

    def __init__(
        self,
        *,
        project: Path | None = None,
        provider: str = "openai",
        model: str | None = None,
        id_prefix: str = "",
        baseline: CodexUsage | None = None,
    ) -> None:
        self.project = project
        self.provider = provider
        self.model = model
        self.id_prefix = id_prefix
        self.baseline = baseline or CodexUsage()
        self.thread_id: str | None = None
        self.completed = False  # turn.completed seen
        self.failure: str | None = None  # turn.failed's message
        self.last_error: str | None = None  # the last top-level error event
        self.warnings: list[str] = []  # error items: codex's non-fatal complaints
        self.reconnects = 0  # consecutive "Reconnecting..." errors, reset by any progress
        self.totals: CodexUsage | None = None  # the thread totals turn.completed reported
        self.usage = CodexUsage()  # this run's share of them
        self.cost_usd: float | None = None  # of ``usage`` at list price (None: model unknown)
        self.events_seen = 0  # JSON events read, unknown ones included
        self._open: dict[str, str] = {}  # codex item id -> tool name, calls without a result
        self._done: set[str] = set()  # codex item ids whose result was reported
        self.todos: dict[str, list[Any]] = {}  # todo_list item id -> its latest items
        self._text_in_message = False  # text since the last tool result (the current message)

    # --- intake ------------------------------------------------------------------------------

    def feed(self, line: str | bytes) -> list[HistoryEvent]:
        """The history events of one stdout line (none for blank or non-JSON lines)."""
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        line = line.strip()
        if not line.startswith("{"):
            return []
        try:
            event = json.loads(line)
        except ValueError:
            return []
        return self.feed_event(event) if isinstance(event, dict) else []

    def feed_event(self, event: JSON) -> list[HistoryEvent]:
        self.events_seen += 1
        kind = event.get("type")
        if kind == "error":
            return self._error(str(event.get("message") or "codex reported an error"))
        self.reconnects = 0  # anything else is progress
        if kind == "thread.started":
            self.thread_id = str(event.get("thread_id") or "") or self.thread_id
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if isinstance(item, dict):
                return self._item(kind.partition(".")[2], item)
        elif kind == "turn.completed":
            return self._turn_completed(event.get("usage"))
        elif kind == "turn.failed":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            self.failure = str(message or self.last_error or "the codex turn failed")
            return self.finish()
        return []

    def finish(self) -> list[HistoryEvent]:
        """Close the turn early (failure, cancel, timeout): every reported call gets a result,
        so the stored conversation stays valid for any provider, then ``TurnDone``."""
        events: list[HistoryEvent] = [
            ToolResultEvent(
                id=self._call_id(item_id),
                name=name,
                output="(codex stopped before this call finished)",
                is_error=True,
            )
            for item_id, name in self._open.items()
        ]
        self._open.clear()
        self._text_in_message = False
        events.append(TurnDone())
        return events

    # --- items -------------------------------------------------------------------------------

    def _item(self, phase: str, item: JSON) -> list[HistoryEvent]:
        kind = str(item.get("type") or "")
        item_id = str(item.get("id") or "")
        if kind == "agent_message":
            return self._text(item) if phase == "completed" else []
        if kind == "reasoning":
            text = str(item.get("text") or "")
            return [AssistantThinking(text=text)] if phase == "completed" and text else []
        if kind == "error":
            self.warnings.append(str(item.get("message") or ""))
            return []
        tool = _TOOLS.get(kind)
        if tool is None or not item_id or item_id in self._done:
            return []  # unknown, or a repeated completion
        if kind == "todo_list":
            self.todos[item_id] = list(item.get("items") or [])
        events: list[HistoryEvent] = []
        if item_id not in self._open:  # some items only ever arrive completed
            call_name = tool.name(item)
            self._open[item_id] = call_name
            arguments = tool.arguments(item, self)
            call_id = self._call_id(item_id)
            events.append(
                ToolCallEvent(id=call_id, name=call_name, arguments=arguments, tool_type=tool.type)
            )
        if phase == "completed":
            call_name = self._open.pop(item_id)
            self._done.add(item_id)
            events.append(tool.result(item, self, self._call_id(item_id), call_name))
            self._text_in_message = False  # the result ends the assistant message
        return events

    def _text(self, item: JSON) -> list[HistoryEvent]:
        text = str(item.get("text") or "")
        if not text:
            return []
        # Two messages in one assistant turn read as paragraphs, not as one run-on line.
        chunk = "\n\n" + text if self._text_in_message else text
        self._text_in_message = True
        return [AssistantText(text=chunk)]

    def _turn_completed(self, reported: Any) -> list[HistoryEvent]:
        self.completed = True
        self.totals = CodexUsage.from_json(reported)
        self.usage = self.totals.since(self.baseline)
        usage = Usage(
            input_tokens=self.usage.input_tokens,
            output_tokens=self.usage.output_tokens,
            cached_input_tokens=self.usage.cached_input_tokens,
        )
        # Priced here rather than by CanonicalHistory, so cached input counts at its price.
        self.cost_usd = cost_usd(self.provider, self.model or "", usage)
        meta = TurnMeta(
            provider=self.provider,
            model=self.model,
            input_tokens=self.usage.input_tokens,
            output_tokens=self.usage.output_tokens,
            cost_usd=self.cost_usd,
            stop_reason="completed",
            extra={
                "codex": {
                    "thread_id": self.thread_id,
                    "cached_input_tokens": self.usage.cached_input_tokens,
                    "reasoning_output_tokens": self.usage.reasoning_output_tokens,
                }
            },
        )
        return [meta, *self.finish()]

    def _error(self, message: str) -> list[HistoryEvent]:
        self.last_error = message
        if message.strip().lower().startswith(RECONNECTING):
            self.reconnects += 1
        return []

    def _call_id(self, item_id: str) -> str:
        return self.id_prefix + item_id

    def relative(self, path: str) -> str:
        """``path`` relative to the project when it is inside it (codex reports absolute)."""
        if self.project is None:
            return path
        try:
            return str(Path(path).relative_to(self.project))
        except ValueError:
            return path


# --- per item type: name, tool type, arguments, result ----------------------------------------


def _shell_arguments(item: JSON, _: CodexMapper) -> JSON:
    arguments: JSON = {"command": str(item.get("command") or "")}
    if item.get("cwd"):
        arguments["cwd"] = str(item["cwd"])
    return arguments


def _shell_result(item: JSON, _: CodexMapper, call_id: str, name: str) -> ToolResultEvent:
    output = str(item.get("aggregated_output") or "")
    exit_code = item.get("exit_code")
    status = str(item.get("status") or "")
    failed = status in ("failed", "declined") or (isinstance(exit_code, int) and exit_code != 0)
    return ToolResultEvent(
        id=call_id,
        name=name,
        output=output,
        is_error=failed,
        result={"exit_code": exit_code, "status": status, "output": output},
    )


def _changes(item: JSON, mapper: CodexMapper) -> list[JSON]:
    changes: list[JSON] = []
    for change in item.get("changes") or []:
        if not isinstance(change, dict):
            continue
        kind = change.get("kind")
        if isinstance(kind, dict):  # {"update": {"move_path": ...}} in some CLI versions
            kind = next(iter(kind), "update")
        changes.append(
            {"path": mapper.relative(str(change.get("path") or "")), "kind": str(kind or "update")}
        )
    return changes


def _patch_arguments(item: JSON, mapper: CodexMapper) -> JSON:
    return {"changes": _changes(item, mapper)}


def _patch_result(item: JSON, mapper: CodexMapper, call_id: str, name: str) -> ToolResultEvent:
    changes = _changes(item, mapper)
    failed = str(item.get("status") or "") == "failed"
    lines = [f"{_MARKS.get(c['kind'], '?')} {c['path']}" for c in changes]
    output = ("Failed to apply:\n" if failed else "Changed:\n") + "\n".join(lines)
    return ToolResultEvent(
        id=call_id,
        name=name,
        output=output,
        is_error=failed,
        artifact=None if failed or not changes else file_diff_of(changes),
        result={"status": item.get("status"), "changes": changes},
    )


def file_diff_of(changes: list[JSON]) -> ArtifactDraft:
    """The ``file_diff`` artifact of codex's changes.

    Codex reports which files changed and how (add/update/delete), not the lines: the patch
    holds only each file's ``---``/``+++`` header and the line counts are unknown (``None``),
    rather than invented (``tools.diffs`` makes the same artifact with real counts)."""
    files: list[JSON] = []
    patch = []
    for change in changes:
        op = _OPS.get(str(change["kind"]), "update")
        path = str(change["path"])
        old = "/dev/null" if op == "add" else f"a/{path}"
        new = "/dev/null" if op == "delete" else f"b/{path}"
        patch.append(f"--- {old}\n+++ {new}\n")
        files.append({"path": path, "op": op, "additions": None, "deletions": None})
    names = ", ".join(str(f["path"]) for f in files[:3])
    more = f" and {len(files) - 3} more" if len(files) > 3 else ""
    return ArtifactDraft(
        kind="file_diff",
        title=f"Changes to {names}{more}",
        mime="text/x-diff",
        data={
            "patch_format": "unified",
            "input_format": "codex",
            "patch": "".join(patch),
            "summary": {"files": len(files), "additions": None, "deletions": None},
            "files": files,
            "line_counts": "unknown: codex reports the changed files, not their lines",
        },
    )


def _mcp_name(item: JSON) -> str:
    return f"{item.get('server') or 'mcp'}.{item.get('tool') or 'tool'}"


def _mcp_arguments(item: JSON, _: CodexMapper) -> JSON:
    arguments = item.get("arguments")
    if isinstance(arguments, dict):
        return arguments
    return {} if arguments is None else {"arguments": arguments}


def _mcp_result(item: JSON, _: CodexMapper, call_id: str, name: str) -> ToolResultEvent:
    error = item.get("error")
    if isinstance(error, dict) and error.get("message"):
        return ToolResultEvent(id=call_id, name=name, output=str(error["message"]), is_error=True)
    raw = item.get("result")
    result: JSON = raw if isinstance(raw, dict) else {}
    texts = [
        str(block.get("text") or "")
        for block in result.get("content") or []
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    structured = result.get("structured_content")
    return ToolResultEvent(
        id=call_id,
        name=name,
        output="\n".join(texts),
        is_error=str(item.get("status") or "") == "failed",
        result={"structured_content": structured} if structured is not None else None,
    )


def _search_arguments(item: JSON, _: CodexMapper) -> JSON:
    arguments: JSON = {"query": str(item.get("query") or "")}
    if isinstance(item.get("action"), dict):
        arguments["action"] = item["action"]
    return arguments


def _search_result(item: JSON, _: CodexMapper, call_id: str, name: str) -> ToolResultEvent:
    # Codex reports the query, not what the search found (the model saw that on the wire).
    query = str(item.get("query") or "")
    return ToolResultEvent(id=call_id, name=name, output=f"searched the web for: {query}")


def _todo_arguments(item: JSON, mapper: CodexMapper) -> JSON:
    return {"items": list(item.get("items") or [])}


def _todo_result(item: JSON, mapper: CodexMapper, call_id: str, name: str) -> ToolResultEvent:
    items = mapper.todos.pop(str(item.get("id") or ""), list(item.get("items") or []))
    lines = [
        f"- [{'x' if entry.get('completed') else ' '}] {entry.get('text', '')}"
        for entry in items
        if isinstance(entry, dict)
    ]
    return ToolResultEvent(id=call_id, name=name, output="\n".join(lines), result={"items": items})


@dataclass(frozen=True)
class _ItemTool:
    """How one codex item type becomes a tool call and its result."""

    name: Callable[[JSON], str]
    type: str
    arguments: Callable[[JSON, CodexMapper], JSON]
    result: Callable[[JSON, CodexMapper, str, str], ToolResultEvent]


def _named(name: str) -> Callable[[JSON], str]:
    return lambda _item: name


_TOOLS: dict[str, _ItemTool] = {
    "command_execution": _ItemTool(_named("shell"), "shell", _shell_arguments, _shell_result),
    "file_change": _ItemTool(_named("apply_patch"), "file_change", _patch_arguments, _patch_result),
    "mcp_tool_call": _ItemTool(_mcp_name, "mcp", _mcp_arguments, _mcp_result),
    "web_search": _ItemTool(_named("web_search"), "web_search", _search_arguments, _search_result),
    "todo_list": _ItemTool(_named("todo_list"), "todo_list", _todo_arguments, _todo_result),
}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
