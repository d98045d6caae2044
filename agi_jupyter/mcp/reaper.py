"""No orphaned MCP servers: stdio servers end with the process that started them.

A stdio server runs in a process group of its own (the SDK starts it in a new session), so a
signal to its owner does not reach it, and a server stuck in a call does not notice its stdin
closing. Every server we start carries a mark in its environment,
``AGI_MCP_OWNER=<pid>:<start>:<project>`` (the owner's pid and start time, so a reused pid is not
mistaken for it, and the project), which whatever it starts in turn (``npx`` -> ``node`` -> ...)
inherits. Then:

- **SIGTERM** to the owner: ``install_sigterm`` chains a handler that ends the processes marked
  with the owner's own mark (SIGTERM, then SIGKILL to those still there after a grace), then
  does what the signal did before (the previous handler, or the default: the process ends).
- **SIGKILL** (or any death without a handler): the next start of an MCP server in the project
  (``sweep``) ends the project's marked processes whose owner is no longer alive.
- A graceful close goes through the SDK (close stdin, SIGTERM the group, SIGKILL), as before.

Reads ``/proc`` (Linux); elsewhere the marks are set but nothing is found, and only the graceful
close applies.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

log = logging.getLogger(__name__)

OWNER_VARIABLE = "AGI_MCP_OWNER"
GRACE = 1.0  # seconds between SIGTERM and SIGKILL
_PROC = Path("/proc")
_installed = threading.Lock()
_previous: Any = None
_done = False


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22)."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 and fields[0] != "Z" else None


def owner_mark(project: Path, pid: int | None = None) -> str:
    """The mark of the servers a process (this one) starts for ``project``."""
    return f"{_owner(os.getpid() if pid is None else pid)}:{project}"


def _owner(pid: int) -> str:
    return f"{pid}:{_start_time(pid) or '?'}"


def _parts(mark: str) -> tuple[str, str]:
    """A mark's owner (``<pid>:<start>``) and project."""
    pid, _, rest = mark.partition(":")
    start, _, project = rest.partition(":")
    return f"{pid}:{start}", project


def _alive(owner: str) -> bool:
    pid, _, start = owner.partition(":")
    return pid.isdigit() and _start_time(int(pid)) == start


def marked() -> Iterator[tuple[int, str]]:
    """Every live process carrying a mark (not this one): its pid and the mark."""
    prefix = f"{OWNER_VARIABLE}=".encode()
    me = os.getpid()
    try:
        entries = list(_PROC.iterdir())
    except OSError:
        return
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or another user's
            continue
        for item in environ.split(b"\0"):
            if item.startswith(prefix):
                yield int(entry.name), item[len(prefix) :].decode(errors="replace")
                break


def end(pids: list[int], grace: float = GRACE) -> list[int]:
    """SIGTERM each process and its group (never ours), SIGKILL what is left after ``grace``;
    the pids that were signalled."""
    if not pids:
        return []
    ours = os.getpgrp()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            _signal(pid, sig, ours)
        if sig == signal.SIGTERM:
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and any(_start_time(p) for p in pids):
                time.sleep(0.02)
            pids = [p for p in pids if _start_time(p) is not None]
            if not pids:
                break
    return pids


def _signal(pid: int, sig: signal.Signals, ours: int) -> None:
    try:
        group = os.getpgid(pid)
        if group != ours:
            os.killpg(group, sig)
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def sweep(project: Path) -> list[int]:
    """End the project's marked processes whose owner is gone (killed without a chance to
    clean up)."""
    orphans = [
        pid
        for pid, (owner, where) in ((p, _parts(m)) for p, m in marked())
        if where == str(project) and not _alive(owner)
    ]
    if orphans:
        log.warning("ending %d MCP server process(es) left by a process that died", len(orphans))
        end(orphans)
    return orphans


def end_own() -> list[int]:
    """End the marked processes this process started (and what they started)."""
    mine = _owner(os.getpid())
    pids = [pid for pid, mark in marked() if _parts(mark)[0] == mine]
    end(pids)
    return pids


def install_sigterm() -> bool:
    """Chain the SIGTERM handler (once per process, from the main thread only); whether it is
    in place."""
    global _previous, _done
    with _installed:
        if _done:
            return True
        if threading.current_thread() is not threading.main_thread():
            return False
        _previous = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, _on_sigterm)
        _done = True
        return True


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    try:
        end_own()
    finally:
        previous = _previous
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
