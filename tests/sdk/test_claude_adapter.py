"""The claude adapter's surface: availability, lazy import, and the options it gives the CLI."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.agents import BUILTIN_AGENTS
from agi_jupyter.config import Config, ProviderSettings
from agi_jupyter.errors import ProviderNotConfigured, SdkNotAvailable, UsageError
from agi_jupyter.records import JSON
from agi_jupyter.runtime.agent_loop import AttemptResult
from agi_jupyter.sdk.base import SdkRunParams
from agi_jupyter.sdk.claude import ClaudeAdapter
from agi_jupyter.store import open_store
from agi_jupyter.tools import ToolOutcome

INSTALL = "pip install 'agi-jupyter[claude]'"


def test_claude_adapter_identity() -> None:
    adapter = ClaudeAdapter()
    assert (adapter.id, adapter.display_name, adapter.install_hint) == (
        "claude",
        "Claude Agent SDK",
        INSTALL,
    )
    assert adapter.capabilities.to_dict() == {
        "queue_while_streaming": True,
        "interrupt": True,
        "tool_events": True,
        "full_history": True,
    }


def test_claude_check_available_without_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "claude_agent_sdk" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    adapter = ClaudeAdapter()
    with pytest.raises(SdkNotAvailable) as info:
        adapter.check_available()
    assert info.value.code == "SDK_NOT_AVAILABLE"
    assert INSTALL in info.value.message
    described = adapter.describe()
    assert described["available"] is False
    assert INSTALL in described["reason"]


@pytest.mark.slow
def test_claude_adapter_import_does_not_import_the_sdk() -> None:
    code = (
        "import sys, agi_jupyter, agi_jupyter.sdk.claude;"
        "agi_jupyter.sdk.claude.ClaudeAdapter().check_available();"
        "print('claude_agent_sdk' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "False"


# --- options --------------------------------------------------------------------------------


def _params(
    project: Path,
    *,
    api_key: str | None = "sk-test-anthropic-secret-0002",
    model: str = "claude-haiku-4-5",
    provider: str = "anthropic",
    metadata: JSON | None = None,
    thinking: str | None = None,
) -> SdkRunParams:
    store = open_store(project)
    session = store.create_session(
        sdk="claude", provider=provider, model=model, metadata=metadata or {}
    )
    run = store.create_run(session.id, provider=provider, model=model, thinking_level=thinking)
    store.close()
    settings = ProviderSettings(
        name="anthropic",
        wire="anthropic",
        base_url="http://127.0.0.1:9/",
        enabled=True,
        requires_key=True,
        default_model=None,
        api_key=api_key,
    )

    async def call_tool(tool_call_id: str, name: str, arguments: JSON) -> ToolOutcome:
        raise AssertionError("not called")

    def nothing(*args: Any) -> None:
        return None

    return SdkRunParams(
        run=run,
        session=session,
        agent=BUILTIN_AGENTS["plan"],
        config=Config(project=project, providers={"anthropic": settings}),
        project=project,
        prompt="hi",
        system_prompt="You are a test.",
        tools=[],
        max_turns=7,
        on_history=nothing,
        on_event=nothing,
        call_tool=call_tool,
        state={},
        save_state=nothing,
        on_handle=nothing,
        emitter=None,  # type: ignore[arg-type]
        result=lambda: AttemptResult("", {}, 0.0, 0),
    )


def test_claude_options_offer_only_our_tools_and_isolate_the_cli(tmp_path: Path) -> None:
    pytest.importorskip("claude_agent_sdk")
    from agi_jupyter.sdk.claude.options import BUILTIN_TOOLS, build_options
    from agi_jupyter.sdk.claude.tools import SERVER, ToolNameMap

    params = _params(tmp_path, metadata={"claude": {"max_budget_usd": 0.5, "effort": "low"}})
    names = ToolNameMap(["fs.read", "sql.query"])
    options = build_options(
        params,
        server={"type": "sdk", "name": SERVER, "instance": None},
        allowed=names.allowed(),
        resume="s1",
    )
    assert options.tools == []  # no built-in tool at all
    assert options.allowed_tools == ["mcp__agi__fs_read", "mcp__agi__sql_query"]
    assert {"Bash", "Read", "Write", "Edit", "WebFetch"} <= set(options.disallowed_tools)
    assert options.disallowed_tools == list(BUILTIN_TOOLS)
    assert options.permission_mode == "dontAsk"
    assert options.setting_sources == []
    assert options.strict_mcp_config
    assert options.include_partial_messages
    assert (options.model, options.max_turns, options.resume) == ("claude-haiku-4-5", 7, "s1")
    assert options.system_prompt == "You are a test."
    assert options.cwd == tmp_path
    assert options.max_budget_usd == 0.5
    assert options.effort == "low"
    assert options.thinking == {"type": "disabled"}
    env = options.env
    assert env["ANTHROPIC_API_KEY"] == "sk-test-anthropic-secret-0002"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9/"
    assert env["ANTHROPIC_AUTH_TOKEN"] == ""
    assert env["CLAUDE_CONFIG_DIR"] == str(tmp_path / ".agi" / "claude")
    assert (tmp_path / ".agi" / "claude").is_dir()
    for name in (
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "DISABLE_TELEMETRY",
        "DISABLE_AUTOUPDATER",
    ):
        assert env[name] == "1"
    assert names.ours("mcp__agi__sql_query") == "sql.query"
    assert names.ours("Bash") == "Bash"


def test_claude_options_thinking_and_refusals(tmp_path: Path) -> None:
    pytest.importorskip("claude_agent_sdk")
    from agi_jupyter.sdk.claude.options import build_options

    server: Any = {"type": "sdk", "name": "agi", "instance": None}
    high = build_options(
        _params(tmp_path / "a", thinking="high"), server=server, allowed=[], resume=None
    )
    assert high.thinking == {"type": "enabled", "budget_tokens": 24576}
    with pytest.raises(ProviderNotConfigured, match="ANTHROPIC_API_KEY"):
        build_options(_params(tmp_path / "b", api_key=None), server=server, allowed=[], resume=None)
    with pytest.raises(UsageError, match="Anthropic models"):
        build_options(
            _params(tmp_path / "c", provider="openai", model="gpt-5"),
            server=server,
            allowed=[],
            resume=None,
        )
    with pytest.raises(UsageError, match="effort"):
        build_options(
            _params(tmp_path / "d", metadata={"claude": {"effort": "huge"}}),
            server=server,
            allowed=[],
            resume=None,
        )
