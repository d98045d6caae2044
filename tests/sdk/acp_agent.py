"""A real ACP agent process, written with the ``agent-client-protocol`` library, for the tests.

What a prompt makes it do (by words in the prompt):

- always: a thought, a read of ``notes.txt`` through the client (``fs/read_text_file``) shown
  as a ``read`` tool call, a permission request for an edit, then (if allowed) a write of
  ``answer.txt`` (``fs/write_text_file``) shown as an ``edit`` tool call with a diff, a
  terminal running ``echo`` (``terminal/*``) shown as an ``execute`` tool call, the answer
  ``Turn N: <first line of notes.txt>`` and the session's cost so far;
- ``outside``: also tries to read ``/etc/hostname`` and says what the client answered;
- ``env``: says its ``ACP_TEST_TOKEN`` and ``OPENAI_API_KEY`` variables;
- ``slow``: answers a little, then waits for ``session/cancel`` and returns ``cancelled``;
- ``paced``: streams its answer as 60 chunks ``w0 `` .. ``w59 ``, 30 ms apart, before the
  ``Turn N`` line (a model's pace);
- ``crash``: exits in the middle of the turn;
- ``twice``: announces an ``execute`` tool call twice (as claude-code-acp does), then asks
  permission for it without a ``kind`` and says whether it was allowed;
- ``child``: starts a ``sleep`` child (as an npm wrapper starts its native binary) and says its
  pid;
- ``nousage``: answers without usage and without a cost.

With ``ACP_TEST_AUTH`` set it advertises two auth methods and refuses ``session/new`` unless
``authenticate`` chose ``test-api-key`` and ``TEST_API_KEY`` is set. ``session/new`` reports
the model ``test-model-1`` as a ``model`` config option.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    start_edit_tool_call,
    start_read_tool_call,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    tool_terminal_ref,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    AuthMethodAgent,
    Cost,
    Implementation,
    LoadSessionResponse,
    PermissionOption,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    ToolCallUpdate,
    Usage,
    UsageUpdate,
)

AUTH = bool(os.environ.get("ACP_TEST_AUTH"))


class TestAgent(Agent):
    def __init__(self) -> None:
        self.turns: dict[str, int] = {}
        self.cancelled: dict[str, asyncio.Event] = {}
        self.conn: Client
        self.authenticated: str | None = None
        self.children: list[subprocess.Popen[bytes]] = []

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=True),
            agent_info=Implementation(name="test-acp-agent", version="1.0"),
            auth_methods=[
                AuthMethodAgent(id="agent-login", name="Log in"),
                AuthMethodAgent(id="test-api-key", name="TEST_API_KEY"),
            ]
            if AUTH
            else [],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        if method_id == "test-api-key" and not os.environ.get("TEST_API_KEY"):
            raise RequestError(-32000, "TEST_API_KEY is not set")
        self.authenticated = method_id
        return AuthenticateResponse()

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        if AUTH and self.authenticated != "test-api-key":
            raise RequestError.auth_required()
        session_id = f"acp-session-{len(self.turns) + 1}-{os.getpid()}"
        self.turns[session_id] = 0
        model = SessionConfigOptionSelect(
            id="model",
            name="Model",
            category="model",
            type="select",
            current_value="test-model-1",
            options=[SessionConfigSelectOption(value="test-model-1", name="Test model 1")],
        )
        return NewSessionResponse(session_id=session_id, config_options=[model])

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        if session_id not in self.turns:
            raise RequestError.resource_not_found(session_id)
        return LoadSessionResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = " ".join(getattr(block, "text", "") for block in prompt)
        self.turns[session_id] = self.turns.get(session_id, 0) + 1
        say = self._sayer(session_id)
        if "slow" in text:
            return await self._slow(session_id, say)
        await self.conn.session_update(session_id, update_agent_thought_text("thinking "))
        await self.conn.session_update(session_id, update_agent_thought_text("about it"))
        notes = (await self.conn.read_text_file(session_id=session_id, path="notes.txt")).content
        first = notes.splitlines()[0] if notes else ""
        await self._read_call(session_id, first)
        if "crash" in text:
            await say("about to crash")
            os._exit(4)
        if "twice" in text:
            await self._twice(session_id, say)
        if "child" in text:
            child = subprocess.Popen(["sleep", "600"])  # noqa: ASYNC220 - started, not waited
            self.children.append(child)
            await say(f"child={child.pid} ")
        if "outside" in text:
            await say(await self._read_outside(session_id))
        if "env" in text:
            token = os.environ.get("ACP_TEST_TOKEN", "<unset>")
            await say(f"token={token} openai={os.environ.get('OPENAI_API_KEY', '<unset>')} ")
        await self._edit(session_id, first)
        await self._terminal(session_id)
        if "paced" in text:
            for i in range(60):
                await say(f"w{i} ")
                await asyncio.sleep(0.03)
        await say(f"Turn {self.turns[session_id]}: {first}")
        if "nousage" in text:
            return PromptResponse(stop_reason="end_turn")
        cost = Cost(amount=0.01 * self.turns[session_id], currency="USD")
        await self.conn.session_update(
            session_id, UsageUpdate(used=100, size=1000, cost=cost, session_update="usage_update")
        )
        usage = Usage(input_tokens=10, output_tokens=5, total_tokens=15)
        return PromptResponse(stop_reason="end_turn", usage=usage)

    async def _twice(self, session_id: str, say: Any) -> None:
        """claude-code-acp's way: ``tool_call`` twice for one id, permission without kind."""
        first = start_tool_call("bash-1", "Terminal", kind="execute", status="pending")
        await self.conn.session_update(session_id, first)
        again = start_tool_call(
            "bash-1", "`ls`", kind="execute", status="pending", raw_input={"command": "ls"}
        )
        await self.conn.session_update(session_id, again)
        options = [
            PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ]
        answer = await self.conn.request_permission(
            session_id=session_id, tool_call=ToolCallUpdate(tool_call_id="bash-1"), options=options
        )
        allowed = getattr(answer.outcome, "option_id", None) == "yes"
        await say(f"bash {'allowed' if allowed else 'rejected'} ")
        done = update_tool_call(
            "bash-1",
            status="completed" if allowed else "failed",
            content=[tool_content(text_block("listed" if allowed else "rejected"))],
        )
        await self.conn.session_update(session_id, done)

    def _sayer(self, session_id: str) -> Any:
        async def say(message: str) -> None:
            await self.conn.session_update(session_id, update_agent_message_text(message))

        return say

    async def _read_call(self, session_id: str, first: str) -> None:
        start = start_read_tool_call("read-1", "Read notes.txt", "notes.txt")
        await self.conn.session_update(session_id, start)
        done = update_tool_call(
            "read-1", status="completed", content=[tool_content(text_block(first))]
        )
        await self.conn.session_update(session_id, done)

    async def _read_outside(self, session_id: str) -> str:
        try:
            await self.conn.read_text_file(session_id=session_id, path="/etc/hostname")
        except RequestError as e:
            return f"outside read refused: {e}"
        return "outside read allowed"

    async def _edit(self, session_id: str, first: str) -> None:
        call = ToolCallUpdate(tool_call_id="edit-1", title="Write answer.txt", kind="edit")
        options = [
            PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ]
        answer = await self.conn.request_permission(
            session_id=session_id, tool_call=call, options=options
        )
        allowed = getattr(answer.outcome, "option_id", None) == "yes"
        await self.conn.session_update(
            session_id, start_edit_tool_call("edit-1", "Write answer.txt", "answer.txt", first)
        )
        if not allowed:
            failed = update_tool_call(
                "edit-1", status="failed", content=[tool_content(text_block("permission denied"))]
            )
            await self.conn.session_update(session_id, failed)
            return
        await self.conn.write_text_file(
            session_id=session_id, path="answer.txt", content=f"{first}\n"
        )
        diff = tool_diff_content("answer.txt", f"{first}\n", None)
        await self.conn.session_update(
            session_id, update_tool_call("edit-1", status="completed", content=[diff])
        )

    async def _terminal(self, session_id: str) -> None:
        try:
            created = await self.conn.create_terminal(
                session_id=session_id, command="echo", args=["from", "the", "terminal"]
            )
        except RequestError as e:
            await self.conn.session_update(
                session_id, update_agent_message_text(f"terminal refused: {e} ")
            )
            return
        terminal_id = created.terminal_id
        await self.conn.session_update(
            session_id,
            start_tool_call(
                "term-1", "Run echo", kind="execute", content=[tool_terminal_ref(terminal_id)]
            ),
        )
        await self.conn.wait_for_terminal_exit(session_id=session_id, terminal_id=terminal_id)
        await self.conn.session_update(
            session_id,
            update_tool_call(
                "term-1", status="completed", content=[tool_terminal_ref(terminal_id)]
            ),
        )
        await self.conn.release_terminal(session_id=session_id, terminal_id=terminal_id)

    async def _slow(self, session_id: str, say: Any) -> PromptResponse:
        event = self.cancelled.setdefault(session_id, asyncio.Event())
        event.clear()
        await say("working slowly")
        try:
            await asyncio.wait_for(event.wait(), 60)
        except TimeoutError:
            return PromptResponse(stop_reason="end_turn")
        return PromptResponse(stop_reason="cancelled")


if __name__ == "__main__":
    print("test ACP agent starting", file=sys.stderr, flush=True)
    asyncio.run(run_agent(TestAgent()))
