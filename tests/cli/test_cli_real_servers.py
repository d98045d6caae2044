"""The CLI with OpenAI-compatible servers as a new user meets them: ``compat`` without a base
URL, a local server's models, a retried stream written to a file, a truncated answer, a server
that sends no usage. Real ``agi`` processes against the fake server."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, Fault, Turn
from agi_jupyter.testing.control import MODELS
from tests.cli.conftest import AGI, RunCli, process_env, run_agi


def _fast_retries(project: Path) -> None:
    (project / ".agi" / "config.json").write_text(json.dumps({"retry_backoff": [0.01]}))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_compat_without_a_base_url_is_not_configured(project: Path) -> None:
    result = run_agi(["-m", "compat:qwen3", "hi"])
    assert result.returncode == 3
    assert "AGI_COMPAT_BASE_URL" in result.stderr
    assert "base URL" in result.stderr
    with Agi(project) as agi:
        assert agi.runs().items == []


def test_a_retried_stream_leaves_only_the_final_answer_in_the_file(
    project: Path, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    _fast_retries(project)
    fake_llm.enqueue(
        Turn(text="a first try that the server drops half way", fault=Fault(drop_after=4)),
        Turn(text="the final answer"),
    )
    answer = tmp_path / "answer.md"
    with answer.open("w") as out:
        done = subprocess.run(
            [AGI, "-m", "fake:echo", "count"],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env=process_env(),
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert answer.read_text() == "the final answer\n"
    assert "[retrying]" in done.stderr
    assert "retried" in done.stderr


def test_a_retried_stream_on_a_pipe_says_so_on_stderr(
    project: Path, fake_llm: FakeLLMServer
) -> None:
    _fast_retries(project)
    fake_llm.enqueue(
        Turn(text="a first try that the server drops half way", fault=Fault(drop_after=4)),
        Turn(text="the final answer"),
    )
    result = run_agi(["-m", "fake:echo", "count"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("the final answer\n")
    assert "the attempt was retried" in result.stderr


def test_a_truncated_answer_is_said_on_stderr(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text="cut short", hit_max_tokens=True))
    result = run_agi(["-m", "fake:echo", "hi"])
    assert result.returncode == 0
    assert result.stdout == "cut short\n"
    assert "output token limit" in result.stderr
    assert "truncated" in result.stderr


def test_unknown_usage_is_not_printed_as_zero(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text="ok", send_usage=False))
    result = run_agi(["-m", "fake:echo", "hi"])
    assert result.returncode == 0
    assert "usage unknown" in result.stderr
    assert "0 in / 0 out" not in result.stderr


def test_models_lists_a_local_servers_models(run_cli: RunCli, fake_llm: FakeLLMServer) -> None:
    env = {
        "AGI_COMPAT_BASE_URL": fake_llm.openai_base_url,
        "VLLM_BASE_URL": f"http://127.0.0.1:{_closed_port()}/v1",
    }
    result = run_cli("models", "--json", env=env)
    assert result.exit_code == 0, result.stderr
    providers = {p["name"]: p for p in json.loads(result.stdout)["providers"]}
    assert providers["compat"]["served_models"] == sorted(MODELS)
    assert providers["compat"]["served_models_error"] is None
    assert providers["vllm"]["served_models"] == []
    assert "unreachable" in providers["vllm"]["served_models_error"]
    assert "served_models" not in providers["openai"]  # hosted: the catalog lists its models
    text = run_cli("models", env=env)
    assert text.exit_code == 0
    assert MODELS[0] in text.stdout
    assert "not listed: unreachable" in text.stdout


def test_unknown_cost_and_a_truncated_answer_show_where_the_answer_does(
    project: Path, fake_llm: FakeLLMServer
) -> None:
    """`agi show`, `agi run`, `agi runs` and `agi stats` print an unknown cost as `?` (never
    $0.0000) and mark a truncated answer."""
    fake_llm.enqueue(Turn(text="no usage", send_usage=False))
    assert run_agi(["-m", "fake:echo", "hi"]).returncode == 0
    fake_llm.enqueue(Turn(text="cut short", hit_max_tokens=True))
    assert run_agi(["-m", "fake:echo", "more"]).returncode == 0
    with Agi(project) as agi:
        cut, unknown = agi.runs().items
    assert (unknown.cost_usd, cut.usage["truncated"]) == (None, True)

    shown = run_agi(["run", unknown.id])
    assert re.search(r"^cost\s+\?$", shown.stdout, re.MULTILINE)
    assert "$0.0000" not in shown.stdout
    shown = run_agi(["run", cut.id])
    assert "truncated: output token limit" in shown.stdout
    listed = run_agi(["runs"]).stdout
    (unknown_row,) = [line for line in listed.splitlines() if unknown.id in line]
    assert " ? " in unknown_row
    (cut_row,) = [line for line in listed.splitlines() if cut.id in line]
    assert "truncated" in cut_row
    session = run_agi(["show", unknown.session_id]).stdout
    assert "$0.0000 + ? (1 answers of unknown cost)" in session
    session = run_agi(["show", cut.session_id]).stdout
    assert "truncated: output token limit" in session
    stats = run_agi(["stats"]).stdout
    assert "+ ? (1 runs of unknown cost)" in stats
    assert json.loads(run_agi(["stats", "--json"]).stdout)["unknown_cost_runs"] == 1
