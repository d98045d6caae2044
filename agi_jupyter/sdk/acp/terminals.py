"""ACP ``terminal/*`` requests as processes we start, confined like ``shell.run``.

The caller checks the gate first (``shell.run`` offered to the agent, and the agent may write).
Here: the working folder must be inside the project (``resolve_in_project``); the command runs
in its own process group with stdout and stderr merged into one buffer capped at the request's
``outputByteLimit`` (the oldest bytes are dropped at a character boundary, and ``truncated``
says so); a terminal still running after ``deadline`` seconds (the runtime's tool timeout) is
killed, like a ``shell.run`` command, and so are all terminals when the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agi_jupyter.errors import ToolError
from agi_jupyter.tools.paths import resolve_in_project
from agi_jupyter.tools.redact import looks_secret

DEFAULT_LIMIT = 1024 * 1024
KILL_GRACE = 2.0
_ids = itertools.count(1)


@dataclass
class TerminalState:
    """What ``terminal/output`` answers."""

    output: str
    truncated: bool
    exited: bool
    exit_code: int | None = None
    signal: str | None = None


@dataclass
class _Terminal:
    process: asyncio.subprocess.Process
    limit: int
    buffer: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    reader: asyncio.Task[None] | None = None
    deadline: asyncio.TimerHandle | None = None

    def add(self, chunk: bytes) -> None:
        self.buffer += chunk
        excess = len(self.buffer) - self.limit
        if excess > 0:
            while excess < len(self.buffer) and (self.buffer[excess] & 0xC0) == 0x80:
                excess += 1  # do not start inside a UTF-8 character
            del self.buffer[:excess]
            self.truncated = True

    def state(self) -> TerminalState:
        code = self.process.returncode
        exited = code is not None and (self.reader is None or self.reader.done())
        sig = signal.Signals(-code).name if code is not None and code < 0 else None
        return TerminalState(
            output=self.buffer.decode("utf-8", errors="replace"),
            truncated=self.truncated,
            exited=exited,
            exit_code=code if code is not None and code >= 0 else None,
            signal=sig,
        )


class Terminals:
    """The terminals of one run (one ACP prompt turn and its tools)."""

    def __init__(self, project: Path, deadline: float) -> None:
        self.project = project
        self.deadline = deadline
        self._terminals: dict[str, _Terminal] = {}
        self._released: dict[str, TerminalState] = {}  # kept for the tool call's result

    async def create(
        self,
        command: str,
        args: list[str],
        env: Mapping[str, str],
        cwd: str | None,
        limit: int | None,
    ) -> str:
        folder = resolve_in_project(self.project, cwd or ".")
        if not folder.is_dir():
            raise ToolError(f"the working folder {cwd} does not exist")
        # Like the agent process itself: our environment without secret-looking variables,
        # plus what the agent asked for.
        base = {k: v for k, v in os.environ.items() if not looks_secret(k)}
        environment = {**base, **env}
        try:
            process = await asyncio.create_subprocess_exec(
                command,
                *args,
                cwd=folder,
                env=environment,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as e:
            raise ToolError(f"cannot run {command!r}: {e.strerror or e}") from None
        terminal = _Terminal(process, max(1, limit or DEFAULT_LIMIT))
        terminal.reader = asyncio.get_running_loop().create_task(_read(terminal))
        terminal.deadline = asyncio.get_running_loop().call_later(
            self.deadline, _kill_group, process
        )
        terminal_id = f"term_{next(_ids)}"
        self._terminals[terminal_id] = terminal
        return terminal_id

    def output(self, terminal_id: str) -> TerminalState:
        released = self._released.get(terminal_id)
        return released if released is not None else self._get(terminal_id).state()

    async def wait(self, terminal_id: str) -> TerminalState:
        terminal = self._get(terminal_id)
        await terminal.process.wait()
        if terminal.reader is not None:
            await terminal.reader
        return terminal.state()

    async def kill(self, terminal_id: str) -> None:
        terminal = self._get(terminal_id)
        _kill_group(terminal.process)
        await terminal.process.wait()

    async def release(self, terminal_id: str) -> None:
        terminal = self._terminals.pop(terminal_id, None)
        if terminal is not None:
            await _close(terminal)
            self._released[terminal_id] = terminal.state()

    async def close_all(self) -> None:
        terminals, self._terminals = list(self._terminals.values()), {}
        for terminal in terminals:
            await _close(terminal)

    def _get(self, terminal_id: str) -> _Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None:
            raise ToolError(f"no terminal {terminal_id!r}")
        return terminal


async def _read(terminal: _Terminal) -> None:
    stream = terminal.process.stdout
    assert stream is not None
    while chunk := await stream.read(4096):
        terminal.add(chunk)


def _kill_group(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


async def _close(terminal: _Terminal) -> None:
    if terminal.deadline is not None:
        terminal.deadline.cancel()
    _kill_group(terminal.process)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(terminal.process.wait(), KILL_GRACE)
    if terminal.reader is not None:
        terminal.reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await terminal.reader
