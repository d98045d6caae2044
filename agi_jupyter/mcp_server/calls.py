"""External agents' calls of our tools, recorded in the store like any run.

Each MCP client (by the name it gives, per server process) gets one session (agent: the agent
the MCP server exposes, ``sdk: external``, ``metadata.external``: protocol and client name);
its runs have ``provider: mcp`` and ``model``: the client's name. Each call becomes one run of
it, executed by the ``external`` SDK adapter (``sdk/external.py``), which runs the tool with the
agent's gating, confinement, timeouts and redaction. The caller waits for the run and gets the
recorded outcome, so what it sees is exactly what the store keeps. Runs of one session execute
one at a time.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agi_jupyter.records import JSON, Run
from agi_jupyter.run_state import ExternalCall

if TYPE_CHECKING:
    from agi_jupyter.app import Agi


@dataclass
class CallRecord:
    """What an external call did: the run and session recording it, and the tool's outcome."""

    run_id: str
    session_id: str
    ok: bool
    output: str
    result: JSON


class ExternalCalls:
    """Records the calls of the MCP clients of one server (one exposed agent) of one project."""

    def __init__(self, agi: Agi, agent: str) -> None:
        self.agi = agi
        self.agent = agent
        self._sessions: dict[str, str] = {}  # client name -> session id
        self._lock = asyncio.Lock()

    async def call(self, client: str, name: str, arguments: dict[str, Any]) -> CallRecord:
        session_id = await self._session(client)
        call = ExternalCall("mcp_" + uuid.uuid4().hex[:24], name, arguments)
        done = await self.agi.acall_tool(session_id, client=client, call=call)
        return await asyncio.to_thread(self._record, done, call.id)

    async def _session(self, client: str) -> str:
        async with self._lock:
            known = self._sessions.get(client)
            if known is None:
                session = await asyncio.to_thread(
                    self.agi.external_session, self.agent, client, protocol="mcp"
                )
                known = self._sessions[client] = session.id
            return known

    def _record(self, run: Run, call_id: str) -> CallRecord:
        calls = [c for c in self.agi.tool_calls(run.id) if c.tool_call_id == call_id]
        if not calls or not isinstance(calls[0].result, dict):
            error = (run.error or {}).get("message") or f"the call ended {run.status}"
            return CallRecord(run.id, run.session_id, False, str(error), {})
        result = calls[0].result
        return CallRecord(
            run.id, run.session_id, bool(result.get("ok")), str(result.get("output", "")), result
        )
