"""shell.run with real subprocesses: streaming, exit codes, cwd, timeout and cancel kill."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agi_jupyter.tools import ToolContext, ToolRegistry, execute_tool_call
from tests.tools.conftest import Call, Emitted, exists, read, write


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent to reap it counts as dead)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


async def gone(pid: int, seconds: float = 5.0) -> bool:
    """Whether ``pid`` is dead within ``seconds``: a killed process is torn down by the kernel
    a moment after the signal is sent, later on a busy machine."""
    for _ in range(int(seconds / 0.02)):
        if not alive(pid):
            return True
        await asyncio.sleep(0.02)
    return not alive(pid)


async def wait_for_file(path: Path, seconds: float = 5.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if exists(path) and read(path).strip():
            return read(path).strip()
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


@pytest.mark.asyncio
async def test_output_streams_through_emit(call: Call, emitted: Emitted) -> None:
    command = "echo one; echo oops >&2; sleep 0.1; echo two; printf 'caf\\303\\251'"
    outcome = await call("shell.run", {"command": command})
    assert outcome.status == "completed"
    assert outcome.output == ("exit code 0\n--- stdout ---\none\ntwo\ncafé\n--- stderr ---\noops")
    assert emitted.text("stdout") == "one\ntwo\ncafé"
    assert emitted.text("stderr") == "oops\n"
    assert len([c for c in emitted.chunks if c[0] == "stdout"]) >= 2  # streamed, not at the end
    assert outcome.result["data"] == {
        "exit_code": 0,
        "timed_out": False,
        "stdout_bytes": 13,
        "stderr_bytes": 5,
    }


@pytest.mark.asyncio
async def test_nonzero_exit_is_a_failure_with_output(call: Call) -> None:
    outcome = await call("shell.run", {"command": "echo partial; exit 3"})
    assert outcome.status == "failed"
    assert outcome.output == "exit code 3\n--- stdout ---\npartial"
    assert outcome.result["data"]["exit_code"] == 3


@pytest.mark.asyncio
async def test_runs_in_the_project_or_a_subfolder(call: Call, project: Path) -> None:
    write(project / "sub" / "f.txt", "x")
    top = await call("shell.run", {"command": "pwd"})
    assert top.output.endswith(f"\n{project}")
    sub = await call("shell.run", {"command": "pwd; ls", "cwd": "sub"})
    assert sub.output.endswith(f"\n{project / 'sub'}\nf.txt")
    missing = await call("shell.run", {"command": "pwd", "cwd": "nope"})
    assert missing.status == "failed"
    assert "the working folder 'nope' does not exist" in missing.output


@pytest.mark.asyncio
async def test_timeout_kills_the_process_group(call: Call, project: Path) -> None:
    command = "sleep 30 & echo $! > child.pid; echo started; wait"
    started = time.monotonic()
    outcome = await call("shell.run", {"command": command, "timeout": 0.5})
    assert time.monotonic() - started < 5
    assert outcome.status == "failed"
    assert outcome.output.startswith(
        "timed out after 0.5 s; the command's process group was killed\n--- stdout ---\nstarted"
    )
    assert outcome.result["data"]["timed_out"] is True
    assert await gone(int(read(project / "child.pid")))


@pytest.mark.asyncio
async def test_cancel_kills_the_process_group(
    registry: ToolRegistry, ctx: ToolContext, project: Path
) -> None:
    task = asyncio.create_task(
        execute_tool_call(
            registry,
            name="shell.run",
            arguments={"command": "sleep 30 & echo $! > child.pid; wait"},
            allowed=["shell.run"],
            ctx=ctx,
            timeout=60,
        )
    )
    pid = int(await wait_for_file(project / "child.pid"))
    assert alive(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone(pid)


@pytest.mark.asyncio
async def test_long_output_keeps_the_tail(call: Call, emitted: Emitted) -> None:
    outcome = await call("shell.run", {"command": "seq 1 20000"})
    assert outcome.status == "completed"
    assert "earlier output cut" in outcome.output
    assert outcome.output.endswith("\n19999\n20000")
    assert emitted.text("stdout").startswith("1\n2\n3\n")


def test_shell_timeout_argument_extends_the_call_deadline(registry: ToolRegistry) -> None:
    shell = registry.get("shell.run")
    assert shell is not None
    args = shell.validate({"command": "true", "timeout": 300})
    assert shell.call_timeout(args, 120) > 300
    short = shell.validate({"command": "true"})
    assert shell.call_timeout(short, 120) == 120
    with pytest.raises(ValueError, match="less than or equal to 600"):
        shell.validate({"command": "true", "timeout": 10_000})
