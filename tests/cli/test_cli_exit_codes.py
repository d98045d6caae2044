"""Every command exits as README says: 0 ok, 1 run failed, 2 bad usage (an unknown id, a run
that already ended), 3 not configured, 6 budget exceeded, 130 cancelled; one line on stderr
when it fails."""

from __future__ import annotations

from pathlib import Path

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


def test_options_before_a_command_name_are_the_commands_not_a_prompt(
    run_cli: RunCli, agi: Agi, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    """``agi -p DIR cancel RUN`` cancels the run (it was read as the prompt "cancel RUN")."""
    queued = agi.submit("later", start=False)
    project = str(agi.project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    requests = len(fake_llm.requests)
    cancelled = run_cli("-p", project, "cancel", queued.id)
    assert (cancelled.exit_code, cancelled.stdout) == (0, f"{queued.id} cancelled\n")
    assert agi.run(queued.id).status == "cancelled"
    listed = run_cli(f"--project={project}", "--json", "runs")
    assert listed.exit_code == 0, listed.stderr
    assert queued.id in listed.stdout
    refused = run_cli("-p", project, "tick", "--server", "x")  # options stay the command's
    assert refused.exit_code == 2
    assert "No such option" in refused.stderr
    assert len(fake_llm.requests) == requests, "no model was asked"
