"""Real ACP agents from npm (installed into ``.venv/acp`` by scripts/install.sh), each with its
model API pointed at a local server:

- ``@zed-industries/claude-code-acp``: the wire-level fake LLM (``ANTHROPIC_BASE_URL``;
  ``IS_SANDBOX=1`` lets it run as root). It announces each tool call twice and asks permission
  without a ``kind``: the write is judged as the edit it was announced as, stored as one call.
- ``@zed-industries/codex-acp``: the fake's Responses API, as a model provider of codex's own
  ``config.toml`` (``CODEX_HOME``); ``authenticate`` with our OpenAI key; its commands ask
  permission (``approval_policy = "untrusted"``), decided by our policy; one it is refused is
  never announced, and is recorded as a denied call all the same.
- ``@google/gemini-cli --experimental-acp``: ``GOOGLE_GEMINI_BASE_URL`` at a small Gemini API
  written here (the fake LLM speaks no Gemini); ``authenticate`` with our Gemini key.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.sdk.conftest import MakeAgi, agi_env

pytestmark = pytest.mark.slow  # a node agent (~30 s a turn here)

__all__ = ["agi_env"]

# Where scripts/install.sh puts them (AGI_ACP_PREFIX: another prefix it was told to use).
PREFIX = Path(os.environ.get("AGI_ACP_PREFIX") or Path(__file__).resolve().parents[2] / ".venv/acp")


def npm_agent(name: str) -> str:
    command = PREFIX / "node_modules" / ".bin" / name
    if not command.is_file():
        pytest.fail(f"{command} is missing: run scripts/install.sh")
    return str(command)


@pytest.fixture
def claude_code_acp() -> str:
    return npm_agent("claude-code-acp")


def _config(command: str, fake_llm: FakeLLMServer, home: Path) -> dict[str, object]:
    env = {
        "ANTHROPIC_BASE_URL": fake_llm.anthropic_base_url,
        "ANTHROPIC_API_KEY": "${ANTHROPIC_API_KEY}",  # our credential, by reference
        "IS_SANDBOX": "1",
        "HOME": str(home),
    }
    return {"acp": {"command": command, "env": env}, "max_attempts": 1}


@pytest.mark.parametrize(("review_mode", "written"), [("auto", True), ("ask", False)])
def test_claude_code_acp_writes_through_our_gating_once_per_call(
    make_agi: MakeAgi,
    fake_llm: FakeLLMServer,
    project: Path,
    tmp_path: Path,
    claude_code_acp: str,
    review_mode: str,
    written: bool,
) -> None:
    target = project / "out.txt"
    write = FakeToolCall("mcp__acp__Write", {"file_path": str(target), "content": "from claude"})
    fake_llm.enqueue(Turn(tool_calls=[write]), Turn(text="Wrote it."))
    agi = make_agi(config=_config(claude_code_acp, fake_llm, tmp_path / "home"))
    session = agi.new_session(agent="build", sdk="acp", review_mode=review_mode)

    result = agi.ask("write out.txt", session=session.id)

    assert result.run.status == "succeeded", result.run.error
    assert target.exists() is written
    (call,) = agi.store.list_tool_calls(run_id=result.run.id)  # announced twice, stored once
    assert call.name == "edit"
    assert call.status == ("completed" if written else "failed")
    if written:
        assert target.read_text() == "from claude"
        assert result.text == "Wrote it."  # (refused, claude code ends its turn there)
    assert result.usage["cost_usd"] is None  # it reports no cost: unknown, not $0


def _codex_home(folder: Path, fake_llm: FakeLLMServer) -> Path:
    """codex-acp reads codex's own config: its model API is the fake's Responses API."""
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(
        'model = "gpt-5.4-mini"\n'
        'model_provider = "local"\n'
        'approval_policy = "untrusted"\n'
        'sandbox_mode = "danger-full-access"\n'
        "[model_providers.local]\n"
        'name = "local"\n'
        f'base_url = "{fake_llm.openai_base_url}"\n'
        'env_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
    )
    return folder


@pytest.mark.parametrize(("review_mode", "written"), [("auto", True), ("ask", False)])
def test_codex_acp_runs_its_command_through_our_gating(
    make_agi: MakeAgi,
    fake_llm: FakeLLMServer,
    project: Path,
    tmp_path: Path,
    review_mode: str,
    written: bool,
) -> None:
    env = {
        "CODEX_HOME": str(_codex_home(tmp_path / "codex-home", fake_llm)),
        "OPENAI_API_KEY": "${OPENAI_API_KEY}",
        "HOME": str(tmp_path / "home"),
    }
    command = FakeToolCall("exec_command", {"cmd": "echo from codex > out.txt"})
    fake_llm.enqueue(Turn(tool_calls=[command]), Turn(text="Done."))
    config = {"acp": {"command": npm_agent("codex-acp"), "env": env}, "max_attempts": 1}
    agi = make_agi(config=config)
    session = agi.new_session(agent="build", sdk="acp", review_mode=review_mode)

    result = agi.ask("write out.txt", session=session.id)

    assert result.run.status == "succeeded", result.run.error
    assert (project / "out.txt").exists() is written
    run = agi.run(result.run.id)
    assert (run.provider, run.model) == ("acp", "gpt-5.4-mini")  # what codex-acp says it runs
    assert run.usage["input_tokens"] is None  # codex-acp reports no usage: unknown, not 0
    calls = agi.store.list_tool_calls(run_id=result.run.id)
    if written:
        assert (project / "out.txt").read_text() == "from codex\n"
        assert [(c.name, c.status) for c in calls] == [("execute", "completed")]
        assert result.text == "Done."
    else:  # refused when it asked, before announcing it: recorded as a denied call
        (call,) = calls
        assert (call.name, call.status, call.is_error) == ("execute", "denied", True)
        assert "echo from codex" in json.dumps(call.args)
        assert "Refused" in json.dumps(call.result)
        events = agi.run_events(result.run.id)
        kinds = [e.type for e in events if e.payload.get("tool_call_id") == call.tool_call_id]
        assert kinds[0] == "tool.call.started"
        assert kinds[-1] == "tool.call.output"
        assert fake_llm.pending_turns == 1  # codex ends its turn there


class _GeminiApi(BaseHTTPRequestHandler):
    """Gemini's ``generateContent`` / ``streamGenerateContent`` at the wire (the fake LLM has
    no Gemini route): every answer is one candidate; the non-streamed calls are gemini-cli's
    own (its model router, its next-speaker check), answered as both want."""

    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.seen.append((self.path, self.headers.get("x-goog-api-key")))
        if ":streamGenerateContent" in self.path:
            body = b"data: " + json.dumps(_candidate("Hello from gemini.")).encode() + b"\r\n\r\n"
            kind = "text/event-stream"
        else:
            choice = {"reasoning": "a test", "model_choice": "flash", "next_speaker": "user"}
            body, kind = json.dumps(_candidate(json.dumps(choice))).encode(), "application/json"
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def _candidate(text: str) -> dict[str, Any]:
    content = {"role": "model", "parts": [{"text": text}]}
    usage = {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10}
    return {
        "candidates": [{"content": content, "finishReason": "STOP", "index": 0}],
        "usageMetadata": usage,
    }


@pytest.fixture
def gemini_api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _GeminiApi)
    _GeminiApi.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_gemini_cli_answers_through_a_local_gemini_api(
    make_agi: MakeAgi, agi_env: dict[str, str], gemini_api: str, tmp_path: Path
) -> None:
    env = {
        "GOOGLE_GEMINI_BASE_URL": gemini_api,
        "GEMINI_API_KEY": "${GEMINI_API_KEY}",  # our credential: sent by authenticate
        "HOME": str(tmp_path / "home"),
    }
    config = {
        "acp": {"command": npm_agent("gemini"), "args": ["--experimental-acp"], "env": env},
        "max_attempts": 1,
    }
    agi_env["GEMINI_API_KEY"] = "test-gemini-key-0003"
    agi = make_agi(config=config)
    session = agi.new_session(agent="build", sdk="acp", review_mode="auto")

    result = agi.ask("say hello", session=session.id)

    assert result.run.status == "succeeded", result.run.error
    assert result.text == "Hello from gemini."
    streamed = [p for p, _ in _GeminiApi.seen if ":streamGenerateContent" in p]
    assert streamed, _GeminiApi.seen
    model = streamed[-1].removeprefix("/v1beta/models/").split(":")[0]
    assert {key for _, key in _GeminiApi.seen} == {"test-gemini-key-0003"}
    run = agi.run(result.run.id)
    # gemini-cli names the model that answered, and its usage, in the response's _meta.quota
    assert (run.provider, run.model) == ("acp", model)
    assert (run.usage["input_tokens"], run.usage["output_tokens"]) == (7, 3)
