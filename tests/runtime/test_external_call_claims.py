"""An external client's tool call (``Agi.acall_tool``, what ``agi mcp`` and the server's MCP
endpoint use) creates a queued run and drives it. A tick may claim that run first — in this
process (PostgreSQL's NOTIFY wakes the ticker the moment the run is stored) or in another —
and the call must then wait for the run to end whoever drives it, not answer "the call ended
running". The claim is made here, on purpose, between the run's creation and the call's own
``spawn``: the runtime loop of the calling ``Agi`` is held until it is made."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.records import Run
from agi_jupyter.run_state import ExternalCall
from agi_jupyter.testing import FakeLLMServer
from tests.runtime.conftest import MakeAgi
from tests.runtime.test_runs import wait_until

TEXT = "read by exactly one owner\n"


class HeldLoop:
    """Holds an ``Agi``'s runtime loop (a callback that waits) until ``release`` (at the
    latest when the test ends)."""

    def __init__(self) -> None:
        self._open = threading.Event()

    def hold(self, agi: Agi) -> None:
        held = threading.Event()

        def hold() -> None:
            held.set()
            self._open.wait(60)

        agi.loop.loop.call_soon_threadsafe(hold)
        assert held.wait(30)

    def release(self) -> None:
        self._open.set()


@pytest.fixture
def held() -> Iterator[HeldLoop]:
    loop = HeldLoop()
    yield loop
    loop.release()


@pytest.fixture
def caller(make_agi: MakeAgi, project: Path, fake_llm: FakeLLMServer) -> Agi:
    (project / "notes.txt").write_text(TEXT)
    return make_agi()


def _call_in_a_thread(agi: Agi, session_id: str) -> Future[Run]:
    """``acall_tool`` as the MCP server calls it: from its own event loop, in its thread."""
    done: Future[Run] = Future()
    call = ExternalCall("mcp_claimed_call", "fs.read", {"path": "notes.txt"})

    def main() -> None:
        try:
            done.set_result(asyncio.run(agi.acall_tool(session_id, client="probe", call=call)))
        except BaseException as error:  # (handed to the test)
            done.set_exception(error)

    threading.Thread(target=main, daemon=True).start()
    return done


def _the_queued_run(agi: Agi, session_id: str) -> Run:
    runs: list[Run] = []

    def stored() -> bool:
        runs[:] = agi.store.list_runs(session_id=session_id).items
        return bool(runs)

    wait_until(stored, timeout=30)
    assert runs[0].status == "queued"
    return runs[0]


def _drive(agi: Agi, run: Run) -> None:
    """What the claiming tick does next: drive the claimed run on its owner's loop."""

    async def spawn() -> None:
        agi.runs_manager.spawn(run.id, claimed=run.fence)

    agi.loop.submit(spawn()).result(30)


Claimer = Callable[[Agi, MakeAgi], Agi]


def _this_process(caller: Agi, make_agi: MakeAgi) -> Agi:
    return caller


def _another_process(caller: Agi, make_agi: MakeAgi) -> Agi:
    return make_agi()  # another owner on the same store


@pytest.mark.parametrize("claimer", [_this_process, _another_process], ids=["here", "elsewhere"])
def test_an_external_call_whose_run_a_tick_claimed_first_waits_for_its_end(
    caller: Agi, make_agi: MakeAgi, claimer: Claimer, held: HeldLoop
) -> None:
    ticker = claimer(caller, make_agi)
    session = caller.external_session("build", "probe")
    held.hold(caller)
    answer = _call_in_a_thread(caller, session.id)
    run = _the_queued_run(caller, session.id)
    claimed = ticker.store.claim_due_runs(
        owner=ticker.runs_manager.deps.owner, stale_before="1970-01-01T00:00:00.000Z"
    )
    assert [c.id for c in claimed] == [run.id]
    held.release()  # the call's own spawn finds the run claimed, running, nobody driving it yet
    wait_until(lambda: not caller.runs_manager.is_local(run.id), timeout=30)
    assert not answer.done()  # it waits: the run has not ended
    _drive(ticker, claimed[0])

    ended = answer.result(60)
    assert ended.status == "succeeded"
    assert ended.owner == ticker.runs_manager.deps.owner
    calls = caller.tool_calls(run.id)
    assert [(c.tool_call_id, c.status) for c in calls] == [("mcp_claimed_call", "completed")]
    assert isinstance(calls[0].result, dict)
    assert TEXT.strip() in str(calls[0].result["output"])
    assert [r.id for r in caller.store.list_runs(session_id=session.id).items] == [run.id]
