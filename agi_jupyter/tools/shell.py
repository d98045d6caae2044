"""``shell.run``: run a command with ``/bin/sh -c`` in the project, streaming its output.

The command runs in its own session and process group. When the call ends (the command
exited, timed out or was cancelled) the whole group is killed, and so is every process still in
the command's session: background children (``server &``) do not outlive the call, and a
child that still holds the output pipe does not make a finished command look "timed out". A
watchdog process (``/bin/sh`` waiting on a pipe only this process holds) kills the group too
when the owning process dies without cleaning up (``kill -9``, a crash), at any moment: the
command's first process reports its group to the watchdog itself before the command runs (see
``_Watchdog``). A process that starts a session of its own (``setsid cmd &``, ``setsid -f``)
leaves both, so the command runs with a tag of its own in the environment (``AGI_SHELL_TAG``),
which every descendant inherits: when the call ends (and in the watchdog, when the owner dies)
every process carrying the tag is killed too (Linux, ``/proc/PID/environ``). Only a process
that also clears its environment (``env -i``) escapes.

Output: chunks go to ``ctx.emit`` as ``tool.call.delta`` events, coalesced to at most one per
``LIVE_INTERVAL`` per stream and only for the first ``LIVE_LIMIT`` bytes of each. The model
gets the exit code and the tails of both streams; a stream longer than its tail is stored whole
as a ``tool_output`` artifact (written as it arrives, with its size and sha256).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import secrets
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from agi_jupyter.errors import ToolError
from agi_jupyter.records import JSON, Artifact
from agi_jupyter.store import ArtifactWriter
from agi_jupyter.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from agi_jupyter.tools.paths import resolve_in_project

DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
TAIL_CHARS = 16_000
KILL_GRACE = 2.0
CHUNK = 64 * 1024
LIVE_LIMIT = 256 * 1024  # bytes of each stream sent live; the rest only goes to the artifact
LIVE_INTERVAL = 0.05  # seconds between two live chunks of one stream
TAG = "AGI_SHELL_TAG"  # in the command's environment: its processes, wherever they moved
# The first line is the group to kill; then wait for the end of the pipe. dash's kill takes no "--".
# Then every process whose environment has the command's tag ($1: "AGI_SHELL_TAG=...").
WATCHDOG = (
    'read group || exit 0; read _ ; kill -9 -"$group" 2>/dev/null; '
    'for f in /proc/[0-9]*/environ; do grep -qzxF "$1" "$f" 2>/dev/null || continue; '
    'p=${f#/proc/}; kill -9 "${p%/environ}" 2>/dev/null; done'
)
# The command's first process ($1: the command; its stdin: the watchdog's pipe): it writes its
# pid, its group (a session and group of its own), to the watchdog, lets go of the pipe and only
# then becomes ``/bin/sh -c command`` (same pid; the command sees $0 = /bin/sh, no arguments, a
# /dev/null stdin, as before). SIGPIPE is ignored for the write alone: a watchdog killed from
# outside leaves the command unwatched, not unrun, and the command gets SIGPIPE's default back.
REPORT = 'trap "" PIPE; echo $$ >&0 2>/dev/null; trap - PIPE; exec /bin/sh -c "$1" </dev/null'


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

    def add(self, chunk: str) -> None:
        self.text += chunk
        if len(self.text) > self.limit:
            self.text = self.text[-self.limit :]
            self.dropped = True

    def render(self, name: str, artifact: Artifact | None) -> str:
        if not self.text:
            return ""
        note, text = "", self.text
        if self.dropped:
            where = f"; all of it is artifact {artifact.id}" if artifact else ""
            note = f"[... earlier output cut; {self.total_bytes} bytes in all{where} ...]\n"
            text = text.partition("\n")[2] or text  # start at a whole line
        return f"--- {name} ---\n{note}{text.rstrip(chr(10))}\n"


@dataclass
class _Live:
    """What of a stream goes out live: coalesced, and only its first ``LIVE_LIMIT`` bytes."""

    channel: str
    ctx: ToolContext
    pending: str = ""
    sent_bytes: int = 0
    last: float = -1.0
    timer: asyncio.TimerHandle | None = None
    stopped: bool = False

    def add(self, text: str, size: int) -> None:
        if self.stopped:
            return
        if self.sent_bytes + size > LIVE_LIMIT:
            self.pending += text
            self.flush()
            self.ctx.emit(self.channel, f"\n[live output stops after {LIVE_LIMIT} bytes]\n")
            self.stopped = True
            return
        self.sent_bytes += size
        self.pending += text
        loop = asyncio.get_running_loop()
        wait = self.last + LIVE_INTERVAL - loop.time()
        if wait <= 0:
            self.flush()
        elif self.timer is None:
            self.timer = loop.call_later(wait, self.flush)

    def flush(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.pending:
            text, self.pending = self.pending, ""
            self.last = asyncio.get_running_loop().time()
            self.ctx.emit(self.channel, text)


@dataclass
class _Capture:
    """One output stream: its tail for the model, its live chunks, and (once it outgrows the
    tail) the whole of it, written to an artifact as it arrives."""

    channel: str
    ctx: ToolContext
    tail: _Tail
    live: _Live
    head: bytearray = field(default_factory=bytearray)
    sink: ArtifactWriter | None = None
    artifact: Artifact | None = None

    async def add(self, data: bytes, text: str) -> None:
        self.tail.total_bytes += len(data)
        self.tail.add(text)
        self.live.add(text, len(data))
        if self.sink is None:
            self.head += data
            if not self.tail.dropped:
                return
            self.sink = self.ctx.store.open_artifact(
                "tool_output",
                run_id=self.ctx.run_id,
                session_id=self.ctx.session_id,
                title=f"shell.run {self.channel}",
                mime="text/plain",
                filename=f"{self.channel}.txt",
            )
            data, self.head = bytes(self.head), bytearray()
        await asyncio.to_thread(self.sink.write, data)

    async def finish(self) -> None:
        self.live.flush()
        if self.sink is not None:
            self.artifact = await asyncio.to_thread(self.sink.commit)
            self.sink = None

    def abort(self) -> None:
        if self.live.timer is not None:
            self.live.timer.cancel()
        if self.sink is not None:
            self.sink.abort()
            self.sink = None


async def _pump(stream: asyncio.StreamReader | None, capture: _Capture) -> None:
    if stream is None:
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        data = await stream.read(CHUNK)
        text = decoder.decode(data, final=not data)
        if data or text:
            await capture.add(data, text)
        if not data:
            return


# --- ending the command's processes --------------------------------------------------------


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _kill_tagged(tag: str) -> None:
    """SIGKILL every process whose environment holds ``tag`` (``TAG=...``), until a pass finds
    none (one may fork while the first pass reads); Linux only (``/proc``)."""
    if not sys.platform.startswith("linux"):
        return
    needle = tag.encode()
    me = os.getpid()
    for _ in range(5):
        found = False
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as handle:
                    environ = handle.read().split(b"\0")
            except OSError:
                continue
            if needle in environ:
                found = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(entry.name), signal.SIGKILL)
        if not found:
            return


def _kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid`` (those that moved to a group of their own);
    Linux only (``/proc``), elsewhere the group kill is all."""
    if not sys.platform.startswith("linux"):
        return
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if len(fields) > 3 and int(fields[3]) == sid:  # after ") ": state ppid pgrp session
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)


class _Watchdog:
    """A ``/bin/sh`` that kills the command's group once the pipe it reads is closed, which
    happens when this process dies (the pipe's write end is ours and not inherited, but by the
    command's first process for the moment it takes to report its group).

    Started before the command, it learns the group from the command's own first process
    (``REPORT``: the pipe's write end is that process's stdin), before anything of the command
    runs, rather than from this process once the spawn returned to its loop: killed between the
    fork and that return (``Popen`` waiting for the exec, the pipes connecting), the owner left
    the command running. Now, dead before the fork: the pipe ends, no group is read, the
    watchdog exits and there is no command; dead after it: the child still holds the pipe,
    writes its group, lets go, the pipe ends and the group is killed. Also considered:
    ``PR_SET_PDEATHSIG`` (kills only the first process, not its background children, and fires
    on the death of the forking *thread*), and a ``preexec_fn`` reporting the pid (Python code
    between fork and exec, unsafe with the threads this process runs)."""

    def __init__(self, process: asyncio.subprocess.Process, write_end: int, tag: str) -> None:
        self.process = process
        self.write_end = write_end  # the command's stdin at its spawn (``REPORT``)
        self.tag = tag  # ``AGI_SHELL_TAG=...``: in the command's environment

    @classmethod
    async def start(cls) -> _Watchdog:
        tag = f"{TAG}={os.getpid()}-{secrets.token_hex(8)}"
        read_end, write_end = os.pipe()
        try:
            process = await asyncio.create_subprocess_exec(
                "/bin/sh",
                "-c",
                WATCHDOG,
                "agi-shell-watchdog",
                tag,
                stdin=read_end,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,  # not in the group it kills
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        return cls(process, write_end, tag)

    async def stop(self) -> None:
        """The command is gone: stop watching (killed first, so it never kills a group id
        that a new process may have taken since)."""
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        os.close(self.write_end)
        await self.process.wait()


async def _end(
    process: asyncio.subprocess.Process,
    exited: asyncio.Future[None],
    readers: list[asyncio.Task[None]],
    *,
    tag: str,
    gentle: bool,
) -> None:
    """Kill what is left of the command (TERM first when ``gentle``), then read what the
    pipes still hold and reap the command."""
    pgid = process.pid
    if gentle and not exited.done():
        _signal_group(pgid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(exited), KILL_GRACE)
    _signal_group(pgid, signal.SIGKILL)
    _kill_session(pgid)  # the session id is the shell's pid (start_new_session)
    await asyncio.to_thread(_kill_tagged, tag)  # those that left the session (``setsid``)
    _, pending = await asyncio.wait(readers, timeout=KILL_GRACE)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    if process.returncode is None:
        await process.wait()


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The protocol of ``create_subprocess_exec``, which also tells when the process exits."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=CHUNK, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


async def _spawn(
    command: str, cwd: Path, watchdog: _Watchdog
) -> tuple[asyncio.subprocess.Process, asyncio.Future[None]]:
    """``create_subprocess_exec`` of ``/bin/sh -c command`` in its own session, its group
    reported to ``watchdog`` first (``REPORT``), and a future done when the shell exits
    (whoever still holds its output pipes)."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _Protocol(loop),
        "/bin/sh",
        "-c",
        REPORT,
        "agi-shell",
        command,
        cwd=cwd,
        env={**os.environ, TAG: watchdog.tag.split("=", 1)[1]},
        stdin=watchdog.write_end,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    return asyncio.subprocess.Process(transport, protocol, loop), protocol.exited


class ShellRun(Tool[ShellRunArgs]):
    name = "shell.run"
    description = (
        "Run a shell command (/bin/sh -c) in the project folder or a sub-folder. Output streams "
        "live; the result has the exit code and the last part of stdout and stderr."
    )
    parameters = ShellRunArgs

    def call_timeout(self, args: ShellRunArgs, default: float) -> float:
        return max(default, args.timeout + 3 * KILL_GRACE + 5)

    async def execute(self, args: ShellRunArgs, ctx: ToolContext) -> ToolResult:
        cwd = resolve_in_project(ctx.project, args.cwd)
        if not cwd.is_dir():
            raise ToolError(f"the working folder {args.cwd!r} does not exist")
        watchdog = await _Watchdog.start()
        try:
            process, exited = await _spawn(args.command, cwd, watchdog)
        except BaseException:
            await watchdog.stop()
            raise
        # Both tails together stay under the artifact threshold, so they reach the model whole.
        limit = min(TAIL_CHARS, ctx.config.artifact_threshold // 3)
        out, err = (_Capture(c, ctx, _Tail(limit), _Live(c, ctx)) for c in ("stdout", "stderr"))
        readers = [
            asyncio.create_task(_pump(process.stdout, out)),
            asyncio.create_task(_pump(process.stderr, err)),
        ]
        timed_out, finished = False, False
        try:
            try:
                # Not process.wait(): that also waits for the pipes, which a background
                # child may hold open long after the command itself is done.
                async with asyncio.timeout(args.timeout):
                    await exited
            except TimeoutError:
                timed_out = True
            await _end(process, exited, readers, tag=watchdog.tag, gentle=timed_out)
            for capture in (out, err):
                await capture.finish()
            finished = True
        finally:
            if not finished:  # cancelled: kill at once, keep nothing half written
                await _end(process, exited, readers, tag=watchdog.tag, gentle=False)
                out.abort()
                err.abort()
            await watchdog.stop()
        return _result(args, process.returncode, out, err, timed_out=timed_out)


def _result(
    args: ShellRunArgs, code: int | None, out: _Capture, err: _Capture, *, timed_out: bool
) -> ToolResult:
    if timed_out:
        head = f"timed out after {args.timeout:g} s; the command's process group was killed"
    else:
        head = f"exit code {code}"
    body = out.tail.render("stdout", out.artifact) + err.tail.render("stderr", err.artifact)
    data: JSON = {
        "exit_code": code,
        "timed_out": timed_out,
        "stdout_bytes": out.tail.total_bytes,
        "stderr_bytes": err.tail.total_bytes,
    }
    for capture in (out, err):
        if capture.artifact is not None:
            artifact = capture.artifact
            data[f"{capture.channel}_artifact"] = {
                "id": artifact.id,
                "size": artifact.size,
                "sha256": artifact.sha256,
            }
    return ToolResult(
        output=f"{head}\n{body}".rstrip("\n"),
        ok=code == 0 and not timed_out,
        data=data,
    )
