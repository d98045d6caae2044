"""A spent budget asks for more in review mode *ask*, across real processes: a ``build``
session with 100 tokens whose second model call would go over leaves its run waiting
(``agi`` exits 5 and says how to answer); a larger budget given over REST makes the server's
tick (another process) finish the run, the model called once more; ``agi approve
--max-tokens`` in another process resumes it there; ``agi deny`` fails it
``BUDGET_EXCEEDED``; in review mode auto the run fails at once (exit 6)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.cli.remote import ServerClient
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


def _agi(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AGI, *args],
        capture_output=True,
        text=True,
        env=process_env(),
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def _ask(fake_llm: FakeLLMServer, mode: str) -> subprocess.CompletedProcess[str]:
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})], usage=(50, 10)),
        Turn(text="Listed.", usage=(70, 5)),
    )
    return _agi("-a", "build", "--review-mode", mode, "--max-tokens", "100", "list the files")


def _ask_and_wait(project: Path, fake_llm: FakeLLMServer) -> str:
    asked = _ask(fake_llm, "ask")
    assert asked.returncode == 5, asked.stderr
    (run,) = _runs(project)
    assert "waiting for a larger budget" in asked.stderr
    assert "session budget: 60/100 tokens" in asked.stderr
    assert f"agi approve {run.id} --max-tokens N" in asked.stderr
    assert (run.status, run.owner) == ("waiting_approval", None)
    assert len(fake_llm.requests) == 1
    listed = _agi("runs")
    assert "waiting_approval: a larger budget" in listed.stdout
    return run.id


def test_a_larger_budget_over_rest_lets_the_servers_tick_finish_the_run(
    project: Path,
    fake_llm: FakeLLMServer,
    serve: Callable[[], tuple[Any, ServerClient]],  # noqa: F811 - the fixture
) -> None:
    run_id = _ask_and_wait(project, fake_llm)
    _server, client = serve()
    listed = client.call("GET", f"runs/{run_id}/approvals")
    assert listed["budget"]["budgets"][0]["spent_tokens"] == 60

    decided = client.call(
        "POST", f"runs/{run_id}/approvals", {"decision": "approve", "budget": {"max_tokens": 500}}
    )

    assert decided["decided"] == []
    # (its run.final is stored after the terminal status, by the server's tick: wait for it)
    _until("the run to finish", lambda: _finals(project, run_id) > 0)
    done = _runs(project)[0]
    assert (done.status, done.error) == ("succeeded", None)
    assert len(fake_llm.requests) == 2  # exactly one more model call
    assert _finals(project, run_id) == 1
    with open_store(project) as store:
        assert store.get_session(done.session_id).budget == {"max_tokens": 500}


@pytest.mark.usefixtures("on_backend")
def test_agi_approve_with_a_larger_budget_resumes_it_here_and_deny_fails_it(
    project: Path, fake_llm: FakeLLMServer
) -> None:
    run_id = _ask_and_wait(project, fake_llm)
    unchanged = _agi("approve", run_id)
    assert unchanged.returncode == 2
    assert "BUDGET_NOT_RAISED" in unchanged.stderr or "larger budget" in unchanged.stderr

    approved = _agi("approve", run_id, "--max-tokens", "1000")

    assert approved.returncode == 0, approved.stderr
    assert "Listed." in approved.stdout
    assert _runs(project)[0].status == "succeeded"
    assert len(fake_llm.requests) == 2

    second = _ask(fake_llm, "ask")  # a new session: 100 tokens again
    assert second.returncode == 5, second.stderr
    waiting = next(r for r in _runs(project) if r.status == "waiting_approval")
    denied = _agi("deny", waiting.id)
    assert denied.returncode == 6, denied.stderr
    failed = next(r for r in _runs(project) if r.id == waiting.id)
    assert failed.error is not None
    assert failed.error["code"] == "BUDGET_EXCEEDED"
    assert len(fake_llm.requests) == 3


def test_in_review_mode_auto_the_run_fails_at_once(project: Path, fake_llm: FakeLLMServer) -> None:
    asked = _ask(fake_llm, "auto")

    assert asked.returncode == 6, asked.stderr
    (run,) = _runs(project)
    assert run.status == "failed"
    assert run.error is not None
    assert run.error["code"] == "BUDGET_EXCEEDED"
    assert len(fake_llm.requests) == 1
