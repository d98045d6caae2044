"""A real ACP agent from npm, ``@zed-industries/claude-code-acp`` (installed into
``.venv/acp`` by scripts/install.sh), against the wire-level fake LLM (``ANTHROPIC_BASE_URL``;
``IS_SANDBOX=1`` lets it run as root). It announces each tool call twice and asks permission
without a ``kind``: the write is judged as the edit it was announced as, and stored as one call."""

from __future__ import annotations

from pathlib import Path

import pytest

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.sdk.conftest import MakeAgi, agi_env

pytestmark = pytest.mark.slow  # a node agent (~30 s a turn here)

__all__ = ["agi_env"]

CLAUDE_CODE_ACP = (
    Path(__file__).resolve().parents[2] / ".venv/acp/node_modules/.bin/claude-code-acp"
)


@pytest.fixture
def claude_code_acp() -> str:
    if not CLAUDE_CODE_ACP.is_file():
        pytest.fail(f"{CLAUDE_CODE_ACP} is missing: run scripts/install.sh")
    return str(CLAUDE_CODE_ACP)


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
