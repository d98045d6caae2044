"""Runs parked on cells still running (``notebook.wait {park: true}``): no owner and no model
call while the cells run, resumed with their result when they end; a cancel of a parked run;
a parked run nobody follows any more (its process stopped) resumed by a tick, once, told the
kernel is gone. Real private kernels, both store backends."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agi_jupyter.app import Agi
from agi_jupyter.records import ToolResultPart
from agi_jupyter.runtime.endings import CANCELLED
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.notebook.conftest import MakeAgi
from tests.notebook.test_long_cells import NB, results, set_source, then

LONG = "import time\nprint('started', flush=True)\ntime.sleep(8)\nprint('finished')"
ENDS_WITHIN = 120.0  # bound of a wait for a run to reach a status (a loaded machine is slow)


def run_the_cell_then_park() -> list[Turn]:
    """The model's first turns: run a quick cell (the kernel starts), then the long cell,
    waiting 1 s (its handle comes back); the rule ``then`` parks on that handle."""
    arguments = {"path": NB, "cell_ids": ["total"], "timeout": 1}
    return [
        Turn(tool_calls=[FakeToolCall("notebook.run", {"path": NB, "cell_ids": ["load"]})]),
        Turn(tool_calls=[FakeToolCall("notebook.run", arguments, id="run")]),
    ]


def statuses(agi: Agi, run_id: str) -> list[str]:
    return [str(e.payload.get("status")) for e in agi.run_events(run_id) if e.type == "run.status"]


def until_status(agi: Agi, run_id: str, status: str) -> None:
    """Wait (bounded by ``ENDS_WITHIN``, not a timing) until the run is ``status``."""
    done = threading.Event()
    for _ in range(int(ENDS_WITHIN / 0.1)):
        if agi.run(run_id).status == status:
            return
        done.wait(0.1)
    raise AssertionError(f"run {run_id} never became {status}: {agi.run(run_id).status}")


@pytest.mark.slow
def test_a_parked_run_waits_with_no_owner_and_no_model_call_and_resumes_with_the_result(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path, backend_env: dict[str, str]
) -> None:
    set_source(notebook, 2, LONG)
    agi = make_agi(env=backend_env)
    fake_llm.enqueue(*run_the_cell_then_park())
    fake_llm.default_rule = then("notebook.wait", park=True)
    run_id = agi.submit("run the long cell", agent="build").id
    parked_seen: dict[str, Any] = {}
    live: list[str] = []  # the parked call's live output while the run waits
    for event in agi.follow(run_id):
        if parked_seen and event.get("type") == "tool.call.delta":
            assert event["tool_call_id"] == "follow"
            live.append(str(event["chunk"]))
        if event.get("type") == "run.status" and event.get("status") == "waiting_execution":
            run = agi.run(run_id)
            parked_seen.update(
                status=run.status,
                owner=run.owner,
                requests=len(fake_llm.requests),
                parked=run.loop_state.parked_on if run.loop_state else None,
                cell=[e.status for e in agi.executions(NB)],
            )
    run = agi.run(run_id)
    assert run.status == "succeeded", run.error
    # Parked: no owner, the call that parked it in the run's state, the cell still running.
    assert parked_seen["status"] == "waiting_execution"
    assert parked_seen["owner"] is None
    assert parked_seen["requests"] == 3  # the run's first three turns; none while parked
    parked = parked_seen["parked"]
    assert (parked.tool_call_id, parked.name, parked.path) == ("follow", "notebook.wait", NB)
    assert parked.handle.startswith("ex-")
    assert parked_seen["cell"] == ["ok", "running"]
    assert "finished" in "".join(live)  # printed after the park, streamed as the call's output
    assert statuses(agi, run_id) == [
        "running",
        "waiting_execution",
        "queued",
        "running",
        "succeeded",
    ]
    # Resumed: the model's next request answers the parked call with the cell's output.
    assert len(fake_llm.requests) == 4
    last = json.dumps(fake_llm.requests[-1].body)
    assert "stdout: started\\nfinished" in last
    follow = results(agi, run_id)["follow"]
    assert follow["is_error"] is False, follow
    assert "stdout: started\nfinished" in follow["output"]
    assert run.loop_state is not None
    assert run.loop_state.parked_on is None
    # Nothing interrupted the cell: its output went into the notebook whole.
    outputs = nbformat.read(notebook, as_version=4).cells[2].outputs
    assert [o.get("text") for o in outputs] == ["started\nfinished\n"]
    ledger = agi.executions(NB)[-1]
    assert (ledger.status, ledger.run_id, ledger.tool_call_id) == ("ok", run_id, "run")


@pytest.mark.slow
@pytest.mark.parametrize("interrupt", [False, True], ids=["left-running", "interrupted"])
def test_a_cancel_of_a_parked_run_leaves_the_cell_running_unless_it_interrupts(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path, interrupt: bool
) -> None:
    set_source(notebook, 2, LONG)
    agi = make_agi()
    fake_llm.enqueue(*run_the_cell_then_park())
    fake_llm.default_rule = then("notebook.wait", park=True)
    run_id = agi.submit("run the long cell", agent="build").id
    until_status(agi, run_id, "waiting_execution")
    cancelled = agi.cancel(run_id, interrupt=interrupt)
    assert cancelled.status == "cancelled"
    (call,) = [c for c in agi.tool_calls(run_id) if c.tool_call_id == "follow"]
    assert (call.status, call.is_error) == ("cancelled", True)
    answers = [
        part.output
        for message in agi.messages(cancelled.session_id)
        for part in message.parts
        if isinstance(part, ToolResultPart) and part.tool_call_id == "follow"
    ]
    assert answers == [CANCELLED]
    assert len(fake_llm.requests) == 3  # the cancel called no model
    if not interrupt:
        (running,) = agi.running_cells(run_id)
        assert (running.cell_id, running.interrupted) == ("total", False)
    # The cell ends either way; interrupted, with a KeyboardInterrupt.
    done = threading.Event()
    for _ in range(int(ENDS_WITHIN / 0.1)):
        ledger = agi.executions(NB)[-1]
        if ledger.status != "running":
            break
        done.wait(0.1)
    assert ledger.status == ("interrupted" if interrupt else "ok")
    assert agi.run(run_id).status == "cancelled"


@pytest.mark.slow
def test_a_parked_run_nobody_follows_is_resumed_once_by_a_tick_told_the_kernel_is_gone(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path, backend_env: dict[str, str]
) -> None:
    """The process following the cells stops (gracefully: it lets the run go); two other
    processes tick, each twice: one of them resumes the run, which ends."""
    set_source(notebook, 2, "import time\nprint('training', flush=True)\ntime.sleep(600)")
    first = make_agi(env=backend_env)
    fake_llm.enqueue(*run_the_cell_then_park())
    fake_llm.default_rule = then("notebook.wait", park=True)
    run_id = first.submit("train", agent="build").id
    until_status(first, run_id, "waiting_execution")
    first.close()  # its private kernel with it
    ticks = [make_agi(env=backend_env) for _ in range(2)]
    left = ticks[0].run(run_id)
    assert left.status == "waiting_execution", [
        (e.type, e.payload) for e in ticks[0].run_events(run_id)
    ][-6:]
    assert left.loop_state is not None
    assert left.loop_state.parked_on is not None
    assert left.loop_state.parked_on.follower is None  # let go
    fake_llm.default_rule = None
    fake_llm.enqueue(Turn(text="The kernel is gone; I will run the cell again."))
    results_of = [agi.tick() for agi in ticks for _ in range(2)]
    assert sum(r.recovered for r in results_of) == 1
    assert sum(r.executed for r in results_of) == 1
    run = ticks[0].run(run_id)
    assert run.status == "succeeded", run.error
    assert len(fake_llm.requests) == 4  # one resume, one model call
    follow = results(ticks[0], run_id)["follow"]
    assert follow["is_error"] is True
    assert "the notebook's kernel is gone" in follow["output"]
    assert "cell total: interrupted" in follow["output"]  # (so the stopping process wrote)
    assert follow["data"]["kernel"] == "gone"
    assert "the notebook's kernel is gone" in json.dumps(fake_llm.requests[-1].body)


@pytest.mark.slow
def test_a_parked_run_waits_at_most_the_park_limit_and_resumes_told_the_cells_still_run(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, notebook: Path
) -> None:
    set_source(notebook, 2, LONG)
    agi = make_agi(config={"notebook_park_limit": 1})
    fake_llm.enqueue(*run_the_cell_then_park())
    fake_llm.default_rule = then("notebook.wait", park=True)
    result = agi.ask("run the long cell", agent="build")
    assert result.run.status == "succeeded", result.run.error
    follow = results(agi, result.run_id)["follow"]
    assert follow["is_error"] is False, follow
    assert "the cells are still running (not interrupted)" in follow["output"]
    assert follow["data"]["running"] == "total"
    assert "waiting_execution" in statuses(agi, result.run_id)
    assert "still running" in json.dumps(fake_llm.requests[-1].body)
    (running,) = agi.running_cells(result.run_id)  # kept under its handle: notebook.wait finds it
    assert (running.cell_id, running.interrupted) == ("total", False)
