"""``sdk="acp"`` sessions against a real ACP agent process written with the
``agent-client-protocol`` library (``acp_agent.py``): turns, history, files, terminals,
permissions, gating, reuse, cancel, crashes and secrets."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agi_jupyter.cli import cli
from agi_jupyter.records import ReasoningPart, TextPart, ToolCallPart
from tests.sdk.conftest import MakeAgi

pytestmark = pytest.mark.slow  # each test starts agent processes

AGENT = str(Path(__file__).parent / "acp_agent.py")


def acp_config(**extra: Any) -> dict[str, Any]:
    return {"acp": {"command": sys.executable, "args": [AGENT], **extra}, "max_attempts": 1}


@pytest.fixture
def notes(project: Path) -> Path:
    path = project / "notes.txt"
    path.write_text("the first line\nthe second line\n")
    return path


def test_an_acp_session_completes_a_turn_with_files_terminal_and_permission(
    make_agi: MakeAgi, project: Path, notes: Path
) -> None:
    agi = make_agi(config=acp_config())
    session = agi.new_session(agent="build", sdk="acp")

    result = agi.ask("please work", session=session.id)

    assert result.run.status == "succeeded", result.run.error
    assert result.text == "Turn 1: the first line"
    assert (project / "answer.txt").read_text() == "the first line\n"
    messages = agi.history(session.id, view="full")
    assert [m.role for m in messages] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    thinking = messages[1].parts[0]
    assert isinstance(thinking, ReasoningPart)
    assert thinking.text == "thinking about it"
    calls = {c.name: c for c in agi.store.list_tool_calls(run_id=result.run.id)}
    assert sorted(calls) == ["edit", "execute", "read"]
    assert calls["read"].result == "the first line"
    assert calls["read"].args == {"title": "Read notes.txt", "path": "notes.txt"}
    assert calls["edit"].status == "completed"
    assert "from the terminal" in calls["execute"].result
    assert "[exit code 0]" in calls["execute"].result
    (diff,) = agi.store.list_artifacts(run_id=result.run.id)
    assert diff.kind == "file_diff"
    assert "+the first line" in diff.data["patch"]
    answer = messages[-1]
    assert answer.meta["sdk"] == "acp"
    # the model the agent reports (a "model" config option), not the project default
    assert (answer.meta["provider"], answer.meta["model"]) == ("acp", "test-model-1")
    assert answer.meta["usage"] == {"input_tokens": 10, "output_tokens": 5}
    assert answer.meta["stop_reason"] == "end_turn"
    assert result.run.cost_usd == pytest.approx(0.01)


def test_the_agent_process_is_reused_and_costs_are_per_run(make_agi: MakeAgi, notes: Path) -> None:
    agi = make_agi(config=acp_config())
    session = agi.new_session(agent="build", sdk="acp")

    first = agi.ask("one", session=session.id)
    second = agi.ask("two", session=session.id)

    assert (first.text, second.text) == ("Turn 1: the first line", "Turn 2: the first line")
    assert second.run.cost_usd == pytest.approx(0.02 - 0.01)
    state = agi.session(session.id).metadata["sdk_state"]["acp"]
    assert state["agent"] == "test-acp-agent"
    assert state["session_id"].startswith("acp-session-1-")
    assert agi.sdk.adapter("acp").resolve_display_model(agi.session(session.id)).label == (
        "acp:test-acp-agent"
    )


def test_usage_the_agent_does_not_report_is_unknown_and_its_model_is_the_runs(
    make_agi: MakeAgi, project: Path, notes: Path
) -> None:
    agi = make_agi(config=acp_config())
    session = agi.new_session(agent="build", sdk="acp")

    measured = agi.ask("one", session=session.id)
    result = agi.ask("nousage", session=session.id)  # no usage, no cost: unknown, never 0

    assert result.run.status == "succeeded", result.run.error
    run = agi.run(result.run.id)
    assert (run.provider, run.model) == ("acp", "test-model-1")  # not the project's default
    assert run.usage == {"input_tokens": None, "output_tokens": None, "unknown_turns": 1}
    assert run.cost_usd is None
    answer = agi.history(session.id)[-1]
    assert (answer.meta["usage"], answer.meta["cost_usd"]) == (None, None)
    assert agi.session(session.id).input_tokens == 10  # the measured run's only
    listed = CliRunner().invoke(cli, ["runs", "--json", "--project", str(project)])
    rows = {r["id"]: r for r in json.loads(listed.output)}
    assert rows[run.id]["usage"]["input_tokens"] is None
    assert rows[measured.run.id]["usage"]["input_tokens"] == 10
    shown = CliRunner().invoke(cli, ["runs", "--project", str(project)]).output
    line = next(line for line in shown.splitlines() if line.startswith(run.id))
    model, _attempt, tokens, cost = re.split(r"\s{2,}", line)[3:7]
    assert (model, tokens, cost) == ("acp:test-model-1", "?/?", "?")  # unknown, never 0


def test_a_read_only_agent_gets_reads_only(make_agi: MakeAgi, project: Path, notes: Path) -> None:
    agi = make_agi(config=acp_config())
    session = agi.new_session(agent="plan", sdk="acp")

    result = agi.ask("please work outside", session=session.id)

    assert result.run.status == "succeeded", result.run.error
    assert not (project / "answer.txt").exists()
    text = " ".join(m.text for m in agi.history(session.id) if m.role == "assistant")
    assert "outside read refused" in text
    assert "outside the project" in text
    assert "terminal refused" in text
    assert "shell.run is not available to agent 'plan'" in text
    calls = {c.name: c for c in agi.store.list_tool_calls(run_id=result.run.id)}
    assert calls["read"].status == "completed"
    # refused when it asked, before the agent announced it: recorded denied, with the reason
    assert calls["edit"].status == "denied"
    assert "fs.write is not available to agent 'plan'" in calls["edit"].result
    assert "execute" not in calls


def test_a_cancelled_turn_stops_cleanly_and_the_agent_goes_on(
    make_agi: MakeAgi, notes: Path
) -> None:
    agi = make_agi(config=acp_config())
    session = agi.new_session(agent="build", sdk="acp")
    final: dict[str, Any] = {}
    for event in agi.stream("slow please", session=session.id):
        if event["type"] == "output.text.delta":
            agi.cancel(event["run_id"])
        final = event
    assert final["type"] == "run.final"
    assert final["run"]["status"] == "cancelled"

    after = agi.ask("again", session=session.id)
    assert after.text == "Turn 2: the first line"  # the same process, the same ACP session


def test_an_agent_that_crashes_fails_the_run_with_its_stderr(
    make_agi: MakeAgi, notes: Path
) -> None:
    agi = make_agi(config=acp_config())
    session = agi.new_session(agent="build", sdk="acp")

    run = agi.ask("crash now", session=session.id).run

    assert run.status == "failed"
    assert run.error is not None
    assert run.error["code"] == "PROVIDER_DISCONNECTED"
    assert "test ACP agent starting" in run.error["message"]
    text = [m.text for m in agi.history(session.id) if m.role == "assistant"]
    assert text == ["about to crash"]  # what arrived before the crash is kept
    again = agi.ask("and now?", session=session.id)
    assert again.text == "Turn 1: the first line"  # a new process, a new ACP session


def test_references_in_the_agent_env_are_resolved_and_secrets_stay_out(
    make_agi: MakeAgi,
    notes: Path,
    agi_env: dict[str, str],
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agi_env["MY_ACP_TOKEN"] = "acp-tok-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-server-environment-1")
    agi = make_agi(config=acp_config(env={"ACP_TEST_TOKEN": "${MY_ACP_TOKEN}"}))
    session = agi.new_session(agent="build", sdk="acp")

    result = agi.ask("env", session=session.id)

    text = " ".join(m.text for m in agi.history(session.id) if m.role == "assistant")
    assert "token=[REDACTED:ACP_DEFAULT]" in text
    assert "openai=<unset>" in text  # secret-looking variables are not passed on
    assert result.run.status == "succeeded"
    assert b"acp-tok-0123456789" not in (project / ".agi" / "agi.sqlite").read_bytes()


def test_sdks_declare_acp_honestly(make_agi: MakeAgi, project: Path) -> None:
    unconfigured = {s["id"]: s for s in make_agi().sdks()}["acp"]
    assert unconfigured["available"] is False
    assert "no ACP agent is configured" in unconfigured["reason"]
    configured = {s["id"]: s for s in make_agi(config=acp_config()).sdks()}["acp"]
    assert configured["available"] is True
    assert configured["capabilities"] == {
        "queue_while_streaming": False,
        "interrupt": True,
        "tool_events": True,
        "full_history": True,
    }


def test_agents_json_names_an_agents_own_acp_command(
    make_agi: MakeAgi, project: Path, notes: Path
) -> None:
    (project / ".agi" / "agents.json").write_text(
        json.dumps(
            {
                "helper": {
                    "tools": ["fs.read"],
                    "sdk": "acp",
                    "acp": {"command": sys.executable, "args": [AGENT]},
                },
                "ghost": {"sdk": "acp", "acp": {"command": "/nonexistent/acp-agent"}},
            }
        )
    )
    agi = make_agi(config={"max_attempts": 1})
    helper = agi.new_session(agent="helper")
    assert helper.sdk == "acp"
    result = agi.ask("go", session=helper.id)
    assert result.text.endswith("Turn 1: the first line")
    assert "terminal refused" in result.text  # shell.run is not on helper's list either
    calls = {c.name: c for c in agi.store.list_tool_calls(run_id=result.run.id)}
    assert calls["edit"].status == "denied"  # fs.write is not on helper's list: refused

    ghost = agi.ask("go", session=agi.new_session(agent="ghost").id).run
    assert ghost.status == "failed"
    assert ghost.error is not None
    assert ghost.error["code"] == "SDK_NOT_AVAILABLE"
    assert "/nonexistent/acp-agent" in ghost.error["message"]
    no_agent = agi.ask("go", session=agi.new_session(agent="build", sdk="acp").id).run
    assert no_agent.error is not None
    assert "no ACP agent is configured for agent 'build'" in no_agent.error["message"]


def test_text_parts_and_tool_calls_are_the_canonical_shape(make_agi: MakeAgi, notes: Path) -> None:
    agi = make_agi(config=acp_config())
    session = agi.new_session(agent="build", sdk="acp")
    agi.ask("shape", session=session.id)
    simple = agi.history(session.id)
    assert [m.role for m in simple] == ["user", "assistant"]
    assert isinstance(simple[-1].parts[0], TextPart)
    full = agi.history(session.id, view="full")
    call = full[1].parts[-1]
    assert isinstance(call, ToolCallPart)
    assert call.name == "read"


def test_the_tool_policy_decides_permission_requests(
    make_agi: MakeAgi, project: Path, notes: Path
) -> None:
    """A build session in *ask* mode: the ACP turn cannot be parked to wait for a person, so
    what would ask is rejected with the reason; a session rule that denies is rejected too."""
    agi = make_agi(config=acp_config())
    session = agi.new_session(agent="build", sdk="acp", review_mode="ask")

    result = agi.ask("please work", session=session.id)

    assert result.run.status == "succeeded", result.run.error
    assert not (project / "answer.txt").exists()
    text = " ".join(m.text for m in agi.history(session.id) if m.role == "assistant")
    assert "needs a person's approval" in text
    calls = {c.name: c for c in agi.store.list_tool_calls(run_id=result.run.id)}
    assert calls["read"].status == "completed"
    assert calls["edit"].status == "denied"
    assert "needs a person's approval" in calls["edit"].result

    agi.update_session(session.id, review_mode="auto")
    agi.store.update_session(
        session.id,
        tool_config={**agi.session(session.id).tool_config, "permissions": {"fs.write": "deny"}},
    )
    denied = agi.ask("please work", session=session.id)
    assert denied.run.status == "succeeded"
    assert not (project / "answer.txt").exists()  # fs.write denied, even in auto
    calls = {c.name: c for c in agi.store.list_tool_calls(run_id=denied.run.id)}
    assert calls["edit"].status == "denied"
    assert "[exit code 0]" in calls["execute"].result  # shell.run no longer asks


def test_a_spent_budget_stops_the_next_run_of_an_acp_session_before_it_starts(
    make_agi: MakeAgi, notes: Path
) -> None:
    agi = make_agi(config=acp_config())
    session = agi.new_session(agent="build", sdk="acp", budget={"max_tokens": 15})
    assert agi.ask("please work", session=session.id).run.status == "succeeded"
    assert agi.session(session.id).input_tokens + agi.session(session.id).output_tokens == 15

    second = agi.ask("again", session=session.id).run

    assert second.status == "failed"
    assert second.error is not None
    assert second.error["code"] == "BUDGET_EXCEEDED"
    assert "session budget: 15/15 tokens: the budget is spent" in second.error["message"]
    assert [m.role for m in agi.history(session.id, view="full")][-1] == "user"
