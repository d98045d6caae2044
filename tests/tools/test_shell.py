"""shell.run with real subprocesses: streaming, exit codes, cwd, timeout and cancel kill."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from agi_jupyter.runtime.redacted_store import RedactedStore
from agi_jupyter.store import SqliteStore
from agi_jupyter.tools import Redactor, ToolContext, ToolRegistry, execute_tool_call
from agi_jupyter.tools.shell import LIVE_LIMIT
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


@pytest.mark.asyncio
async def test_background_children_die_with_the_call(call: Call, project: Path) -> None:
    command = "sleep 300 > /dev/null 2>&1 & echo $! > child.pid; echo started"
    outcome = await call("shell.run", {"command": command})
    assert outcome.output == "exit code 0\n--- stdout ---\nstarted"
    assert await gone(int(read(project / "child.pid")))


@pytest.mark.asyncio
async def test_a_child_in_a_group_of_its_own_dies_too(call: Call, project: Path) -> None:
    # It leaves the command's process group but stays in its session.
    child = (
        "import os, time; os.setpgid(0, 0); "
        "open('child.pid', 'w').write(str(os.getpid())); time.sleep(300)"
    )
    command = (
        f'python3 -c "{child}" > /dev/null 2>&1 & while [ ! -s child.pid ]; do sleep 0.01; done'
    )
    outcome = await call("shell.run", {"command": command})
    assert outcome.status == "completed"
    assert await gone(int(read(project / "child.pid")))


# A child that starts a session of its own leaves the command's group and session: the three
# ways of doing so the audit found surviving the call.
ESCAPES = [
    "setsid sh -c 'echo $$ > child.pid; exec sleep 300' > /dev/null 2>&1 &",
    "setsid -f sh -c 'echo $$ > child.pid; exec sleep 300' > /dev/null 2>&1;",
    "setsid nohup sh -c 'echo $$ > child.pid; exec sleep 300' > /dev/null 2>&1 &",
]


@pytest.mark.asyncio
@pytest.mark.parametrize("start", ESCAPES)
async def test_a_child_in_a_session_of_its_own_dies_too(
    call: Call, project: Path, start: str
) -> None:
    command = f"{start} while [ ! -s child.pid ]; do sleep 0.01; done; echo started"
    outcome = await call("shell.run", {"command": command})
    assert outcome.status == "completed", outcome.output
    assert outcome.output.endswith("started")
    assert await gone(int(read(project / "child.pid")))


@pytest.mark.asyncio
async def test_a_child_holding_the_pipe_is_not_a_timeout(call: Call, project: Path) -> None:
    outcome = await call(
        "shell.run", {"command": "sleep 300 & echo $! > child.pid; echo done", "timeout": 20}
    )
    assert outcome.status == "completed"
    assert outcome.output == "exit code 0\n--- stdout ---\ndone"
    assert outcome.result["data"]["timed_out"] is False
    assert await gone(int(read(project / "child.pid")))


OWNER = """
import asyncio, sys
from pathlib import Path
from agi_jupyter.config import Config
from agi_jupyter.store import open_store
from agi_jupyter.tools import ToolContext
from agi_jupyter.tools.shell import ShellRun

project = Path(sys.argv[1])
store = open_store(project)
ctx = ToolContext(project=project, store=store, config=Config(project=project))
args = ShellRun().validate({"command": sys.argv[2], "timeout": 300})
asyncio.run(ShellRun().execute(args, ctx))
"""


@pytest.mark.slow
@pytest.mark.asyncio
async def test_the_command_dies_when_its_owner_is_killed(project: Path) -> None:
    command = "sleep 300 & echo $! > child.pid; echo $$ > shell.pid; wait"
    owner = await asyncio.create_subprocess_exec(sys.executable, "-c", OWNER, str(project), command)
    try:
        child = int(await wait_for_file(project / "child.pid", 30))
        shell = int(await wait_for_file(project / "shell.pid", 30))
        assert alive(child)
        assert alive(shell)
        owner.kill()  # SIGKILL: the owner cleans nothing up
        await owner.wait()
        assert await gone(child, 10)
        assert await gone(shell, 10)
    finally:
        if owner.returncode is None:
            owner.kill()
            await owner.wait()


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_child_in_a_session_of_its_own_dies_when_the_owner_is_killed(
    project: Path,
) -> None:
    command = f"{ESCAPES[1]} echo $$ > shell.pid; sleep 300"
    owner = await asyncio.create_subprocess_exec(sys.executable, "-c", OWNER, str(project), command)
    try:
        child = int(await wait_for_file(project / "child.pid", 30))
        shell = int(await wait_for_file(project / "shell.pid", 30))
        assert alive(child)
        owner.kill()  # SIGKILL: the watchdog alone cleans up
        await owner.wait()
        assert await gone(shell, 10)
        assert await gone(child, 10)
    finally:
        if owner.returncode is None:
            owner.kill()
            await owner.wait()


# The owner, SIGKILLed by itself the moment the command's process exists: right after
# ``Popen`` (fork and exec) returns, before asyncio's spawn returns to the loop. It writes the
# command's pid (its group, its session) first, for the test to watch.
HOOK = """
import os, signal, subprocess, sys
from pathlib import Path

spawn = subprocess.Popen.__init__

def spawn_then_die(self, args, *rest, **options):
    spawn(self, args, *rest, **options)
    if "agi-shell-watchdog" not in args:
        Path(sys.argv[1], "spawned.pid").write_text(str(self.pid))
        os.kill(os.getpid(), signal.SIGKILL)

subprocess.Popen.__init__ = spawn_then_die
"""
KILLED_AT_SPAWN = HOOK + OWNER


def group_members(pgid: int) -> list[int]:
    """The live processes (zombies aside) of process group ``pgid``, found in ``/proc``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):  # state ppid pgrp
            members.append(int(entry.name))
    return members


@pytest.mark.slow
@pytest.mark.asyncio
async def test_the_command_dies_when_its_owner_is_killed_right_after_the_spawn(
    project: Path,
) -> None:
    """No window between the spawn and the watchdog knowing the group: the owner dies before
    its spawn returns to the loop, and the command's group is killed all the same."""
    command = "sleep 300 & sleep 300; wait"
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", KILLED_AT_SPAWN, str(project), command
    )
    pgid = 0
    try:
        assert await asyncio.wait_for(owner.wait(), 60) == -9  # it killed itself
        pgid = int(await wait_for_file(project / "spawned.pid", 5))
        for _ in range(500):  # bounded: 10 s
            if not group_members(pgid):
                break
            await asyncio.sleep(0.02)
        assert group_members(pgid) == []
    finally:
        if owner.returncode is None:
            owner.kill()
            await owner.wait()
        if pgid:  # a failure leaves no sleeping processes behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.asyncio
async def test_100_mb_of_output_becomes_an_artifact(
    call: Call, emitted: Emitted, store: SqliteStore
) -> None:
    line = b"the quick brown fox jumps over the lazy dog 0123456789\n"
    size = 100_000_000
    expected = hashlib.sha256((line * (size // len(line) + 1))[:size]).hexdigest()
    redacting = RedactedStore(store, Redactor({"SOME_API_KEY": "sk-live-not-in-this-output-42"}))
    command = f"yes '{line.decode().strip()}' | head -c {size}"
    outcome = await call("shell.run", {"command": command, "timeout": 300}, store=redacting)
    assert outcome.status == "completed"
    found = outcome.result["data"]["stdout_artifact"]
    assert found["size"] == size
    assert found["sha256"] == expected
    artifact = store.get_artifact(found["id"])
    assert artifact.kind == "tool_output"
    assert hashlib.sha256(store.read_artifact(artifact.id)).hexdigest() == expected
    assert f"all of it is artifact {artifact.id}" in outcome.output
    live = [chunk for channel, chunk in emitted.chunks if channel == "stdout"]
    assert len(live) <= LIVE_LIMIT // 4096 + 2  # bounded, however long the output
    assert live[-1] == f"\n[live output stops after {LIVE_LIMIT} bytes]\n"


@pytest.mark.asyncio
async def test_a_spilled_output_is_redacted(call: Call, store: SqliteStore) -> None:
    secret = "sk-live-printed-by-the-command-42"
    redacting = RedactedStore(store, Redactor({"SOME_API_KEY": secret}))
    command = f"seq 1 30000; echo {secret}; seq 1 100 | base64"
    outcome = await call("shell.run", {"command": command}, store=redacting)
    artifact = outcome.result["data"]["stdout_artifact"]
    content = store.read_artifact(artifact["id"])
    assert secret.encode() not in content
    assert b"[REDACTED:SOME_API_KEY]" in content
