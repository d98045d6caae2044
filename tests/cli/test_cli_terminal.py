"""On a terminal (a pseudo terminal here) ``agi`` shows a status line while it waits; with
``--json`` it never does."""

from __future__ import annotations

import io
from pathlib import Path

import pexpect

from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.cli.conftest import AGI, process_env


def spawn(project: Path, *args: str) -> tuple[pexpect.spawn, io.StringIO]:
    child = pexpect.spawn(
        AGI,
        list(args),
        cwd=str(project),
        env=process_env(TERM="xterm-256color"),
        timeout=30,
        encoding="utf-8",
        dimensions=(24, 120),
    )
    transcript = io.StringIO()
    child.logfile_read = transcript
    return child, transcript


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
    from agi_jupyter.testing import FakeToolCall

    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("shell_run", {"command": "echo ran >> count.txt"})]),
        Turn(tool_calls=[FakeToolCall("shell_run", {"command": "echo again >> count.txt"})]),
        Turn(text="All counted."),
    )
    child, transcript = spawn(project, "-a", "build", "--review-mode", "ask", "count")

    child.expect("shell.run wants to run")
    child.expect("approve\\?")
    child.sendline("y")
    child.expect("shell.run wants to run")  # the next call asks again
    child.sendline("n")
    child.expect("message to the model")
    child.sendline("that is enough")
    child.expect("All counted.")
    child.expect(pexpect.EOF)
    child.close()

    assert child.exitstatus == 0, transcript.getvalue()
    assert (project / "count.txt").read_text() == "ran\n"
    assert "that is enough" in str(fake_llm.requests[-1].body)
