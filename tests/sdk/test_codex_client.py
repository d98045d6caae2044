"""The real ``codex`` CLI (``codex exec --json``) against the fake LLM server, through ``Agi``.

Codex speaks the Responses API (streaming) to the fake server's ``/v1/responses``; the fake
model calls codex's own tools by their wire names (``exec_command`` with ``{"cmd": ...}``;
file edits are ``apply_patch`` heredocs through it, which codex turns into ``file_change``
items). Skipped only when the CLI is missing outside CI (``scripts/install.sh`` installs it
into the venv); in CI a missing CLI fails.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.errors import SdkNotAvailable
from agi_jupyter.providers.base import Usage
from agi_jupyter.providers.catalog import cost_usd
from agi_jupyter.records import Session, TextPart, ToolResultPart
from agi_jupyter.sdk.codex.adapter import CodexAdapter
from agi_jupyter.sdk.codex.binary import find_codex
from agi_jupyter.sdk.codex.home import codex_home
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn

pytestmark = pytest.mark.slow

KEY = "sk-test-openai-secret-0001"
MakeAgi = Callable[..., Agi]


@pytest.fixture(scope="module")
def codex_bin() -> Path:
    try:
        return find_codex(os.environ)
    except SdkNotAvailable:
        if os.environ.get("CI"):
            pytest.fail("the codex CLI is missing in CI: scripts/install.sh installs it")
        pytest.skip("the codex CLI is not installed (scripts/install.sh installs it)")


@pytest.fixture
def make_codex_agi(
    tmp_path: Path, project: Path, fake_llm: FakeLLMServer, codex_bin: Path
) -> Iterator[MakeAgi]:
    made: list[Agi] = []

    def make(*, base_url: str | None = None, **config: Any) -> Agi:
        env = {
            "HOME": str(tmp_path / "home"),
            "PATH": os.environ.get("PATH", os.defpath),
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": base_url or fake_llm.openai_base_url,
            "AGI_CODEX_BIN": str(codex_bin),
        }
        agi = Agi(project, env=env, config={"retry_backoff": [0.01], **config})
        agi.sdk.adapters["codex"] = CodexAdapter(env=env, strict_config=True, stop_grace=2.0)
        made.append(agi)
        return agi

    yield make
    for agi in made:
        agi.close()


def _session(agi: Agi, *, agent: str = "general", **options: Any) -> Session:
    return agi.new_session(sdk="codex", model="openai:gpt-5", agent=agent, **options)


def _model_requests(fake: FakeLLMServer) -> list[Any]:
    return [r for r in fake.requests if r.path.endswith("/responses")]


def _user_texts(body: dict[str, Any]) -> list[str]:
    return [
        part.get("text", "")
        for item in body["input"]
        if item.get("type") == "message" and item.get("role") == "user"
        for part in item["content"]
    ]


def _turn_metadata(request: Any) -> dict[str, Any]:
    return dict(json.loads(request.headers["x-codex-turn-metadata"]))


def _processes_mentioning(text: str) -> list[str]:
    """Live processes whose command line contains ``text`` (zombies have none)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, UnicodeDecodeError):
            continue
        if text in cmdline:
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


def _wait_until(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_codex_plain_answer(
    make_codex_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    agi = make_codex_agi()
    ses = _session(agi, system_prompt="Always answer in one line.")
    fake_llm.enqueue(Turn(text="Hello from codex.", usage=(120, 7)))
    started = time.monotonic()
    result = agi.ask("Say hello", session=ses.id)
    elapsed = time.monotonic() - started
    assert result.run.status == "succeeded", result.run.error
    assert result.text == "Hello from codex."
    user, assistant = agi.store.list_messages(ses.id)
    assert (user.role, user.text) == ("user", "Say hello")
    assert (assistant.role, assistant.text) == ("assistant", "Hello from codex.")
    expected_cost = cost_usd("openai", "gpt-5", Usage(input_tokens=120, output_tokens=7))
    assert assistant.meta["model"] == "gpt-5"
    assert assistant.meta["provider"] == "openai"
    assert assistant.meta["sdk"] == "codex"
    assert assistant.meta["usage"] == {"input_tokens": 120, "output_tokens": 7}
    assert assistant.meta["cost_usd"] == pytest.approx(expected_cost)
    assert result.run.usage == {"input_tokens": 120, "output_tokens": 7}
    assert result.run.cost_usd == pytest.approx(expected_cost)
    state = agi.session(ses.id).metadata["sdk_state"]["codex"]
    assert state["thread_id"] == assistant.meta["codex"]["thread_id"]

    (request,) = _model_requests(fake_llm)
    body = request.body
    assert body["model"] == "gpt-5"
    assert body["stream"] is True
    assert _user_texts(body)[-1] == "Say hello"
    developer = [
        part["text"]
        for item in body["input"]
        if item.get("role") == "developer"
        for part in item["content"]
    ]
    assert any("Always answer in one line." in text for text in developer)
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert _turn_metadata(request)["sandbox_mode"] == "read-only"  # "general" has no tools

    # The key reached codex through its environment only: not in its home, the store, events.
    home = codex_home(project)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "config.toml").stat().st_mode) == 0o600
    assert KEY not in (home / "config.toml").read_text()
    assert KEY not in json.dumps([e.payload for e in agi.store.list_run_events(result.run.id)])
    assert KEY not in json.dumps(agi.session(ses.id).metadata)
    print(f"codex plain answer: {elapsed:.2f}s")


def test_codex_shell_tool_loop(
    make_codex_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    (project / "notes.txt").write_text("the notes say hello\n")
    agi = make_codex_agi()
    ses = _session(agi, agent="build")
    fake_llm.enqueue(
        Turn(
            text="Reading the notes.",
            reasoning="The answer is in notes.txt.",
            tool_calls=[FakeToolCall("exec_command", {"cmd": "cat notes.txt"})],
        ),
        Turn(text="They say hello."),
    )
    events = list(agi.stream("What do the notes say?", session=ses.id))
    assert events[-1]["run"]["status"] == "succeeded", events[-1]["run"]["error"]
    types = [e["type"] for e in events]
    assert types.count("tool.call.started") == 1
    assert types.index("tool.call.started") < types.index("tool.call.output")

    (row,) = agi.store.list_tool_calls(session_id=ses.id)
    assert (row.name, row.status, row.is_error) == ("shell", "completed", False)
    assert "cat notes.txt" in row.args["command"]
    assert row.result["exit_code"] == 0
    roles = [m.role for m in agi.store.list_messages(ses.id)]
    assert roles == ["user", "assistant", "tool", "assistant"]
    tool_message = agi.store.list_messages(ses.id)[2]
    (part,) = tool_message.parts
    assert isinstance(part, ToolResultPart)
    assert part.tool_call_id == row.tool_call_id
    assert "the notes say hello" in part.output

    first, second = _model_requests(fake_llm)
    assert _turn_metadata(first)["sandbox_mode"] == "workspace-write"  # "build" writes
    outputs = [i for i in second.body["input"] if i.get("type") == "function_call_output"]
    assert len(outputs) == 1
    assert "the notes say hello" in outputs[0]["output"]
    assert {t.get("name") for t in first.body["tools"]} >= {"exec_command"}


def test_codex_file_change_artifact(
    make_codex_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    (project / "notes.txt").write_text("hello notes\nline2\n")
    patch = (
        "*** Begin Patch\n*** Add File: hello.txt\n+hi there\n"
        "*** Update File: notes.txt\n@@\n hello notes\n-line2\n+line two\n*** End Patch\n"
    )
    agi = make_codex_agi()
    ses = _session(agi, agent="build")
    fake_llm.enqueue(
        Turn(
            tool_calls=[FakeToolCall("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}EOF\n"})]
        ),
        Turn(text="Done."),
    )
    result = agi.ask("Add hello.txt and fix line two", session=ses.id)
    assert result.run.status == "succeeded", result.run.error
    assert (project / "hello.txt").read_text() == "hi there\n"
    assert (project / "notes.txt").read_text() == "hello notes\nline two\n"
    (row,) = agi.store.list_tool_calls(session_id=ses.id)
    assert (row.name, row.status) == ("apply_patch", "completed")
    assert row.args == {
        "changes": [{"path": "hello.txt", "kind": "add"}, {"path": "notes.txt", "kind": "update"}]
    }
    (artifact,) = agi.store.list_artifacts(run_id=result.run.id)
    assert artifact.kind == "file_diff"
    assert artifact.data is not None
    assert artifact.data["summary"] == {"files": 2, "additions": None, "deletions": None}


def test_codex_resume_carries_the_conversation(
    make_codex_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_codex_agi()
    ses = _session(agi)
    fake_llm.enqueue(
        Turn(text="First answer", usage=(100, 10)), Turn(text="Second answer", usage=(200, 20))
    )
    first = agi.ask("first question", session=ses.id)
    thread_id = agi.session(ses.id).metadata["sdk_state"]["codex"]["thread_id"]
    second = agi.ask("second question", session=ses.id)
    assert (first.text, second.text) == ("First answer", "Second answer")
    assert agi.session(ses.id).metadata["sdk_state"]["codex"]["thread_id"] == thread_id

    _, request = _model_requests(fake_llm)
    assert _user_texts(request.body)[-2:] == ["first question", "second question"]
    replies = [
        part["text"]
        for item in request.body["input"]
        if item.get("role") == "assistant"
        for part in item["content"]
    ]
    assert replies == ["First answer"]
    assert _turn_metadata(request)["thread_id"] == thread_id
    # codex reports the thread's totals (300/30); the run is charged its own share.
    assert second.run.usage == {"input_tokens": 200, "output_tokens": 20}
    assert agi.session(ses.id).input_tokens == 300
    assert [m.role for m in agi.store.list_messages(ses.id)] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_codex_cancel_kills_the_process(
    make_codex_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    agi = make_codex_agi()
    ses = _session(agi, agent="build")
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("exec_command", {"cmd": "sleep 41.7"})]),
        Turn(text="never reached"),
    )
    run_id = ""
    seen: list[str] = []
    for event in agi.stream("wait a while", session=ses.id):
        run_id = event["run_id"]
        seen.append(event["type"])
        if event["type"] == "tool.call.started":
            assert _wait_until(lambda: bool(_processes_mentioning("sleep 41.7")))
            started = time.monotonic()
            agi.cancel(run_id)
            cancel_time = time.monotonic() - started
    assert "tool.call.started" in seen
    assert agi.run(run_id).status == "cancelled"
    assert cancel_time < 5
    assert _wait_until(lambda: not _processes_mentioning(str(project)), 5.0), _processes_mentioning(
        str(project)
    )
    assert _wait_until(lambda: not _processes_mentioning("sleep 41.7"), 5.0)
    # The interrupted call was answered, so the stored conversation stays valid.
    messages = agi.store.list_messages(ses.id)
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    result = messages[-1].parts[0]
    assert isinstance(result, ToolResultPart)
    assert result.is_error


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_codex_server_down_fails_and_retries_bounded(make_codex_agi: MakeAgi) -> None:
    agi = make_codex_agi(base_url=f"http://127.0.0.1:{_closed_port()}/v1", max_attempts=2)
    ses = _session(agi, metadata={"codex": {"reconnect_limit": 1, "timeout": 30}})
    started = time.monotonic()
    events = list(agi.stream("anyone there?", session=ses.id))
    elapsed = time.monotonic() - started
    run = agi.run(events[-1]["run_id"])
    assert run.status == "failed"
    assert run.attempt == 2
    assert run.error is not None
    assert run.error["code"] == "PROVIDER_DISCONNECTED"
    assert "Reconnecting" in run.error["message"]
    retried = [e for e in events if e["type"] == "error" and e["retryable"]]
    assert len(retried) == 1
    assert elapsed < 20
    assert KEY not in json.dumps(run.error)
    print(f"codex server down, 2 attempts: {elapsed:.2f}s")


def test_codex_timeout_stops_a_stalled_run(make_codex_agi: MakeAgi, project: Path) -> None:
    # A server that accepts connections (the kernel's backlog) and never answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        agi = make_codex_agi(base_url=f"http://127.0.0.1:{port}/v1", max_attempts=1)
        ses = _session(agi, metadata={"codex": {"timeout": 1.5}})
        started = time.monotonic()
        result = agi.ask("hello?", session=ses.id)
        elapsed = time.monotonic() - started
    assert result.run.status == "failed"
    assert result.run.error is not None
    assert "did not finish within 1.5 s" in result.run.error["message"]
    assert elapsed < 5
    assert _wait_until(lambda: not _processes_mentioning(str(project)), 5.0)


def test_codex_http_error_is_retried_with_the_thread(
    make_codex_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_codex_agi(max_attempts=2)
    ses = _session(agi)
    fake_llm.enqueue(Turn(fault=Fault(status=500)), Turn(text="recovered"))
    events = list(agi.stream("try", session=ses.id))
    run = agi.run(events[-1]["run_id"])
    assert run.status == "succeeded", run.error
    assert run.attempt == 2
    retried = [e for e in events if e["type"] == "error"]
    assert [e["retryable"] for e in retried] == [True]
    first, second = _model_requests(fake_llm)
    assert _turn_metadata(first)["thread_id"] == _turn_metadata(second)["thread_id"]
    assert agi.result(run.id).text == "recovered"


def test_codex_bad_request_fails_without_retry(
    make_codex_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_codex_agi(max_attempts=3)
    ses = _session(agi)
    fake_llm.enqueue(Turn(fault=Fault(status=400)))
    result = agi.ask("bad", session=ses.id)
    assert result.run.status == "failed"
    assert result.run.attempt == 1
    assert result.run.error is not None
    assert result.run.error["code"] == "PROVIDER_ERROR"
    assert "(fake) error 400" in result.run.error["message"]


@pytest.mark.parametrize("queue_mode", ["queue", "interrupt"])
def test_codex_second_message_waits_as_a_queued_run(
    make_codex_agi: MakeAgi, fake_llm: FakeLLMServer, queue_mode: str
) -> None:
    # Codex can neither take a message into its turn nor stop it cleanly: in both modes the
    # message waits in the durable run queue (seed 003's fallback matrix).
    agi = make_codex_agi()
    ses = _session(agi, queue_mode=queue_mode)
    assert not agi.sdk.adapter("codex").capabilities.queue_while_streaming
    fake_llm.enqueue(
        Turn(text="first answer", fault=Fault(delay_before_headers=1.0)),
        Turn(text="second answer"),
    )
    first = agi.submit("first question", session=ses.id)
    assert _wait_until(lambda: agi.run(first.id).status == "running")
    second = agi.submit("second question", session=ses.id)
    assert second.id != first.id
    assert agi.run(second.id).status == "queued"
    list(agi.follow(second.id))
    one, two = agi.run(first.id), agi.run(second.id)
    assert (one.status, two.status) == ("succeeded", "succeeded")
    assert one.completed_at is not None
    assert two.started_at is not None
    assert one.completed_at <= two.started_at
    messages = agi.store.list_messages(ses.id)
    assert [(m.role, m.text) for m in messages] == [
        ("user", "first question"),
        ("assistant", "first answer"),
        ("user", "second question"),
        ("assistant", "second answer"),
    ]
    _, request = _model_requests(fake_llm)
    assert _user_texts(request.body)[-2:] == ["first question", "second question"]
    assert isinstance(messages[0].parts[0], TextPart)
