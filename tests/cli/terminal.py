"""``agi`` on a pseudo terminal (pexpect), and the approval dialogue the terminal tests share."""

from __future__ import annotations

import io
from pathlib import Path

import pexpect

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.cli.conftest import AGI, process_env


def spawn(project: Path, *args: str, timeout: float = 30) -> tuple[pexpect.spawn, io.StringIO]:
    child = pexpect.spawn(
        AGI,
        list(args),
        cwd=str(project),
        env=process_env(TERM="xterm-256color"),
        timeout=timeout,
        encoding="utf-8",
        dimensions=(24, 120),
    )
    transcript = io.StringIO()
    child.logfile_read = transcript
    return child, transcript


def approve_one_call_and_deny_the_next(
    fake_llm: FakeLLMServer, project: Path, *agi_args: str
) -> None:
    """Run ``agi *agi_args count`` (a build agent in ask mode) whose model calls shell.run
    twice: answer [y] to the first question and [n] with a message to the second, then check
    that the first command ran once, the second never, and the model got the message."""
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("shell_run", {"command": "echo ran >> count.txt"})]),
        Turn(tool_calls=[FakeToolCall("shell_run", {"command": "echo again >> count.txt"})]),
        Turn(text="All counted."),
    )
    args = (*agi_args, "-a", "build", "--review-mode", "ask", "count")
    child, transcript = spawn(project, *args, timeout=60)

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
    assert len(fake_llm.requests) == 3
