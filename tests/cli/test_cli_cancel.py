"""Ctrl-C during ``agi "<prompt>"`` cancels the run cleanly: exit 130, one line, run cancelled.

A real ``agi`` process streams a slow fake turn; the test sends SIGINT once text arrived."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from pathlib import Path

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from tests.cli.conftest import AGI, process_env

SLOW = Turn(chunks=[f"word{i} " for i in range(300)], fault=Fault(stall_between_events=0.05))


def start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [AGI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=process_env()
    )


def read_until(proc: subprocess.Popen[bytes], marker: bytes, timeout: float = 30) -> bytes:
    """Read stdout until ``marker`` appears (bounded wait)."""
    assert proc.stdout is not None
    seen = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while marker not in seen:
            left = deadline - time.monotonic()
            assert left > 0, f"no {marker!r} in time; got {seen[-300:]!r}"
            if selector.select(left):
                chunk = os.read(proc.stdout.fileno(), 65536)
                assert chunk, f"stdout closed early; got {seen[-300:]!r}"
                seen += chunk
    return seen


def interrupt(proc: subprocess.Popen[bytes]) -> tuple[bytes, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return out, err.decode()


def test_ctrl_c_cancels_the_run(fake_llm: FakeLLMServer, project: Path) -> None:
    fake_llm.enqueue(SLOW)
    proc = start("count slowly")

    read_until(proc, b"word3 ")
    _, err = interrupt(proc)

    assert proc.returncode == 130
    assert err.count("agi:") == 1
    assert err.splitlines()[-1].startswith("agi: run run_")
    assert err.splitlines()[-1].endswith(" cancelled")
    with Agi(project) as agi:
        (run,) = agi.runs().items
        assert run.status == "cancelled"
        assert run.error == {"code": "RUN_CANCELLED", "message": "the run was cancelled"}


def test_ctrl_c_in_json_mode_ends_the_stream_with_run_final(
    fake_llm: FakeLLMServer, project: Path
) -> None:
    fake_llm.enqueue(SLOW)
    proc = start("--json", "count slowly")

    seen = read_until(proc, b'"output.text.delta"')
    out, err = interrupt(proc)

    lines = [json.loads(line) for line in (seen + out).decode().splitlines()]
    assert lines[0]["type"] == "run.meta"
    assert (lines[-1]["type"], lines[-1]["run"]["status"]) == ("run.final", "cancelled")
    assert proc.returncode == 130
    assert err.count("\n") == 1
