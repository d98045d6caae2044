"""Durable approvals across real processes (issue 16's bar): a ``build`` session in *ask* mode
whose model calls ``shell.run`` leaves its run in ``waiting_approval`` and the CLI exits with
code 5; the approval given over REST makes the server's tick (another process) finish the run
with the command executed exactly once; a denial given with ``agi deny --detach`` is taken up
by ``agi tick`` in a third process, and the model gets the denial and goes on."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.cli.remote import ServerClient
from agi_jupyter.records import ToolResultPart
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.cli.conftest import AGI, process_env
from tests.cli.test_cli_faults import (  # noqa: F401 - fixtures
    _finals,
    _runs,
    _until,
    on_backend,
    open_store,
    serve,
)

pytestmark = pytest.mark.slow

COUNT = "echo ran >> count.txt; echo counted"


def _ask_and_wait(project: Path, fake_llm: FakeLLMServer) -> str:
    """``agi`` without a terminal: the run waits, the process exits 5 and says how to go on."""
    fake_llm.enqueue(
        Turn(text="I will count.", tool_calls=[FakeToolCall("shell_run", {"command": COUNT})])
    )
    asked = subprocess.run(
        [AGI, "-a", "build", "--review-mode", "ask", "count once"],
        capture_output=True,
        text=True,
        env=process_env(),
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert asked.returncode == 5, asked.stderr
    (run,) = _runs(project)
    assert "waiting for approval" in asked.stderr
    assert f"agi approve {run.id}" in asked.stderr
    assert (run.status, run.owner) == ("waiting_approval", None)
    assert not (project / "count.txt").exists()
    assert len(fake_llm.requests) == 1
    return run.id


def test_an_approval_over_rest_lets_the_servers_tick_finish_the_run_once(
    project: Path,
    fake_llm: FakeLLMServer,
    serve: Callable[[], tuple[Any, ServerClient]],  # noqa: F811 - the fixture
) -> None:
    run_id = _ask_and_wait(project, fake_llm)
    fake_llm.enqueue(Turn(text="Counted once."))
    _server, client = serve()
    pending = client.call("GET", f"runs/{run_id}/approvals")["approvals"]
    assert [(a["name"], a["arguments"]) for a in pending] == [("shell.run", {"command": COUNT})]

    decided = client.call(
        "POST",
        f"runs/{run_id}/approvals",
        {"tool_call_id": pending[0]["tool_call_id"], "decision": "approve"},
    )

    assert decided["decided"] == [pending[0]["tool_call_id"]]
    # (its run.final is stored after the terminal status, by the server's tick: wait for it)
    _until("the run to finish", lambda: _finals(project, run_id) > 0)
    done = _runs(project)[0]
    assert (done.status, done.error) == ("succeeded", None)
    assert (project / "count.txt").read_text() == "ran\n"  # executed exactly once
    assert len(fake_llm.requests) == 2  # the waiting turn was not asked again
    assert _finals(project, run_id) == 1
    with open_store(project) as store:
        (call,) = store.list_tool_calls(run_id=run_id)
        events = [e.type for e in store.list_run_events(run_id)]
    assert call.status == "completed"
    assert call.approval is not None
    assert call.approval["decision"] == "approve"
    assert events.count("approval.requested") == events.count("approval.decided") == 1


@pytest.mark.usefixtures("on_backend")
def test_a_denial_reaches_the_model_and_a_tick_in_another_process_continues_the_run(
    project: Path, fake_llm: FakeLLMServer
) -> None:
    run_id = _ask_and_wait(project, fake_llm)
    denied = subprocess.run(
        [AGI, "deny", run_id, "--message", "count with python instead", "--detach"],
        capture_output=True,
        text=True,
        env=process_env(),
        timeout=120,
    )
    assert denied.returncode == 0, denied.stderr
    assert _runs(project)[0].status == "queued"
    fake_llm.enqueue(Turn(text="I will not run it."))

    tick = subprocess.run(
        [AGI, "tick", "--json"], capture_output=True, text=True, env=process_env(), timeout=120
    )

    assert tick.returncode == 0, tick.stderr
    assert '"executed": 1' in tick.stdout
    done = _runs(project)[0]
    assert (done.status, done.error) == ("succeeded", None)
    assert not (project / "count.txt").exists()
    assert "count with python instead" in str(fake_llm.requests[-1].body)
    with open_store(project) as store:
        tool = [m for m in store.list_messages(done.session_id) if m.role == "tool"]
    (part,) = tool[0].parts
    assert isinstance(part, ToolResultPart)
    assert part.status == "denied"


def test_agi_runs_shows_what_a_run_waits_for_and_agi_approve_resumes_it_here(
    project: Path, fake_llm: FakeLLMServer
) -> None:
    run_id = _ask_and_wait(project, fake_llm)
    listed = subprocess.run(
        [AGI, "runs"], capture_output=True, text=True, env=process_env(), timeout=120
    )
    assert "waiting_approval: shell.run" in listed.stdout
    fake_llm.enqueue(Turn(text="Counted here."))

    approved = subprocess.run(
        [AGI, "approve", run_id], capture_output=True, text=True, env=process_env(), timeout=120
    )

    assert approved.returncode == 0, approved.stderr
    assert "Counted here." in approved.stdout
    assert (project / "count.txt").read_text() == "ran\n"
    assert _runs(project)[0].status == "succeeded"
    again = subprocess.run(
        [AGI, "approve", run_id], capture_output=True, text=True, env=process_env(), timeout=120
    )
    assert again.returncode == 2
    assert "no tool call waiting" in again.stderr
    assert "it was decided already: shell.run approved from the command line" in again.stderr
    wide = {**process_env(), "COLUMNS": "300"}  # the table's rows on one line each
    shown = subprocess.run(
        [AGI, "run", run_id], capture_output=True, text=True, env=wide, timeout=120
    )
    assert "approved from the command line" in shown.stdout
