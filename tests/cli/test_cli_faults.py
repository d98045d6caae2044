"""Faults of real processes: a stalled owner (SIGSTOP) whose run a tick takes over, a server
stopped with SIGTERM mid-run and started again, a CLI killed with SIGKILL. Each run ends once,
with one ``run.final``, and is never executed twice. The stalled owner and the killed CLI run
on both store backends (``backend_env``): on PostgreSQL the fence is checked by the database
in each write's transaction, across real processes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.cli.remote import ServerClient
from agi_jupyter.records import Run, ToolResultPart
from agi_jupyter.store import Store, create_store
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn
from tests.cli.conftest import AGI, process_env
from tests.cli.test_cli_serve import wait_for_banner

pytestmark = pytest.mark.slow

STALE_AFTER = "2"  # seconds: the owners beat every 0.5 s


def _until(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def open_store(project: Path) -> Store:
    """The project's store on the test's backend (the processes get ``AGI_DATABASE_URL``)."""
    return create_store(project, database_url=os.environ.get("AGI_DATABASE_URL"))


@pytest.fixture
def on_backend(
    backend_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, project: Path
) -> Iterator[None]:
    """This test's processes, and its own reads, use the test's store backend (on
    PostgreSQL, no SQLite file appears)."""
    monkeypatch.delenv("AGI_DATABASE_URL", raising=False)
    for name, value in backend_env.items():
        monkeypatch.setenv(name, value)
    yield
    if backend_env:
        assert not (project / ".agi" / "agi.sqlite").exists()


def _runs(project: Path) -> list[Run]:
    with open_store(project) as store:
        return store.list_runs(limit=20).items


def _finals(project: Path, run_id: str) -> int:
    with open_store(project) as store:
        return len([e for e in store.list_run_events(run_id) if e.type == "run.final"])


def _stale(run: Run, seconds: float) -> bool:
    if run.heartbeat_at is None:
        return True
    beat = datetime.fromisoformat(run.heartbeat_at.replace("Z", "+00:00"))
    return beat < datetime.now(UTC) - timedelta(seconds=seconds)


def _build_owner(env: dict[str, str]) -> subprocess.Popen[str]:
    """``agi -a build`` as a real process, asked to run the slow command the fake enqueued."""
    return subprocess.Popen(
        [AGI, "-a", "build", "run the slow command"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.usefixtures("on_backend")
def test_a_stalled_owner_loses_its_run_to_a_tick_and_writes_nothing_more(
    project: Path, fake_llm: FakeLLMServer
) -> None:
    """The issue's reproduction: a shell call of a few seconds, the CLI stopped during it,
    a tick after the staleness window, then the CLI continued."""
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("shell_run", {"command": "sleep 3; echo slept"})]),
        Turn(text="answered by the process that took over"),
    )
    env = process_env(AGI_STALE_AFTER=STALE_AFTER)
    owner = _build_owner(env)
    try:
        with open_store(project) as store:
            _until("the shell call", lambda: store.list_tool_calls(session_id=None))
        os.kill(owner.pid, signal.SIGSTOP)
        try:
            (run,) = _runs(project)
            _until("a stale heartbeat", lambda: _stale(_runs(project)[0], 2.5))
            tick = subprocess.run(
                [AGI, "tick", "--json"], capture_output=True, text=True, env=env, timeout=120
            )
            assert tick.returncode == 0, tick.stderr
            assert '"recovered": 1' in tick.stdout
            assert '"executed": 1' in tick.stdout
        finally:
            os.kill(owner.pid, signal.SIGCONT)
        out, err = owner.communicate(timeout=120)
    finally:
        if owner.poll() is None:
            owner.kill()
    assert owner.returncode == 0, err
    assert "Traceback" not in err, err
    assert "answered by the process that took over" in out
    done = _runs(project)[0]
    assert (done.status, done.attempt, done.error) == ("succeeded", 2, None)
    assert _finals(project, run.id) == 1
    # one provider request before the stall, and exactly one after it: the stalled owner,
    # once continued, made none (its tool result was refused, and it stopped)
    assert len(fake_llm.requests) == 2
    with open_store(project) as store:
        messages = store.list_messages(run.session_id)
    results = [p for m in messages for p in m.parts if isinstance(p, ToolResultPart)]
    assert len(results) == 1
    assert "interrupted" in results[0].output  # the taker's answer, not the late "slept"
    assert [m.text for m in messages if m.role == "assistant" and m.text] == [
        "answered by the process that took over"
    ]


@pytest.fixture
def serve(project: Path, tmp_path: Path) -> Iterator[Callable[[], tuple[Any, ServerClient]]]:
    """Start ``agi serve`` on the project (ticking every half second); stopped after."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> tuple[subprocess.Popen[bytes], ServerClient]:
        with (tmp_path / f"serve{len(started)}.log").open("w") as log:
            process = subprocess.Popen(
                [
                    AGI,
                    "serve",
                    "--project",
                    str(project),
                    "--",
                    "--AgiExtensionApp.tick_interval=0.5",
                ],
                stdout=subprocess.PIPE,
                stderr=log,
                env=process_env(),
            )
        started.append(process)
        banner = wait_for_banner(process)
        match = re.search(r"URL\s+(http://\S+/)\?token=(\w+)", banner)
        assert match, banner
        return process, ServerClient(match.group(1), match.group(2))

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        assert process.stdout is not None
        process.stdout.close()


def test_a_server_run_survives_a_sigterm_and_finishes_after_a_restart(
    project: Path, fake_llm: FakeLLMServer, serve: Callable[[], tuple[Any, ServerClient]]
) -> None:
    fake_llm.enqueue(
        Turn(chunks=[f"word{i} " for i in range(400)], fault=Fault(stall_between_events=0.05)),
        Turn(text="finished after the restart"),
    )
    server, client = serve()
    session = client.call("POST", "sessions", {})["session"]
    received: list[dict[str, Any]] = []
    streaming = threading.Event()

    def reply() -> None:
        try:
            for event in client.stream(f"sessions/{session['id']}/messages", {"content": "go"}):
                received.append(event)
                if event["type"] == "output.text.delta":
                    streaming.set()
        except Exception as e:  # the server goes away mid-stream
            received.append({"type": "exception", "error": repr(e)})

    reader = threading.Thread(target=reply, daemon=True)
    reader.start()
    assert streaming.wait(60), received
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=60) == 0
    reader.join(timeout=30)
    (released,) = _runs(project)
    assert (released.status, released.owner, released.error) == ("queued", None, None)
    assert [e["status"] for e in received if e["type"] == "run.status"][-1] == "queued"

    server, client = serve()  # its runner resumes the run at once (no staleness to wait out)
    _until("the run to finish", lambda: _runs(project)[0].is_terminal)
    done = _runs(project)[0]
    assert (done.status, done.attempt) == ("succeeded", 2)
    assert _finals(project, done.id) == 1
    assert len(fake_llm.requests) == 2
    with open_store(project) as store:
        texts = [m.text for m in store.list_messages(done.session_id) if m.role == "assistant"]
    assert texts == ["finished after the restart"]
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=60) == 0


@pytest.mark.usefixtures("on_backend")
def test_a_killed_cli_run_is_recovered_by_a_tick(project: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(
        Turn(chunks=[f"word{i} " for i in range(400)], fault=Fault(stall_between_events=0.05)),
        Turn(text="recovered"),
    )
    env = process_env(AGI_STALE_AFTER=STALE_AFTER)
    owner = subprocess.Popen(
        [AGI, "count slowly"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        _until("the answer to stream", lambda: fake_llm.requests)
        owner.kill()  # SIGKILL: no release, the heartbeat just stops
        owner.wait(timeout=30)
    finally:
        if owner.poll() is None:
            owner.kill()
    (run,) = _runs(project)
    assert run.status == "running"
    _until("a stale heartbeat", lambda: _stale(_runs(project)[0], 2.5))
    tick = subprocess.run([AGI, "tick"], capture_output=True, text=True, env=env, timeout=120)
    assert tick.returncode == 0, tick.stderr
    done = _runs(project)[0]
    assert (done.status, done.attempt) == ("succeeded", 2)
    assert _finals(project, run.id) == 1


@pytest.mark.usefixtures("on_backend")
def test_a_cancel_of_a_cli_owned_run_during_a_tool_call_sticks(
    project: Path, fake_llm: FakeLLMServer
) -> None:
    """``agi cancel RUN`` from another process while the owning ``agi`` runs a tool: the run
    ends ``cancelled`` for good (the owner's stop queued it again, and a tick resumed it to
    ``succeeded`` with one more model request: 4 of 4 in the audit)."""
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("shell_run", {"command": "sleep 20; echo slept"})]),
        Turn(text="this answer must never be asked for"),
    )
    env = process_env(AGI_STALE_AFTER=STALE_AFTER)
    owner = _build_owner(env)
    try:
        with open_store(project) as store:
            _until(
                "the shell call to run",
                lambda: [
                    c for c in store.list_tool_calls(session_id=None) if c.status == "running"
                ],
            )
        (run,) = _runs(project)
        cancel = subprocess.run(
            [AGI, "cancel", run.id], capture_output=True, text=True, env=env, timeout=120
        )
        assert cancel.returncode == 0, cancel.stderr
        _, err = owner.communicate(timeout=120)
    finally:
        if owner.poll() is None:
            owner.kill()
    assert owner.returncode == 130, err
    assert "Traceback" not in err, err
    tick = subprocess.run([AGI, "tick", "--json"], capture_output=True, text=True, env=env)
    assert tick.returncode == 0, tick.stderr
    done = _runs(project)[0]
    assert done.status == "cancelled"
    assert len(fake_llm.requests) == 1, "no model request after the cancel"
    assert _finals(project, run.id) == 1
