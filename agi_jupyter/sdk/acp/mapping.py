"""ACP session updates -> canonical history events.

| ACP ``session/update``                     | history                                        |
|--------------------------------------------|------------------------------------------------|
| ``agent_message_chunk`` (text)             | ``AssistantText`` (a delta)                    |
| ``agent_thought_chunk`` (text)             | one ``AssistantThinking`` per run of chunks    |
| ``tool_call``                              | ``ToolCallEvent``: name = its kind (``read``,  |
|                                            | ``edit``, ``execute``...), arguments = title + |
|                                            | raw input; again for the same id: an update    |
| ``tool_call_update`` completed / failed    | ``ToolResultEvent``: text content, terminal    |
|                                            | output, raw output; diffs -> ``file_diff``     |
|                                            | (unless our ``fs.write`` wrote it: its diff)   |
| ``usage_update``                           | the session's cost so far (for the run's cost) |
| ``config_option_update`` (category model)  | the model recorded for the turn                |
| a permission refused for a call never      | ``ToolCallEvent`` (kind and title from the     |
| announced (codex-acp asks first)           | request), then a ``denied`` ``ToolResultEvent``|
| prompt response (stop reason, usage)       | ``TurnMeta`` then ``TurnDone`` (no usage:      |
|                                            | tokens unknown, never 0; gemini-cli's          |
|                                            | ``_meta.quota``: its tokens and model)         |
| plans, modes, commands, user echoes        | nothing                                        |

Non-text content (images, resources) in messages becomes a short bracketed note. Pure: the
terminal outputs a result refers to are read through ``terminal_output``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ConfigOptionUpdate,
    ContentToolCallContent,
    FileEditToolCallContent,
    PromptResponse,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
)

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
from agi_jupyter.tools.diffs import FileChange, file_diff_draft

PROVIDER = "acp"
TOOL_TYPES = {"execute": "shell", "edit": "file_change", "delete": "file_change"}


@dataclass
class _Call:
    name: str
    title: str
    kind: str | None = None
    content: list[Any] = field(default_factory=list)
    raw_output: Any = None
    done: bool = False


class UpdateMapper:
    """Maps one run's session updates in order (see the module docstring)."""

    def __init__(
        self,
        agent_name: str,
        terminal_output: Callable[[str], str],
        written: Callable[[str], bool] = lambda path: False,
    ) -> None:
        self.agent_name = agent_name
        self.terminal_output = terminal_output
        self.written = written  # files written through our fs.write (which stored their diff)
        self.cost: float | None = None  # the session's cost so far, as the agent reports it
        self.model: str | None = None  # the model the agent says it uses
        self._thought: list[str] = []
        self._calls: dict[str, _Call] = {}

    def __call__(self, update: Any) -> list[HistoryEvent]:
        if isinstance(update, AgentThoughtChunk):
            self._thought.append(_text(update.content))
            return []
        events = self._flush_thought()
        if isinstance(update, AgentMessageChunk):
            text = _text(update.content)
            if text:
                events.append(AssistantText(text=text))
        elif isinstance(update, ToolCallStart):
            events.extend(self._start(update))
        elif isinstance(update, ToolCallProgress):
            events.extend(self._progress(update))
        elif isinstance(update, UsageUpdate) and update.cost and update.cost.currency == "USD":
            self.cost = float(update.cost.amount)
        elif isinstance(update, ConfigOptionUpdate):
            self.model = reported_model(update) or self.model
        return events

    def seen(self, tool_call_id: str) -> tuple[str | None, str | None]:
        """The kind and title a tool call was announced with (None, None: never announced)."""
        call = self._calls.get(tool_call_id)
        return (call.kind, call.title) if call is not None else (None, None)

    def refused(self, request: ToolCallUpdate, reason: str) -> list[HistoryEvent]:
        """A call the agent asked permission for, refused: when it was never announced
        (codex-acp asks before it announces, and a refused call is never announced), it is
        recorded as a call of the turn, its kind, title and input from the request, ``denied``
        with ``reason``; later updates for its id change nothing. An announced call is left
        to its own updates."""
        if request.tool_call_id in self._calls:
            return []
        events = [*self._flush_thought(), *self._announce(request)]
        call = self._calls[request.tool_call_id]
        call.done = True
        output = f"Refused; it was not run: {reason}"
        events.append(
            ToolResultEvent(
                id=request.tool_call_id, name=call.name, output=output, is_error=True, denied=True
            )
        )
        return events

    def finish(self, response: PromptResponse, cost_usd: float | None) -> list[HistoryEvent]:
        """The end of the turn: unanswered calls get a result, then meta and ``TurnDone``."""
        events = self._flush_thought()
        for call_id, call in self._calls.items():
            if not call.done:
                call.done = True
                note = f"(no result: the turn ended, {response.stop_reason})"
                events.append(ToolResultEvent(id=call_id, name=call.name, output=note))
        usage = response.usage
        tokens = (usage.input_tokens, usage.output_tokens) if usage else None
        quota = _quota(response)
        if quota is not None:  # gemini-cli's own report (``_meta.quota``)
            tokens = tokens or quota[0]
            self.model = self.model or quota[1]
        events.append(
            TurnMeta(
                provider=PROVIDER,
                model=self.model or self.agent_name,
                input_tokens=tokens[0] if tokens else None,  # unreported: unknown, not 0
                output_tokens=tokens[1] if tokens else None,
                cost_usd=cost_usd,
                stop_reason=response.stop_reason,
            )
        )
        events.append(TurnDone())
        return events

    # --- tool calls --------------------------------------------------------------------------

    def _start(self, update: ToolCallStart) -> list[HistoryEvent]:
        if update.tool_call_id in self._calls:  # announced again (claude-code-acp): an update
            again = ToolCallProgress(
                tool_call_id=update.tool_call_id,
                title=update.title,
                kind=update.kind,
                status=update.status,
                content=update.content,
                raw_input=update.raw_input,
                raw_output=update.raw_output,
                session_update="tool_call_update",
            )
            return self._progress(again)
        name = update.kind or "other"
        call = _Call(name=name, title=update.title, kind=update.kind)
        self._calls[update.tool_call_id] = call
        arguments: JSON = {"title": update.title}
        if isinstance(update.raw_input, dict):
            arguments.update(update.raw_input)
        elif update.raw_input is not None:
            arguments["input"] = update.raw_input
        events: list[HistoryEvent] = [
            ToolCallEvent(
                id=update.tool_call_id,
                name=name,
                arguments=arguments,
                tool_type=TOOL_TYPES.get(name, "function"),
            )
        ]
        call.content = list(update.content or [])
        call.raw_output = update.raw_output
        if update.status in ("completed", "failed"):
            events.extend(self._result(update.tool_call_id, call, failed=update.status == "failed"))
        return events

    def _progress(self, update: ToolCallProgress) -> list[HistoryEvent]:
        call = self._calls.get(update.tool_call_id)
        events: list[HistoryEvent] = []
        if call is None:  # an update for a call never announced: announce it first
            events.extend(self._announce(update))
            call = self._calls[update.tool_call_id]
        call.kind = update.kind or call.kind
        call.title = update.title or call.title
        if update.content is not None:
            call.content = list(update.content)
        if update.raw_output is not None:
            call.raw_output = update.raw_output
        if update.status in ("completed", "failed") and not call.done:
            events.extend(self._result(update.tool_call_id, call, failed=update.status == "failed"))
        return events

    def _announce(self, update: ToolCallProgress | ToolCallUpdate) -> list[HistoryEvent]:
        """The start of a call known only from an update or a permission request."""
        start = ToolCallStart(
            tool_call_id=update.tool_call_id,
            title=update.title or update.kind or "tool",
            kind=update.kind,
            raw_input=update.raw_input,
            session_update="tool_call",
        )
        return self._start(start)

    def _result(self, call_id: str, call: _Call, *, failed: bool) -> list[HistoryEvent]:
        call.done = True
        texts: list[str] = []
        changes: list[FileChange] = []
        for item in call.content:
            if isinstance(item, ContentToolCallContent):
                texts.append(_text(item.content))
            elif isinstance(item, TerminalToolCallContent):
                texts.append(self.terminal_output(item.terminal_id))
            elif isinstance(item, FileEditToolCallContent):
                texts.append(f"edited {item.path}")
                if self.written(item.path):
                    continue  # its diff artifact is the one fs.write stored
                change = FileChange(
                    path=item.path,
                    op="add" if item.old_text is None else "update",
                    old=item.old_text,
                    new=item.new_text,
                )
                changes.append(change)
        if not texts and call.raw_output is not None:
            raw = call.raw_output
            texts.append(raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False))
        output = "\n".join(t for t in texts if t) or ("failed" if failed else "done")
        artifact: ArtifactDraft | None = (
            file_diff_draft(changes, input_format="acp") if changes else None
        )
        return [
            ToolResultEvent(
                id=call_id, name=call.name, output=output, is_error=failed, artifact=artifact
            )
        ]

    def _flush_thought(self) -> list[HistoryEvent]:
        if not self._thought:
            return []
        text, self._thought = "".join(self._thought), []
        return [AssistantThinking(text=text)] if text else []


def reported_model(response: Any) -> str | None:
    """The model a session (new, loaded, or its options updated) says it uses: its ``model``
    config option's value."""
    for option in getattr(response, "config_options", None) or []:
        inner = getattr(option, "root", option)
        if getattr(inner, "category", None) == "model" and inner.current_value:
            return str(inner.current_value)
    return None


def _quota(response: PromptResponse) -> tuple[tuple[int, int] | None, str | None] | None:
    """gemini-cli reports a turn's usage in the response's ``_meta``, not in ``usage``:
    ``{"quota": {"token_count": {"input_tokens", "output_tokens"}, "model_usage": [{"model",
    ...}]}}``: (tokens or None, the last model named or None); None without it."""
    quota = (response.field_meta or {}).get("quota")
    if not isinstance(quota, dict):
        return None
    count = quota.get("token_count")
    tokens: tuple[int, int] | None = None
    if isinstance(count, dict):
        given, made = count.get("input_tokens"), count.get("output_tokens")
        if isinstance(given, int) and isinstance(made, int):
            tokens = (given, made)
    models = [m.get("model") for m in quota.get("model_usage") or [] if isinstance(m, dict)]
    named = [str(m) for m in models if m]
    return tokens, (named[-1] if named else None)


def _text(content: Any) -> str:
    if isinstance(content, TextContentBlock):
        return content.text
    kind = getattr(content, "type", "content")
    uri = getattr(content, "uri", None)
    return f"[{kind}{' ' + uri if uri else ''}]"
