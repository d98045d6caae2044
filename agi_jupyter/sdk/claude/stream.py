"""One run's reading of the CLI's message stream: history, tool ids, queued user messages,
the saved session state, and when the run is over.

A run answers its prompt and every message queued into it while it streams
(``queue_message``). The CLI takes a queued message either into the running turn (next to a
tool result) or as a turn of its own after the current ``ResultMessage``; either way it reports
the message's uuid (``user_message_uuids``) when it starts on it, which is when the message
becomes a ``UserInput`` in history, so the stored order is the order the model saw. The run is
over at the first ``ResultMessage`` after which no queued message is left waiting.

Nothing here talks to the CLI: ``client.py`` feeds the messages in, so the transcript tests
drive this class with recorded messages.
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass

from claude_agent_sdk import AssistantMessage, ResultMessage

from agi_jupyter.records import JSON
from agi_jupyter.sdk.base import (
    SdkRunParams,
    ToolCallEvent,
    ToolResultEvent,
    UserInput,
)
from agi_jupyter.sdk.claude.mapping import MessageMapper, session_id_of, starts_answer, taken_uuids
from agi_jupyter.sdk.claude.tools import ToolNameMap, ToolUseIds


@dataclass
class Queued:
    uuid: str
    text: str


def new_uuid() -> str:
    return str(uuidlib.uuid4())


def user_message(text: str, message_uuid: str) -> JSON:
    """A user message for the CLI's stream-json input, with the uuid it reports back."""
    return {
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": None,
        "uuid": message_uuid,
    }


class ClaudeStream:
    """Feeds one run's SDK messages into history and tracks what the run still waits for."""

    def __init__(self, params: SdkRunParams, names: ToolNameMap, ids: ToolUseIds) -> None:
        self.params = params
        self.ids = ids
        self.session_id: str | None = params.state.get("session_id")
        base = float(params.state.get("total_cost_usd") or 0.0)
        self.mapper = MessageMapper(names, model=params.run.model, cost_base=base)
        self.waiting: list[Queued] = []  # queued messages the CLI has not started on yet
        self.result: ResultMessage | None = None  # the last ResultMessage
        self.done = False
        self.started = False  # the CLI announced its session (init)
        self._after_result = False

    # --- queueing ----------------------------------------------------------------------------

    def queue(self, text: str) -> Queued:
        """Register a message about to be sent into the running turn."""
        if self.done:
            raise RuntimeError("the run has finished its last turn")
        queued = Queued(new_uuid(), text)
        self.waiting.append(queued)
        return queued

    def unqueue(self, queued: Queued) -> None:
        """Forget a message that could not be sent."""
        if queued in self.waiting:
            self.waiting.remove(queued)

    # --- reading -----------------------------------------------------------------------------

    async def feed(self, message: object) -> bool:
        """Take one SDK message; True when the run has nothing left to wait for."""
        await self._take_started(taken_uuids(message))
        if self._after_result and self.waiting and starts_answer(message):
            # A CLI that reports no uuids: the next answer is the next message's.
            await self._start(self.waiting[0])
        session_id = session_id_of(message)
        if session_id is not None:
            self.started = True
            await self._announce_session(session_id)
        if isinstance(message, AssistantMessage):
            self._after_result = False
        mapped = self.mapper(message)
        # All of the message's calls are known before history may wait for the store: the
        # MCP handler of one of them, called meanwhile, matches among them by its arguments.
        for event in mapped.history:
            if isinstance(event, ToolCallEvent):
                self.ids.expect(event.name, event.id, event.arguments)
            elif isinstance(event, ToolResultEvent):
                self.ids.settle(event.id)
        for event in mapped.history:
            await self.params.on_history(event)
        for live in mapped.live:
            self.params.on_event(live)
        if isinstance(message, ResultMessage):
            self.result = message
            await self._save_state()
            self._after_result = True
            if not self.waiting or message.is_error:
                self.done = True
        return self.done

    async def flush_waiting(self) -> None:
        """Store queued messages the CLI never started on (the run ends without them), so the
        user's words are not lost from history."""
        for queued in list(self.waiting):
            await self._start(queued)

    async def _take_started(self, uuids: list[str]) -> None:
        known = [q.uuid for q in self.waiting]
        started = [u for u in uuids if u in known]
        if not started:
            return
        last = max(known.index(u) for u in started)
        for queued in self.waiting[: last + 1]:  # earlier ones were merged in before it
            await self._start(queued)

    async def _start(self, queued: Queued) -> None:
        self.waiting.remove(queued)
        self._after_result = False
        await self.params.on_history(UserInput(text=queued.text))

    async def _announce_session(self, session_id: str) -> None:
        if session_id != self.session_id:
            # A new Claude session (first run, or the resumed one was gone): costs restart.
            self.session_id = session_id
            self.mapper.cost_base = 0.0
            await self._save_state()

    async def _save_state(self) -> None:
        if self.session_id is None:
            return
        await self.params.save_state(
            {"session_id": self.session_id, "total_cost_usd": self.mapper.cost_base}
        )
