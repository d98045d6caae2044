"""No orphaned MCP servers, with real signals: a process running a call that hangs in a stdio
server is sent SIGTERM (the server ends with it) or SIGKILL (the server is left, and ended by
the next runtime that starts an MCP server)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agi_jupyter.mcp import reaper
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.mcp.conftest import MODEL, MakeAgi, stdio_entry, wait_until, write_mcp_json

pytestmark = pytest.mark.slow


@pytest.fixture
def backend() -> str:
    """Processes and signals, not the store: SQLite only."""
    return "sqlite"


OWNER = """
import sys
from pathlib import Path
from agi_jupyter import Agi

agi = Agi(Path(sys.argv[1]))
session = agi.new_session(agent="build", model=sys.argv[2], review_mode="auto")
agi.ask("hang", session=session.id)
"""


def _gone(pid: int) -> bool:
    return reaper._start_time(pid) is None  # exited (a zombie counts as gone)


def _owner_in_a_hung_call(
    project: Path, fake_llm: FakeLLMServer, agi_env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], int]:
    """A process whose run is in a call the stdio server never answers; the server's pid."""
    write_mcp_json(project, {"tools": stdio_entry()})
    pid_file = project / "server.pid"
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("mcp_tools_hang", {"pid_file": str(pid_file)})]))
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(project), MODEL],
        env=os.environ | agi_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert wait_until(lambda: pid_file.is_file() and pid_file.read_text(), timeout=60)
    server = int(pid_file.read_text())
    assert dict(reaper.marked())[server] == reaper.owner_mark(project, owner.pid)
    return owner, server


def test_a_hung_server_ends_with_its_owner_on_sigterm(
    project: Path, fake_llm: FakeLLMServer, agi_env: dict[str, str]
) -> None:
    owner, server = _owner_in_a_hung_call(project, fake_llm, agi_env)

    owner.send_signal(signal.SIGTERM)

    assert owner.wait(timeout=30) == -signal.SIGTERM  # it still ends as SIGTERM ends it
    assert wait_until(lambda: _gone(server), timeout=10)


def test_the_server_of_a_killed_owner_is_ended_by_the_next_start(
    project: Path, fake_llm: FakeLLMServer, agi_env: dict[str, str], make_agi: MakeAgi
) -> None:
    owner, server = _owner_in_a_hung_call(project, fake_llm, agi_env)

    owner.send_signal(signal.SIGKILL)
    owner.wait(timeout=30)
    assert not _gone(server)  # a hung server is left behind, until:

    agi = make_agi()
    tools = agi.tools("build")  # starts the project's MCP servers

    assert "mcp.tools.hang" in {t.name for t in tools}
    assert wait_until(lambda: _gone(server), timeout=10)
