"""``agi serve`` as a real process (its URL, token and OpenAPI document, SIGTERM), and
``agi --server`` sending prompts to it."""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Fault, Turn
from tests.cli.conftest import AGI, RunCli, process_env
from tests.cli.terminal import approve_one_call_and_deny_the_next

pytestmark = pytest.mark.slow


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    url: str  # base URL, ending in /
    token: str
    openapi: str
    log: Path


def wait_for_banner(process: subprocess.Popen[bytes], timeout: float = 90) -> str:
    """What ``agi serve`` prints on stdout, up to its OpenAPI line (bounded wait)."""
    assert process.stdout is not None
    seen = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while not re.search(rb"OpenAPI .*\n", seen):
            left = deadline - time.monotonic()
            assert left > 0, f"no banner in time: {seen!r}"
            if selector.select(min(left, 1.0)):
                chunk = os.read(process.stdout.fileno(), 65536)
                assert chunk, f"agi serve exited ({process.wait(timeout=30)}): {seen!r}"
                seen += chunk
    return seen.decode()


def without_collaboration(config_dir: Path) -> dict[str, str]:
    """The environment of a server that does not load jupyter-collaboration (installed for
    the notebook tests): its extension logs a traceback whenever a server that never opened a
    shared document stops ("WebsocketServer not running"), which is not ours to assert on."""
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_server_ydoc": False}}})
    )
    return process_env(JUPYTER_CONFIG_DIR=str(config_dir))


@pytest.fixture
def served(project: Path, tmp_path: Path) -> Iterator[Served]:
    log = tmp_path / "serve.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [AGI, "serve", "--project", str(project)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=without_collaboration(tmp_path / "jupyter-config"),
        )
    try:
        banner = wait_for_banner(process)
        match = re.search(r"URL\s+(http://\S+/)\?token=(\w+)", banner)
        openapi = re.search(r"OpenAPI\s+(\S+)", banner)
        assert match, banner
        assert openapi, banner
        yield Served(process, match.group(1), match.group(2), openapi.group(1), log)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        assert process.stdout is not None
        process.stdout.close()


def fetch(url: str, token: str | None) -> tuple[int, bytes]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_serve_prints_its_urls_serves_openapi_and_stops_on_sigterm(
    served: Served, project: Path
) -> None:
    status, body = fetch(served.openapi, served.token)
    refused, _ = fetch(served.openapi, None)

    assert served.url.startswith("http://127.0.0.1:")
    assert served.openapi == served.url + "agi/openapi.json"
    assert status == 200
    document = json.loads(body)
    assert document["openapi"].startswith("3.")
    assert any(path.startswith("/agi/v1/sessions") for path in document["paths"])
    assert refused in (401, 403)

    served.process.send_signal(signal.SIGTERM)
    assert served.process.wait(timeout=30) == 0
    assert "Traceback" not in served.log.read_text()


def test_serve_stops_on_ctrl_c(served: Served) -> None:
    served.process.send_signal(signal.SIGINT)

    assert served.process.wait(timeout=30) == 0


def test_ask_through_the_server(
    served: Served, run_cli: RunCli, fake_llm: FakeLLMServer, project: Path
) -> None:
    fake_llm.enqueue(Turn(text="Served answer.", chunks=["Served ", "answer."]))

    first = run_cli("--server", served.url, "--token", served.token, "-a", "plan", "hi there")
    events = run_cli("--server", f"{served.url}?token={served.token}", "--json", "-c", "again")

    assert first.exit_code == 0, first.stderr
    assert first.stdout == "Served answer.\n"
    assert events.exit_code == 0, events.stderr
    lines = [json.loads(line) for line in events.stdout.splitlines()]
    assert (lines[0]["type"], lines[-1]["type"]) == ("run.meta", "run.final")
    with Agi(project) as agi:
        (ses,) = agi.sessions().items
        assert (ses.title, ses.agent) == ("hi there", "plan")
        assert [m.text for m in agi.history(ses.id) if m.role == "user"] == ["hi there", "again"]


def test_server_errors_are_one_line(served: Served, run_cli: RunCli) -> None:
    missing = run_cli("--server", served.url, "--token", served.token, "-s", "ses_missing", "hi")
    refused = run_cli("--server", served.url, "--token", "wrong", "hi")
    unconfigured = run_cli(
        "--server", served.url, "--token", served.token, "-m", "anthropic:claude-haiku-4-5", "hi"
    )

    assert missing.exit_code == 2  # README: an id that names nothing is bad usage
    assert missing.stderr.count("\n") == 1
    assert "not found" in missing.stderr
    assert refused.exit_code == 3  # README: not configured, saying what to set
    assert "HTTP 401" in refused.stderr
    assert "--token" in refused.stderr
    assert refused.stderr.count("\n") == 1
    assert unconfigured.exit_code == 3
    assert "not configured" in unconfigured.stderr


def test_ctrl_c_cancels_a_run_on_the_server(
    served: Served, fake_llm: FakeLLMServer, project: Path
) -> None:
    fake_llm.enqueue(
        Turn(chunks=[f"word{i} " for i in range(300)], fault=Fault(stall_between_events=0.05))
    )
    process = subprocess.Popen(
        [AGI, "--server", served.url, "--token", served.token, "count slowly"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=process_env(),
    )
    assert process.stdout is not None
    seen = b""
    deadline = time.monotonic() + 60
    while b"word3 " not in seen:
        assert time.monotonic() < deadline, seen
        seen += process.stdout.read1(1024)  # type: ignore[attr-defined]
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)

    assert process.returncode == 130
    assert err.decode().count("agi:") == 1
    with Agi(project) as agi:
        (run,) = agi.runs().items
        deadline = time.monotonic() + 30
        while not agi.run(run.id).is_terminal and time.monotonic() < deadline:
            time.sleep(0.1)
        assert agi.run(run.id).status == "cancelled"


def test_on_a_terminal_agi_server_asks_about_a_call_that_needs_approval(
    served: Served, fake_llm: FakeLLMServer, project: Path
) -> None:
    """``agi --server`` on a terminal asks like a local ``agi`` does: the decisions go to the
    server (POST approvals), whose runner resumes the run, and the CLI streams the rest."""
    approve_one_call_and_deny_the_next(
        fake_llm, project, "--server", served.url, "--token", served.token
    )


def test_a_run_waiting_for_a_larger_budget_through_the_server_exits_5(
    served: Served, run_cli: RunCli, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})], usage=(50, 10)),
        Turn(text="never asked for", usage=(70, 5)),
    )
    server = ("--server", served.url, "--token", served.token)

    waiting = run_cli(*server, "-a", "build", "--review-mode", "ask", "--max-tokens", "100", "ls")

    assert waiting.exit_code == 5, waiting.stderr
    assert "waiting for a larger budget (session budget: 60/100 tokens" in waiting.stderr
    assert len(fake_llm.requests) == 1


def test_serve_db_takes_a_postgresql_url_only(run_cli: RunCli, project: Path) -> None:
    refused = run_cli("serve", "--project", str(project), "--db", "store.sqlite")
    assert refused.exit_code == 2
    assert "--db" in refused.stderr
    assert "takes a postgresql:// URL" in refused.stderr


def test_serve_db_puts_the_store_in_that_database(
    project: Path, tmp_path: Path, postgres_url: str
) -> None:
    """Seed 000: ``agi serve --db URL``; what the server stores, another process using the
    same database (and project) reads."""
    env = without_collaboration(tmp_path / "jupyter-config")
    env.pop("AGI_DATABASE_URL", None)
    process = subprocess.Popen(
        [AGI, "serve", "--project", str(project), "--db", postgres_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        banner = wait_for_banner(process)
        match = re.search(r"URL\s+(http://\S+/)\?token=(\w+)", banner)
        assert match, banner
        request = urllib.request.Request(
            match.group(1) + "agi/v1/sessions",
            data=json.dumps({"title": "made through --db"}).encode(),
            headers={
                "Authorization": f"token {match.group(2)}",
                "Content-Type": "application/json",
            },
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            made = json.loads(response.read())["session"]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        assert process.stdout is not None
        process.stdout.close()
    assert not (project / ".agi" / "agi.sqlite").exists(), "not the SQLite store"
    with Agi(project, env={**env, "AGI_DATABASE_URL": postgres_url}) as agi:
        assert agi.session(made["id"]).title == "made through --db"
