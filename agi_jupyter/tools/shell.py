"""``shell.run``: run a command with ``/bin/sh -c`` in the project, streaming its output.

stdout/stderr chunks go to ``ctx.emit`` as they arrive (they become ``tool.call.delta``
events); the model gets the exit code and the tails of both streams. The command runs in its
own process group, which is killed on timeout (TERM, then KILL) and on cancellation (KILL).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from dataclasses import dataclass

from pydantic import Field

from agi_jupyter.errors import ToolError
from agi_jupyter.tools.base import Emit, Tool, ToolArgs, ToolContext, ToolResult
from agi_jupyter.tools.paths import resolve_in_project

DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
TAIL_CHARS = 16_000
KILL_GRACE = 2.0
CHUNK = 4096


class ShellRunArgs(ToolArgs):
    command: str = Field(description="The shell command line, run with /bin/sh -c.")
    cwd: str = Field(".", description="Working folder, relative to the project folder.")
    timeout: float = Field(
        DEFAULT_TIMEOUT,
        gt=0,
        le=MAX_TIMEOUT,
        description=f"Seconds before the command is killed (at most {MAX_TIMEOUT:g}).",
    )


@dataclass
class _Tail:
    """The last ``limit`` characters of a stream and how many bytes it had in all."""

    limit: int = TAIL_CHARS
    text: str = ""
    total_bytes: int = 0
    dropped: bool = False

    def add(self, chunk: str, size: int) -> None:
        self.total_bytes += size
        self.text += chunk
        if len(self.text) > self.limit:
            self.text = self.text[-self.limit :]
            self.dropped = True

    def render(self, name: str) -> str:
        if not self.text:
            return ""
        note, text = "", self.text
        if self.dropped:
            note = f"[... earlier output cut; {self.total_bytes} bytes in all ...]\n"
            text = text.partition("\n")[2] or text  # start at a whole line
        return f"--- {name} ---\n{note}{text.rstrip(chr(10))}\n"


async def _pump(stream: asyncio.StreamReader | None, channel: str, tail: _Tail, emit: Emit) -> None:
    if stream is None:
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        data = await stream.read(CHUNK)
        text = decoder.decode(data, final=not data)
        if text:
            tail.add(text, len(data))
            emit(channel, text)
        elif data:
            tail.total_bytes += len(data)
        if not data:
            return


def _signal_group(process: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


async def _stop(process: asyncio.subprocess.Process, readers: list[asyncio.Task[None]]) -> None:
    """Kill the process group (TERM first, KILL after a grace period) and reap everything."""
    if process.returncode is None:
        _signal_group(process, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), KILL_GRACE)
    await _reap(process, readers)


async def _reap(process: asyncio.subprocess.Process, readers: list[asyncio.Task[None]]) -> None:
    _signal_group(process, signal.SIGKILL)  # also whatever the command left running
    _, pending = await asyncio.wait(readers, timeout=KILL_GRACE)
    for task in pending:
        task.cancel()
    if process.returncode is None:
        await process.wait()


class ShellRun(Tool[ShellRunArgs]):
    name = "shell.run"
    description = (
        "Run a shell command (/bin/sh -c) in the project folder or a sub-folder. Output streams "
        "live; the result has the exit code and the last part of stdout and stderr."
    )
    parameters = ShellRunArgs

    def call_timeout(self, args: ShellRunArgs, default: float) -> float:
        return max(default, args.timeout + 2 * KILL_GRACE + 1)

    async def execute(self, args: ShellRunArgs, ctx: ToolContext) -> ToolResult:
        cwd = resolve_in_project(ctx.project, args.cwd)
        if not cwd.is_dir():
            raise ToolError(f"the working folder {args.cwd!r} does not exist")
        process = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            args.command,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        # Both tails together stay under the artifact threshold, so they reach the model whole.
        limit = min(TAIL_CHARS, ctx.config.artifact_threshold // 3)
        out, err = _Tail(limit), _Tail(limit)
        readers = [
            asyncio.create_task(_pump(process.stdout, "stdout", out, ctx.emit)),
            asyncio.create_task(_pump(process.stderr, "stderr", err, ctx.emit)),
        ]
        timed_out = False
        try:
            async with asyncio.timeout(args.timeout):
                await asyncio.wait(readers)
                await process.wait()
        except TimeoutError:
            timed_out = True
            await _stop(process, readers)
        finally:
            if process.returncode is None or any(not r.done() for r in readers):
                await _reap(process, readers)  # cancelled: kill at once, then re-raise
        return _result(args, process.returncode, out, err, timed_out=timed_out)


def _result(
    args: ShellRunArgs, code: int | None, out: _Tail, err: _Tail, *, timed_out: bool
) -> ToolResult:
    if timed_out:
        head = f"timed out after {args.timeout:g} s; the command's process group was killed"
    else:
        head = f"exit code {code}"
    body = out.render("stdout") + err.render("stderr")
    return ToolResult(
        output=f"{head}\n{body}".rstrip("\n"),
        ok=code == 0 and not timed_out,
        data={
            "exit_code": code,
            "timed_out": timed_out,
            "stdout_bytes": out.total_bytes,
            "stderr_bytes": err.total_bytes,
        },
    )
