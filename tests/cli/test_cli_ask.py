"""``agi "<prompt>"``: streaming output, NDJSON, sessions, exit codes and one-line errors."""

from __future__ import annotations

import json
import socket

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeHostedCall, FakeLLMServer, FakeToolCall, Fault, Turn
from tests.cli.conftest import RunCli, run_agi


def test_answer_streams_to_stdout_and_tool_calls_to_stderr(
    run_cli: RunCli, fake_llm: FakeLLMServer, agi: Agi
) -> None:
    (agi.project / "notes.txt").write_text("forty-two\n")
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_read", {"path": "notes.txt"})]),
        Turn(text="The note says forty-two.", chunks=["The note ", "says ", "forty-two."]),
    )

    result = run_cli("-a", "plan", "What does notes.txt say?")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "The note says forty-two.\n"
    assert '[fs.read] {"path": "notes.txt"}' in result.stderr
    assert "[fs.read] ok: forty-two" in result.stderr
    assert "\x1b" not in result.stdout + result.stderr  # no spinner or colour off a terminal
    (ses,) = agi.sessions().items
    assert (ses.title, ses.agent, ses.message_count) == ("What does notes.txt say?", "plan", 4)


def test_json_prints_the_events_as_ndjson(run_cli: RunCli, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text="Hello there.", chunks=["Hello ", "there."]))

    result = run_cli("--json", "hi")

    assert result.exit_code == 0
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "run.meta"
    assert types[-1] == "run.final"
    # deltas that arrive in one read may be coalesced into one event; the text is the same
    assert "".join(e["delta"] for e in events if e["type"] == "output.text.delta") == "Hello there."
    assert events[-1]["run"]["status"] == "succeeded"
    assert [e["seq"] for e in events] == sorted({e["seq"] for e in events})
    assert result.stderr == ""


def test_fake_model_is_announced_on_stderr(run_cli: RunCli) -> None:
    result = run_cli("hello")

    assert result.stdout == "(offline fake model) echo: hello\n"
    assert "offline fake model" in result.stderr
    assert "agi setup" in result.stderr


def test_prompt_from_stdin(run_cli: RunCli) -> None:
    result = run_cli("-", input="a prompt\nover two lines\n")

    assert result.exit_code == 0
    assert "echo: a prompt" in result.stdout


def test_a_word_that_is_a_command_runs_it_and_any_other_words_are_a_prompt(
    run_cli: RunCli, agi: Agi
) -> None:
    asked = run_cli("sessions please")
    assert asked.stdout == "(offline fake model) echo: sessions please\n"

    listed = run_cli("sessions")
    assert listed.exit_code == 0
    assert "sessions please" in listed.stdout
    assert agi.sessions().items[0].title == "sessions please"

    explicit = run_cli("ask", "sessions")
    assert explicit.stdout == "(offline fake model) echo: sessions\n"


def test_options_before_the_prompt_go_to_ask(run_cli: RunCli, agi: Agi) -> None:
    result = run_cli("--agent", "build", "--title", "My title", "do it")

    assert result.exit_code == 0
    (ses,) = agi.sessions().items
    assert (ses.agent, ses.title) == ("build", "My title")


def test_continue_and_session_reuse_a_session(run_cli: RunCli, agi: Agi) -> None:
    run_cli("first")
    run_cli("-c", "second")
    (ses,) = agi.sessions().items
    run_cli("--session", ses.id, "third")

    (same,) = agi.sessions().items
    texts = [m.text for m in agi.history(same.id) if m.role == "user"]
    assert texts == ["first", "second", "third"]


def test_model_option_uses_that_provider(
    run_cli: RunCli, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, agi: Agi
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cli-0001")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    fake_llm.enqueue(Turn(text="from gpt"))

    result = run_cli("-m", "openai-chat:gpt-4o-mini", "hi")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "from gpt\n"
    assert "offline fake model" not in result.stderr
    assert fake_llm.requests[-1].body["model"] == "gpt-4o-mini"
    assert agi.runs().items[0].provider == "openai-chat"


def test_tools_option_adds_tools_to_a_new_session(run_cli: RunCli, agi: Agi) -> None:
    result = run_cli("-t", "fs.list,fs.read", '/tool fs.list {"path": "."}')

    assert result.exit_code == 0, result.stderr
    assert "[fs.list] ok" in result.stderr
    (ses,) = agi.sessions().items
    assert ses.tool_config == {"extra_tools": ["fs.list", "fs.read"]}


def test_provider_not_configured_is_one_line_and_leaves_no_session(
    run_cli: RunCli, agi: Agi
) -> None:
    result = run_cli("-m", "anthropic:claude-sonnet-4-6", "hi")

    assert result.exit_code == 3
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "provider 'anthropic' is not configured" in result.stderr
    assert "ANTHROPIC_API_KEY" in result.stderr
    assert agi.sessions().items == []


def test_a_failed_run_exits_1_with_its_reason(run_cli: RunCli, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(fault=Fault(status=400, body={"error": {"message": "bad request"}})))

    result = run_cli("hi")

    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[-1].startswith("agi: run run_")
    assert " failed: " in lines[-1]
    assert sum(line.startswith("agi:") for line in lines) == 1


def test_a_failed_run_in_json_mode_still_ends_with_run_final(
    run_cli: RunCli, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(fault=Fault(status=400)))

    result = run_cli("--json", "hi")

    assert result.exit_code == 1
    last = json.loads(result.stdout.splitlines()[-1])
    assert (last["type"], last["run"]["status"]) == ("run.final", "failed")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--session", "ses_missing", "hi"], "session 'ses_missing' not found"),
        (["--agent", "nope", "hi"], "unknown agent 'nope'"),
        (["--tools", "nope", "hi"], "unknown tool nope"),
        (["-c", "hi"], "no earlier session to continue"),
    ],
)
def test_bad_references_are_one_line_errors(run_cli: RunCli, args: list[str], message: str) -> None:
    result = run_cli(*args)

    assert result.exit_code in (1, 2)
    assert result.stderr.count("\n") == 1
    assert message in result.stderr


@pytest.mark.parametrize(
    "args",
    [["ask"], ["-s", "ses_x", "-c", "hi"], ["-c", "-t", "fs.read", "hi"], ["-"]],
)
def test_bad_usage_exits_2(run_cli: RunCli, args: list[str]) -> None:
    assert run_cli(*args, input="").exit_code == 2


def test_the_console_script_runs_a_prompt() -> None:
    done = run_agi(["hello from a process"])

    assert done.returncode == 0, done.stderr
    assert done.stdout == "(offline fake model) echo: hello from a process\n"


def test_an_unreachable_server_is_one_line(run_cli: RunCli) -> None:
    with socket.socket() as sock:  # a port nobody listens on any more
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    result = run_cli("--server", f"http://127.0.0.1:{port}/", "hi")

    assert result.exit_code == 1
    assert result.stderr.startswith(f"agi: cannot reach http://127.0.0.1:{port}/: ")
    assert "refused" in result.stderr
    assert result.stderr.count("\n") == 1


def test_every_answer_ends_with_where_its_run_is_recorded(run_cli: RunCli, agi: Agi) -> None:
    result = run_cli("hello")

    (run,) = agi.runs().items
    assert result.stderr.splitlines()[-1] == (
        f"{run.id} · session {run.session_id} · {run.usage['input_tokens']} in / "
        f"{run.usage['output_tokens']} out · recorded in .agi/agi.sqlite "
        f"(`agi show {run.session_id} --full`)"
    )


def test_the_offline_demo_model_calls_a_tool_and_explains_the_record(
    run_cli: RunCli, agi: Agi
) -> None:
    (agi.project / "notes.txt").write_text("hi\n")

    result = run_cli("-m", "fake:demo", "-a", "plan", "What can you do?")

    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("(offline demo model)")
    assert '("What can you do?")' in result.stdout
    assert "I called `fs.list` on the project folder" in result.stdout
    assert "`notes.txt`" in result.stdout
    assert "`.agi/agi.sqlite`" in result.stdout
    assert '[fs.list] {"path": "."}' in result.stderr
    (run,) = agi.runs().items
    (call,) = agi.store.list_tool_calls(run_id=run.id)
    assert (call.name, call.status) == ("fs.list", "completed")


def test_the_demo_model_without_tools_still_says_what_a_run_does(run_cli: RunCli) -> None:
    result = run_cli("-m", "fake:demo", "-a", "general", "hi")

    assert result.exit_code == 0, result.stderr
    assert "**Tools.**" in result.stdout
    assert "[fs.list]" not in result.stderr


def test_hosted_tools_of_a_new_session_show_as_run_by_the_provider(
    run_cli: RunCli, fake_llm: FakeLLMServer, agi: Agi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-secret-0001")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    search = FakeHostedCall("web_search", {"query": "jupyter"}, "https://jupyter.org")
    fake_llm.enqueue(Turn(text="At jupyter.org.", hosted_calls=[search]))

    result = run_cli("-m", "openai:gpt-5-mini", "--hosted-tools", "web_search", "Where?")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "At jupyter.org.\n"
    assert "[web_search] run by the provider" in result.stderr
    assert "[web_search] ok: https://jupyter.org" in result.stderr
    (ses,) = agi.sessions().items
    assert ses.tool_config["hosted_tools"] == ["web_search"]
    (request,) = fake_llm.requests
    assert {"type": "web_search"} in request.body["tools"]

    refused = run_cli("-m", "openai-chat:gpt-4o-mini", "--hosted-tools", "web_search", "hi")
    assert refused.exit_code != 0
    assert "does not offer the hosted tool 'web_search'" in refused.stderr
