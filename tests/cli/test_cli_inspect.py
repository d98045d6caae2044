"""Inspection commands: tables by default, valid ``--json``, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn
from tests.cli.conftest import RunCli


@pytest.fixture
def finished(agi: Agi, fake_llm: FakeLLMServer) -> tuple[str, str]:
    """A session with one finished run that called a tool: (session id, run id)."""
    (agi.project / "a.txt").write_text("alpha\n")
    fake_llm.enqueue(
        Turn(text="Looking.", tool_calls=[FakeToolCall("fs_list", {"path": "."})]),
        Turn(text="There is a.txt."),
    )
    ses = agi.new_session(agent="plan", title="Files")
    result = agi.ask("Which files?", session=ses.id)
    return ses.id, result.run_id


def json_of(run_cli: RunCli, *args: str) -> object:
    result = run_cli(*args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_sessions(run_cli: RunCli, finished: tuple[str, str]) -> None:
    session_id, _ = finished

    table = run_cli("sessions")
    (row,) = json_of(run_cli, "sessions")  # type: ignore[misc]

    header, _, line = table.stdout.splitlines()[:3]
    assert header.split()[:4] == ["id", "title", "agent", "model"]
    assert line.split()[:4] == [session_id, "Files", "plan", "fake:echo"]
    assert (row["id"], row["title"], row["message_count"]) == (session_id, "Files", 4)


def test_sessions_of_an_empty_project(run_cli: RunCli) -> None:
    result = run_cli("sessions")

    assert result.exit_code == 0
    assert result.stdout == ""
    assert "no sessions yet" in result.stderr
    assert json_of(run_cli, "sessions") == []


def test_show_simple_and_full(run_cli: RunCli, finished: tuple[str, str]) -> None:
    session_id, _ = finished

    simple = run_cli("show", session_id).stdout
    full = run_cli("show", session_id, "--full").stdout
    data = json_of(run_cli, "show", session_id, "--full")

    assert "Which files?" in simple
    assert "There is a.txt." in simple
    assert "[fs.list]" not in simple
    assert '[fs.list] {"path": "."}' in full
    assert "[fs.list] ok: a.txt" in full
    assert isinstance(data, dict)
    assert data["session"]["id"] == session_id
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "tool", "assistant"]


def test_runs_and_run(run_cli: RunCli, finished: tuple[str, str]) -> None:
    session_id, run_id = finished

    rows = json_of(run_cli, "runs", session_id)
    everything = json_of(run_cli, "runs")
    detail = json_of(run_cli, "run", run_id)
    human = run_cli("run", run_id).stdout

    assert isinstance(rows, list)
    assert [r["id"] for r in rows] == [run_id]
    assert everything == rows
    assert run_id in run_cli("runs").stdout
    assert isinstance(detail, dict)
    assert detail["run"]["status"] == "succeeded"
    assert [c["name"] for c in detail["tool_calls"]] == ["fs.list"]
    assert "status         succeeded" in human
    assert "fs.list" in human


def test_events_and_follow(run_cli: RunCli, finished: tuple[str, str]) -> None:
    _, run_id = finished

    lines = run_cli("events", run_id).stdout.splitlines()
    ndjson = [json.loads(line) for line in run_cli("events", run_id, "--json").stdout.splitlines()]
    followed = [
        json.loads(line)
        for line in run_cli(
            "events", run_id, "--follow", "--json", "--after", "3"
        ).stdout.splitlines()
    ]

    assert "run.meta" in lines[0]
    assert "run.final" in lines[-1]
    assert any("tool.call.output" in line and "fs.list ok" in line for line in lines)
    assert ndjson[0]["type"] == "run.meta"
    assert ndjson[-1]["type"] == "run.final"
    assert [e["seq"] for e in followed] == [e["seq"] for e in ndjson if e["seq"] > 3]


def test_cancel_and_tick(run_cli: RunCli, agi: Agi) -> None:
    queued = agi.submit("later", start=False)
    other = agi.submit("run me on tick", start=False)

    cancelled = run_cli("cancel", queued.id)
    again = run_cli("cancel", queued.id)
    ticked = json_of(run_cli, "tick")

    assert cancelled.stdout == f"{queued.id} cancelled\n"
    assert again.exit_code == 2
    assert again.stderr == f"agi: run {queued.id} has already ended\n"
    assert isinstance(ticked, dict)
    assert ticked["executed"] == 1
    assert agi.run(other.id).status == "succeeded"
    assert "executed" in run_cli("tick").stdout


def test_artifacts_and_artifact(
    run_cli: RunCli, agi: Agi, finished: tuple[str, str], tmp_path: Path
) -> None:
    session_id, run_id = finished
    text = agi.store.create_artifact(
        "file",
        run_id=run_id,
        session_id=session_id,
        title="notes",
        mime="text/plain",
        text="hello\n",
    )
    binary = agi.store.create_artifact("file", run_id=run_id, mime="image/png", content=b"\x89PNG")

    listed = json_of(run_cli, "artifacts", run_id)
    table = run_cli("artifacts", run_id).stdout
    shown = run_cli("artifact", text.id)
    opaque = run_cli("artifact", binary.id)
    saved = run_cli("artifact", binary.id, "--save", str(tmp_path / "out.png"))
    meta = json_of(run_cli, "artifact", text.id)

    assert isinstance(listed, list)
    assert {a["id"] for a in listed} == {text.id, binary.id}
    assert "notes" in table
    assert shown.stdout == "hello\n"
    assert opaque.stdout == ""
    assert "--save" in opaque.stderr
    assert (tmp_path / "out.png").read_bytes() == b"\x89PNG"
    assert "saved 4 bytes" in saved.stderr
    assert isinstance(meta, dict)
    assert (meta["id"], meta["content"]) == (text.id, "hello\n")
    assert run_cli("artifact", "art_missing").exit_code == 2


def test_tasks(run_cli: RunCli, agi: Agi) -> None:
    agi.store.create_task("Write the report", details="by Friday")
    done = agi.store.create_task("Read the data")
    agi.store.update_task(done.id, status="done")

    rows = json_of(run_cli, "tasks")
    only_done = json_of(run_cli, "tasks", "--status", "done")

    assert isinstance(rows, list)
    assert {t["title"] for t in rows} == {"Write the report", "Read the data"}
    assert [t["title"] for t in only_done] == ["Read the data"]  # type: ignore[union-attr]
    assert "Write the report" in run_cli("tasks").stdout


def test_stats(run_cli: RunCli, finished: tuple[str, str]) -> None:
    data = json_of(run_cli, "stats")
    human = run_cli("stats").stdout

    assert isinstance(data, dict)
    assert (data["sessions"], data["runs"], data["tool_calls"]) == (1, 1, 1)
    assert "tool_calls_by_name  fs.list 1" in human
    assert data["budgets"] == []


def test_stats_show_what_every_budget_spent_and_has_left(
    run_cli: RunCli, agi: Agi, project: Path
) -> None:
    (project / ".agi" / "config.json").write_text(
        json.dumps({"budgets": {"notebooks": {"a.ipynb": {"max_tokens": 1000}}}})
    )
    session = agi.new_session(budget={"max_tokens": 500, "max_usd": 0.5})
    agi.store.add_session_usage(session.id, input_tokens=100, output_tokens=20, cost_usd=0.01)
    mine = agi.new_session(notebook_path="a.ipynb")
    agi.store.add_session_usage(mine.id, input_tokens=7, output_tokens=3, cost_usd=0.0)

    data = json_of(run_cli, "stats")
    human = run_cli("stats").stdout

    assert isinstance(data, dict)
    own, notebook = data["budgets"]
    assert (own["session_id"], own["spent_tokens"], own["remaining_tokens"]) == (
        session.id,
        120,
        380,
    )
    assert own["remaining_usd"] == pytest.approx(0.49)
    assert (notebook["notebook_path"], notebook["remaining_tokens"]) == ("a.ipynb", 990)
    assert f"{session.id} session budget: 120/500 tokens, $0.0100/$0.5" in human
    assert "(380 tokens, $0.4900 left)" in human
    assert "notebook a.ipynb budget: 10/1000 tokens (990 tokens left)" in human


def test_tools_and_agents(run_cli: RunCli) -> None:
    tools = json_of(run_cli, "tools", "--agent", "plan")
    agents = json_of(run_cli, "agents")

    assert isinstance(tools, list)
    assert {t["name"] for t in tools} == {
        "fs.read", "fs.list", "fs.search", "sql.query", "tasks", "notebook.read"
    }  # fmt: skip
    assert all(t["read_only"] and t["parameters"]["type"] == "object" for t in tools)
    assert "shell.run" in run_cli("tools").stdout
    assert isinstance(agents, list)
    assert {a["name"]: a["default"] for a in agents}["general"] is True
    assert "general (default)" in run_cli("agents").stdout
    assert run_cli("tools", "--agent", "nope").exit_code == 2


def test_sdks(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGI_CODEX_BIN", "/nonexistent/codex")
    sdks = {s["id"]: s for s in json_of(run_cli, "sdks")}
    assert set(sdks) == {"native", "claude", "codex", "acp"}  # not the internal "external"
    assert sdks["acp"]["available"] is False  # no ACP agent configured
    assert sdks["native"]["default"] is True
    assert sdks["native"]["available"] is True
    assert sdks["claude"]["capabilities"]["interrupt"] is True
    table = run_cli("sdks").stdout
    assert "native (default)" in table
    assert "Claude Agent SDK" in table


def test_ask_sdk_option_names_a_new_session(run_cli: RunCli) -> None:
    assert run_cli("ask", "--sdk", "pi", "hello").exit_code == 2
    both = run_cli("ask", "--sdk", "native", "--continue", "hello")
    assert both.exit_code == 2
    assert "--sdk applies to a new session" in both.stderr
    done = run_cli("ask", "--sdk", "native", "--json", "hello")
    assert done.exit_code == 0, done.output
    sessions = json_of(run_cli, "sessions")
    assert sessions[0]["sdk"] == "native"


def test_models(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-models")
    data = json_of(run_cli, "models")
    only = json_of(run_cli, "models", "--provider", "anthropic")
    human = run_cli("models").stdout

    assert isinstance(data, dict)
    configured = {p["name"]: p["configured"] for p in data["providers"]}
    assert (configured["anthropic"], configured["openai"], configured["fake"]) == (
        True,
        False,
        True,
    )
    assert data["default_model"] == "anthropic:claude-sonnet-4-6"
    assert any(m["model"] == "gpt-5-mini" for m in data["models"])
    assert isinstance(only, dict)
    assert {m["vendor"] for m in only["models"]} == {"anthropic"}
    assert "openai:gpt-5-mini" in human
    assert "sk-test-models" not in human + json.dumps(data)


def test_unknown_ids_are_one_line_errors(run_cli: RunCli) -> None:
    for args in (["show", "ses_x"], ["run", "run_x"], ["events", "run_x"], ["runs", "ses_x"]):
        result = run_cli(*args)
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1
        assert "not found" in result.stderr


def test_follow_a_run_executing_elsewhere(
    run_cli: RunCli, agi: Agi, fake_llm: FakeLLMServer
) -> None:
    """The CLI's own ``Agi`` sees the run only through the store, as from another process."""
    fake_llm.enqueue(
        Turn(chunks=[f"w{i} " for i in range(20)], fault=Fault(stall_between_events=0.05))
    )
    run = agi.submit("slow")

    followed = run_cli("events", run.id, "--follow", "--json")

    events = [json.loads(line) for line in followed.stdout.splitlines()]
    assert events[0]["type"] == "run.meta"
    assert (events[-1]["type"], events[-1]["run"]["status"]) == ("run.final", "succeeded")
    assert agi.run(run.id).status == "succeeded"


@pytest.mark.parametrize("command", ["sessions", "setup", "serve", "models"])
def test_a_missing_project_folder_is_refused(run_cli: RunCli, tmp_path: Path, command: str) -> None:
    missing = tmp_path / "typo"

    result = run_cli(command, "--project", str(missing))

    assert result.exit_code == 2
    assert result.stderr == f"agi: project folder {missing} does not exist\n"
    assert not missing.exists()


def test_show_and_export_give_a_large_argument_whole(
    run_cli: RunCli, agi: Agi, fake_llm: FakeLLMServer
) -> None:
    """A 300 KB argument, stored once (``store/values.py``), reads back whole at the CLI."""
    arg = "".join(chr(ord("a") + i % 26) for i in range(300_000))
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_write", {"path": "big.txt", "content": arg})]),
        Turn(text="Written."),
    )
    ses = agi.new_session(agent="build")
    agi.ask("Write it.", session=ses.id)

    data = json_of(run_cli, "show", ses.id, "--full")
    assert isinstance(data, dict)
    calls = [p for m in data["messages"] for p in m["parts"] if p["type"] == "tool_call"]
    assert [c["arguments"] for c in calls] == [{"path": "big.txt", "content": arg}]
    exported = run_cli("export", ses.id, "--to", "-")
    assert exported.exit_code == 0, exported.stderr
    assert arg in exported.stdout  # the notebook's cells hold the call's arguments
