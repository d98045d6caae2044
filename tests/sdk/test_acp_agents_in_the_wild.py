"""What real ACP agents do, played by the test agent (``acp_agent.py``): claude-code-acp's
repeated ``tool_call`` and permission requests without ``kind``, codex-acp's auth methods and
native child process, a model reported as a config option, a turn without usage."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.mcp import reaper
from tests.mcp.helpers import wait_until
from tests.sdk.conftest import MakeAgi, agi_env
from tests.sdk.test_acp_adapter import acp_config, notes

pytestmark = pytest.mark.slow  # each test starts agent processes

__all__ = ["agi_env", "notes"]


def _said(agi: Any, session_id: str) -> str:
    """Everything the agent said in the session (its text between tool calls too)."""
    return " ".join(m.text for m in agi.history(session_id) if m.role == "assistant")


def _live_members(group: int) -> list[int]:
    """The processes of a process group that are alive (zombies, not reaped by init, are not)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == group:
            members.append(int(stat.parent.name))
    return members


def _gone(pid: int) -> bool:
    return reaper._start_time(pid) is None  # exited (a zombie counts as gone)


def test_a_repeated_tool_call_is_an_update_and_a_kindless_permission_is_judged_by_its_kind(
    make_agi: MakeAgi, notes: Path
) -> None:
    agi = make_agi(config=acp_config())
    build = agi.new_session(agent="build", sdk="acp", review_mode="auto")
    plan = agi.new_session(agent="plan", sdk="acp")

    allowed = agi.ask("twice", session=build.id)
    refused = agi.ask("twice", session=plan.id)

    assert allowed.run.status == "succeeded", allowed.run.error
    assert "bash allowed" in _said(agi, build.id)  # execute: shell.run, allowed in mode auto
    calls = [
        c for c in agi.store.list_tool_calls(run_id=allowed.run.id) if c.tool_call_id == "bash-1"
    ]
    assert [(c.name, c.status) for c in calls] == [("execute", "completed")]
    assert calls[0].result == "listed"
    assert refused.run.status == "succeeded", refused.run.error
    assert "bash rejected" in _said(agi, plan.id)  # shell.run is not the read-only agent's


def test_in_review_mode_ask_a_kindless_execute_is_refused_as_shell_run_is(
    make_agi: MakeAgi, notes: Path
) -> None:
    agi = make_agi(config=acp_config())
    session = agi.new_session(agent="build", sdk="acp", review_mode="ask")

    result = agi.ask("twice", session=session.id)

    assert result.run.status == "succeeded", result.run.error
    assert "bash rejected" in _said(agi, session.id)


def test_the_agents_model_is_recorded_and_its_child_processes_end_with_it(
    make_agi: MakeAgi, notes: Path
) -> None:
    agi = make_agi(config=acp_config())
    session = agi.new_session(agent="build", sdk="acp", review_mode="auto")

    result = agi.ask("child", session=session.id)

    assert result.run.status == "succeeded", result.run.error
    child = int(re.search(r"child=(\d+)", _said(agi, session.id)).group(1))  # type: ignore[union-attr]
    group = os.getpgid(child)
    assert not _gone(child)
    answer = [m for m in agi.history(session.id) if m.role == "assistant"][-1]
    assert answer.meta["model"] == "test-model-1"
    assert agi.session(session.id).metadata["sdk_state"]["acp"]["model"] == "test-model-1"

    agi.close()

    assert wait_until(lambda: _gone(child), timeout=10)
    assert _live_members(group) == []  # nothing of the agent's process group is left


def test_an_agent_with_auth_methods_is_authenticated_with_its_api_key(
    make_agi: MakeAgi, notes: Path, agi_env: dict[str, str]
) -> None:
    agi_env["TEST_API_KEY"] = "tk-0123456789abcdef"  # our credential, given to it by reference
    env = {"ACP_TEST_AUTH": "1", "TEST_API_KEY": "${TEST_API_KEY}"}
    agi = make_agi(config=acp_config(env=env))
    session = agi.new_session(agent="build", sdk="acp", review_mode="auto")

    result = agi.ask("hello", session=session.id)

    assert result.run.status == "succeeded", result.run.error
    assert result.text.endswith("Turn 1: the first line")


def test_an_agent_that_still_needs_authentication_fails_once_not_retried(
    make_agi: MakeAgi, notes: Path
) -> None:
    config = {**acp_config(env={"ACP_TEST_AUTH": "1"}), "max_attempts": 3}
    agi = make_agi(config=config)
    session = agi.new_session(agent="build", sdk="acp", review_mode="auto")

    result = agi.ask("hello", session=session.id)

    assert result.run.status == "failed"
    assert result.run.error is not None
    assert "needs authentication" in result.run.error["message"]
    assert "TEST_API_KEY" in result.run.error["message"]
    assert result.run.error["retryable"] is False
    assert result.run.attempt == 1
