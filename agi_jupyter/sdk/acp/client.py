"""The client side of ACP that we implement (``acp.Client``), for one agent process.

Between prompt turns the process is idle and nothing is reported. During a turn the callbacks
act for that run (``AcpTurn``): session updates become canonical history (``mapping``); file
reads are checked by the agent's gating of ``fs.read`` and confined to the project; file writes
*are* ``fs.write`` calls through our executor (gating, confinement, atomic write, a
``file_diff`` artifact, redaction); terminals need ``shell.run`` and run confined
(``terminals``); permission requests are decided by the ``PermissionDecider``. Refusals go
back to the agent as JSON-RPC errors it can show its model.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    CreateElicitationResponse,
    CreateTerminalResponse,
    DeclineElicitationResponse,
    DeniedOutcome,
    ElicitationMode,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from agi_jupyter.errors import AgiError
from agi_jupyter.kinds import ToolTrait, Verdict
from agi_jupyter.sdk.acp.mapping import UpdateMapper
from agi_jupyter.sdk.acp.permissions import PermissionDecider, PermissionRequest
from agi_jupyter.sdk.acp.terminals import Terminals
from agi_jupyter.sdk.base import SdkRunParams
from agi_jupyter.tools.builtin_fs import read_text_file
from agi_jupyter.tools.policy import ToolPolicy
from agi_jupyter.tools.registry import is_allowed

log = logging.getLogger(__name__)

ALLOW = ("allow_once", "allow_always")
SETTLE_TIMEOUT = 5.0  # how long a request waits for the updates the agent sent before it
REJECT = ("reject_once", "reject_always")


def refusal(params: SdkRunParams, name: str) -> str | None:
    """Why the run's agent may not use ``name`` (None: it may), by the same gating as its own
    tool calls: the session's tool policy (denied; or asking, which an ACP turn cannot wait
    for), offered to it, and no writing tool for a read-only agent. ``acp.*`` names (no tools
    of ours) are matched against the agent's tool list."""
    agent = params.agent
    policy = ToolPolicy.for_session(agent, params.session, params.config)
    tool = next((t for t in params.tools if t.name == name), None)
    if tool is None:
        verdict = policy.decide(name, ToolTrait.SHELL)
    else:
        verdict = policy.decide(name, tool.trait, tool.default_verdict)
    if verdict == Verdict.DENY:
        return policy.denied_reason(name)
    if tool is not None:
        if agent.read_only and not tool.read_only:
            return f"{name} can change things, and agent {agent.name!r} may only read"
        return policy.ask_reason(name) if verdict == Verdict.ASK else None
    extra = [str(t) for t in params.session.tool_config.get("extra_tools") or []]
    if name.startswith("acp.") and is_allowed(name, [*agent.tools, *extra]) and not agent.read_only:
        return policy.ask_reason(name) if verdict == Verdict.ASK else None
    return f"{name} is not available to agent {agent.name!r}"


@dataclass
class AcpTurn:
    """One run's view of the agent's callbacks."""

    params: SdkRunParams
    mapper: UpdateMapper
    terminals: Terminals
    decider: PermissionDecider
    calls: itertools.count[int] = field(default_factory=itertools.count)
    written: set[Path] = field(default_factory=set)  # files written through fs.write

    def wrote(self, path: str) -> bool:
        return _absolute(self.params.project, path) in self.written

    def check(self, name: str) -> None:
        reason = refusal(self.params, name)
        if reason is not None:
            raise RequestError(-32001, f"permission denied: {reason}")

    def next_id(self, what: str) -> str:
        return f"acp_{what}_{self.params.run.id[-8:]}_{next(self.calls)}"


class Arrivals:
    """How many session updates arrived on the wire and how many were handled."""

    def __init__(self) -> None:
        self.received = 0
        self.handled = 0
        self._changed = asyncio.Event()

    def arrived(self) -> None:
        self.received += 1

    def done(self) -> None:
        self.handled += 1
        self._changed.set()

    async def settled(self, within: float) -> bool:
        """Wait (at most ``within`` s) until every update that arrived so far is handled."""
        target = self.received
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                while self.handled < target:
                    self._changed.clear()
                    await self._changed.wait()
        return self.handled >= target


class AgiClient:
    """Our ``acp.Client``; ``turn`` is set while a prompt runs."""

    def __init__(self) -> None:
        self.turn: AcpTurn | None = None
        self.arrivals = Arrivals()

    def _turn(self) -> AcpTurn:
        if self.turn is None:
            raise RequestError(-32002, "no prompt turn is running")
        return self.turn

    # --- updates and permissions ---------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        try:
            turn = self.turn
            if turn is None:
                return  # a session/load replay, or a late update after the turn: not this run's
            for event in turn.mapper(update):
                await turn.params.on_history(event)
        finally:
            self.arrivals.done()

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        turn = self._turn()
        # Without a kind (claude-code-acp), the kind and title the call was announced with:
        # the updates sent before this request are handled first.
        await self.arrivals.settled(SETTLE_TIMEOUT)
        kind, title = turn.mapper.seen(tool_call.tool_call_id)
        request = PermissionRequest(
            tool_call.tool_call_id,
            tool_call.title or title,
            tool_call.kind or kind,
            tool_call.raw_input,
        )
        decision = await turn.decider.decide(request)
        log.info(
            "ACP permission for %s (%s): %s, %s",
            request.title or request.tool_call_id,
            request.kind,
            "allowed" if decision.allow else "rejected",
            decision.reason,
        )
        if not decision.allow:
            for event in turn.mapper.refused(tool_call, decision.reason):
                await turn.params.on_history(event)
        return _answer(options, decision.allow)

    # --- files -------------------------------------------------------------------------------

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        turn = self._turn()
        turn.check("fs.read")
        content = await asyncio.to_thread(_read, turn.params.project, path, line, limit)
        return ReadTextFileResponse(content=content)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        turn = self._turn()
        arguments = {"path": path, "content": content}
        outcome = await turn.params.call_tool(turn.next_id("write"), "fs.write", arguments)
        if not outcome.ok:
            raise RequestError(-32001, outcome.output)
        turn.written.add(_absolute(turn.params.project, path))
        return WriteTextFileResponse()

    # --- terminals ---------------------------------------------------------------------------

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        turn = self._turn()
        turn.check("shell.run")
        variables = {v.name: v.value for v in env or []}
        try:
            terminal_id = await turn.terminals.create(
                command, list(args or []), variables, cwd, output_byte_limit
            )
        except AgiError as e:
            raise RequestError(-32001, e.message) from None
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        state = self._terminal_call(lambda t: t.output(terminal_id))
        status = TerminalExitStatus(exit_code=state.exit_code, signal=state.signal)
        return TerminalOutputResponse(
            output=state.output,
            truncated=state.truncated,
            exit_status=status if state.exited else None,
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        turn = self._turn()
        try:
            state = await turn.terminals.wait(terminal_id)
        except AgiError as e:
            raise RequestError(-32002, e.message) from None
        return WaitForTerminalExitResponse(exit_code=state.exit_code, signal=state.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        turn = self._turn()
        try:
            await turn.terminals.kill(terminal_id)
        except AgiError as e:
            raise RequestError(-32002, e.message) from None
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        await self._turn().terminals.release(terminal_id)
        return ReleaseTerminalResponse()

    def _terminal_call(self, call: Any) -> Any:
        try:
            return call(self._turn().terminals)
        except AgiError as e:
            raise RequestError(-32002, e.message) from None

    # --- the rest of the protocol ------------------------------------------------------------

    async def create_elicitation(
        self, message: str, mode: ElicitationMode, **kwargs: Any
    ) -> CreateElicitationResponse:
        """Nobody here answers an agent's questions during a run: declined."""
        return DeclineElicitationResponse(action="decline")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        """Nothing to complete: elicitations are declined."""

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications are informational; ignored."""

    def on_connect(self, conn: Any) -> None:
        """Nothing to keep: the live handle holds the connection."""


def _answer(options: list[PermissionOption], allow: bool) -> RequestPermissionResponse:
    kinds = ALLOW if allow else REJECT
    for kind in kinds:
        chosen = next((o for o in options if o.kind == kind), None)
        if chosen is not None:
            selected = AllowedOutcome(option_id=chosen.option_id, outcome="selected")
            return RequestPermissionResponse(outcome=selected)
    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


def _absolute(project: Path, path: str) -> Path:
    return (project / path).resolve()


def _read(project: Path, path: str, line: int | None, limit: int | None) -> str:
    try:
        text, _ = read_text_file(project, path)  # opened race-free inside the project
    except AgiError as e:
        raise RequestError(-32002, e.message) from None
    if line is None and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    start = max((line or 1) - 1, 0)
    end = start + limit if limit is not None else None
    return "".join(lines[start:end])
