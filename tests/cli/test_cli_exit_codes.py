"""Every command exits as README says: 0 ok, 1 run failed, 2 bad usage (an unknown id, a run
that already ended), 3 not configured, 6 budget exceeded, 130 cancelled; one line on stderr
when it fails."""

from __future__ import annotations

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.cli.conftest import RunCli


@pytest.mark.parametrize(
    "args",
    [
        ["show", "ses_nope"],
        ["runs", "ses_nope"],
        ["run", "run_nope"],
        ["events", "run_nope"],
        ["cancel", "run_nope"],
        ["artifacts", "run_nope"],
        ["artifact", "art_nope"],
        ["export", "ses_nope", "--to", "-"],
        ["ask", "-s", "ses_nope", "hi"],
        ["ask", "-a", "nobody", "hi"],
        ["tools", "-a", "nobody"],
    ],
)
def test_an_id_that_names_nothing_is_bad_usage(run_cli: RunCli, args: list[str]) -> None:
    result = run_cli(*args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("agi: ")


def test_cancelling_a_run_that_ended_is_bad_usage(run_cli: RunCli, agi: Agi) -> None:
    run = agi.ask("hi").run
    result = run_cli("cancel", run.id)
    assert result.exit_code == 2
    assert result.stderr == f"agi: run {run.id} has already ended\n"
    assert agi.run(run.id).status == "succeeded"


def test_a_run_stopped_by_its_budget_exits_6(
    run_cli: RunCli, agi: Agi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})], usage=(50, 10)),
        Turn(text="never asked for", usage=(70, 5)),
    )
    result = run_cli("--max-tokens", "100", "list the files")
    assert result.exit_code == 6, (result.stdout, result.stderr)
    last = result.stderr.splitlines()[-1]
    assert last.startswith("agi: run ")
    assert "failed: BUDGET_EXCEEDED: session budget: 60/100 tokens" in last
    assert "session budget: 60/100 tokens" in result.stderr.splitlines()[-2]
    assert len(fake_llm.requests) == 1
    (session,) = agi.sessions().items
    assert session.budget == {"max_tokens": 100}


def test_budget_options_apply_to_a_new_session_only(run_cli: RunCli) -> None:
    result = run_cli("--max-tokens", "100", "-c", "hi")
    assert result.exit_code == 2
    assert "apply to a new session" in result.stderr
