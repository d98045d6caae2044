"""The ``acp`` adapter: sessions run by any agent that speaks the Agent Client Protocol
(Gemini CLI, Goose, OpenCode, ...), through the ``agent-client-protocol`` library.

A run sends its prompt to the session's agent process as one ACP prompt turn; the agent's
session updates become canonical history and live events (``mapping``); its file and terminal
requests go through our gating and confinement, and its permission requests are decided by the
agent's gating (``client``, ``permissions``). The process is kept for the session's next runs
(up to ``MAX_LIVE`` processes per runtime, the least recently used closed first) and closed with
the runtime; its ACP session id is saved in the session's adapter state, so a later process
loads it when the agent can (``session/load``).

Capabilities, as the protocol allows: a turn can be cancelled cleanly (``session/cancel``: the
prompt returns ``cancelled``), so ``interrupt``; a prompt is one request, so no message joins a
running turn; tool calls, results and thoughts are reported (``tool_events``, ``full_history``)
when the agent sends them. This module imports no ACP library (``live`` does, on first run).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import shutil
from collections import OrderedDict
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from agi_jupyter.errors import ProviderDisconnected, ProviderError, SdkNotAvailable
from agi_jupyter.kinds import SdkName
from agi_jupyter.sdk.acp.settings import HINT, AcpAgents
from agi_jupyter.sdk.base import DisplayModel, SdkAdapter, SdkCapabilities, SdkRunParams

if TYPE_CHECKING:
    from agi_jupyter.records import Session
    from agi_jupyter.runtime.agent_loop import AttemptResult
    from agi_jupyter.sdk.acp.live import AcpLive

log = logging.getLogger(__name__)

MODULE = "acp"
MAX_LIVE = 4
CANCEL_GRACE = 5.0  # how long a cancelled turn may take to return before the process is closed


class AcpAdapter(SdkAdapter):
    id = SdkName.ACP
    display_name = "Agent Client Protocol (any ACP agent)"
    capabilities = SdkCapabilities(
        queue_while_streaming=False, interrupt=True, tool_events=True, full_history=True
    )
    install_hint = HINT

    def __init__(self, agents: AcpAgents | None = None) -> None:
        self.agents = agents or AcpAgents(None, {})
        self._live: OrderedDict[str, AcpLive] = OrderedDict()  # by our session id

    def resolve_display_model(self, session: Session) -> DisplayModel:
        state = (session.metadata.get("sdk_state") or {}).get(self.id) or {}
        return DisplayModel("acp", state.get("agent") or session.agent)

    def check_available(self) -> None:
        """Available when the library is installed and an ACP agent command is configured and
        found (the session's own agent is checked when its run starts)."""
        if importlib.util.find_spec(MODULE) is None:
            raise SdkNotAvailable("the agent-client-protocol package is not installed")
        launches = self.agents.all()
        if not launches:
            raise SdkNotAvailable(f"no ACP agent is configured: {HINT}")
        if not any(shutil.which(launch.command) for launch in launches):
            commands = ", ".join(sorted({launch.command for launch in launches}))
            raise SdkNotAvailable(f"no configured ACP agent command is on the PATH ({commands})")

    async def run(self, params: SdkRunParams) -> AttemptResult:
        from agi_jupyter.sdk.acp.client import SETTLE_TIMEOUT, AcpTurn, refusal
        from agi_jupyter.sdk.acp.mapping import UpdateMapper
        from agi_jupyter.sdk.acp.permissions import GatingDecider
        from agi_jupyter.sdk.acp.terminals import Terminals

        live = await self._live_for(params)
        terminals = Terminals(params.project, params.config.tool_timeout)
        mapper = UpdateMapper(live.agent_name, partial(_terminal_text, terminals))
        turn = AcpTurn(params, mapper, terminals, GatingDecider(partial(refusal, params)))
        mapper.written = turn.wrote
        mapper.model = live.model
        live.client.turn = turn
        live.aborted = False
        params.on_handle(live)
        try:
            response = await self._prompt(live, params)
            await live.client.arrivals.settled(SETTLE_TIMEOUT)
        finally:
            live.client.turn = None
            await terminals.close_all()
        same_session = params.state.get("session_id") == live.session_id
        base = float(params.state.get("cost_usd") or 0.0) if same_session else 0.0
        cost = None if mapper.cost is None else max(mapper.cost - base, 0.0)
        for event in mapper.finish(response, cost):
            await params.on_history(event)
        await params.save_state(
            {
                "session_id": live.session_id,
                "agent": live.agent_name,
                "cost_usd": mapper.cost if mapper.cost is not None else base,
                "model": mapper.model,
            }
        )
        result = await params.result()
        if response.stop_reason == "max_turn_requests":
            return replace(result, max_iterations_reached=True)
        return result

    async def _prompt(self, live: AcpLive, params: SdkRunParams) -> Any:
        from acp import RequestError

        try:
            return await live.prompt(params.prompt)
        except asyncio.CancelledError:
            await self._stop_turn(params.session.id, live)
            raise
        except RequestError as e:
            raise ProviderError(f"{live.agent_name}: {e}") from None
        except (ConnectionError, OSError, EOFError) as e:
            tail = live.stderr_tail()  # before the drop closes its stderr file
            await self._drop(params.session.id)
            note = f"; its stderr ends with:\n{tail}" if tail else ""
            message = f"the ACP agent {live.agent_name} went away ({e}){note}"
            raise ProviderDisconnected(message) from None

    async def _live_for(self, params: SdkRunParams) -> AcpLive:
        from agi_jupyter.sdk.acp.live import AcpLive

        launch = self.agents.for_agent(params.session.agent)
        session_id = params.session.id
        live = self._live.get(session_id)
        if live is not None and (not live.alive or live.launch != launch):
            await self._drop(session_id)
            live = None
        if live is None:
            await self._evict()
            live = await AcpLive.start(launch, params.project, params.state.get("session_id"))
            self._live[session_id] = live
        self._live.move_to_end(session_id)
        return live

    async def _stop_turn(self, session_id: str, live: AcpLive) -> None:
        """A cancelled run: ask the agent to stop; a process that does not is closed."""
        await live.cancel()
        if live.alive:
            return
        await self._drop(session_id)

    async def _evict(self) -> None:
        while len(self._live) >= MAX_LIVE:
            oldest = next(iter(self._live))
            await self._drop(oldest)

    async def _drop(self, session_id: str) -> None:
        live = self._live.pop(session_id, None)
        if live is not None:
            await live.close()

    async def abort(self, handle: object) -> None:
        from agi_jupyter.sdk.acp.live import AcpLive

        if not isinstance(handle, AcpLive):
            raise TypeError(f"not an ACP run handle: {handle!r}")
        handle.aborted = True
        await handle.cancel()

    async def aclose(self) -> None:
        for session_id in list(self._live):
            with contextlib.suppress(Exception):
                await self._drop(session_id)


def _terminal_text(terminals: Any, terminal_id: str) -> str:
    try:
        state = terminals.output(terminal_id)
    except Exception:
        return f"(terminal {terminal_id} was released)"
    code = f"\n[exit code {state.exit_code}]" if state.exit_code is not None else ""
    return f"{state.output}{code}"
