"""On a terminal (a pseudo terminal here) ``agi`` shows a status line while it waits; with
``--json`` it never does."""

from __future__ import annotations

from pathlib import Path

import pexpect

from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.cli.terminal import approve_one_call_and_deny_the_next, spawn


def test_a_status_line_shows_while_waiting_for_the_model(
    fake_llm: FakeLLMServer, project: Path
) -> None:
    fake_llm.enqueue(Turn(text="Here it is.", fault=Fault(delay_before_headers=1.5)))
    child, transcript = spawn(project, "slow question")

    child.expect("waiting for fake:echo")
    child.expect("Here it is.")
    child.expect(pexpect.EOF)
    child.close()

    assert child.exitstatus == 0, transcript.getvalue()
    assert "run_" in transcript.getvalue()  # the footer: run id, session, tokens


def test_no_status_line_in_json_mode(fake_llm: FakeLLMServer, project: Path) -> None:
    fake_llm.enqueue(Turn(text="Here it is.", fault=Fault(delay_before_headers=1.0)))
    child, transcript = spawn(project, "--json", "slow question")

    child.expect(pexpect.EOF)
    child.close()

    assert child.exitstatus == 0
    assert "waiting for" not in transcript.getvalue()
    assert '"type": "run.final"' in transcript.getvalue()


def test_on_a_terminal_agi_asks_about_a_call_that_needs_approval(
    fake_llm: FakeLLMServer, project: Path
) -> None:
    approve_one_call_and_deny_the_next(fake_llm, project)
