"""Against llama-cpp-python's own server (``python -m llama_cpp.server`` on the cache's
``libllama.so``, SmolLM2-135M-Instruct, greedy; see ``llama_server.py``):

- the text streamed through ``Agi`` is the server's own (the same request sent raw gets the
  same text); the server streams no usage, so the run's usage is unknown and its cost null;
- a history with an assistant tool-call turn (made on another model) is sent as the runtime
  sends it (``content: ""``): the server takes it, where ``content: null`` gets its HTTP 500;
- the setup: a missing install fails with what to run; the script run again builds nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx2
import pytest

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.realserver.conftest import LOCAL, PROMPT, MakeLlamaAgi, stream_beside_raw, view_of
from tests.realserver.llama_server import (
    MODEL,
    SCRIPT,
    LlamaCppPythonServer,
    NotBuilt,
    installed,
    raw_chat,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("llama-cpp-python")]

CHAT = "openai-chat:gpt-4o-mini"
COMPLETIONS = "/v1/chat/completions"


def test_the_streamed_text_is_the_servers_own_and_its_usage_unknown(
    llama_cpp_python: LlamaCppPythonServer, make_llama_agi: MakeLlamaAgi
) -> None:
    run = stream_beside_raw(make_llama_agi(llama_cpp_python), llama_cpp_python)
    events, streamed, result, raw = run.events, run.text, run.result, run.raw
    assert streamed == raw.text  # greedy: the same request gets the same answer
    assert raw.usage == {}  # the server streams no usage, even when asked to
    usage = result.run.usage
    assert (usage["input_tokens"], usage["output_tokens"]) == (None, None)
    assert result.run.cost_usd is None  # unknown, never $0
    assert "usage unknown" in view_of(events).footer()


def test_a_tool_call_turn_in_history_is_sent_as_the_server_takes_it(
    llama_cpp_python: LlamaCppPythonServer,
    make_llama_agi: MakeLlamaAgi,
    fake_llm: FakeLLMServer,
) -> None:
    """The first turn calls a tool on another model (the fake), the second goes to
    llama-cpp-python with that history."""
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})]), Turn(text="One folder.")
    )
    env = {"OPENAI_API_KEY": "sk-test-openai-0001", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    agi = make_llama_agi(llama_cpp_python, env=env)
    session = agi.new_session(agent="plan", model=CHAT)
    assert agi.ask("Which files are here?", session=session.id).text == "One folder."
    sent = fake_llm.requests[-1].body["messages"]  # the history as the runtime sends it
    (call,) = [m for m in sent if m["role"] == "assistant"]
    assert call["content"] == ""
    assert call["tool_calls"]
    before = len(llama_cpp_python.statuses_logged(COMPLETIONS))

    result = agi.ask(PROMPT, session=session.id, model=LOCAL, run_agent="general")
    assert result.run.status == "succeeded"
    assert result.text != ""
    assert llama_cpp_python.statuses_logged(COMPLETIONS)[before:] == [200]  # sent once, taken

    # The same history raw: taken as the runtime sends it, refused with null content.
    messages = [*sent, {"role": "user", "content": PROMPT}]
    assert raw_chat(llama_cpp_python, messages, 8).text != ""
    nulled = [{**m, "content": None} if m is call else m for m in messages]
    refused = httpx2.post(
        f"{llama_cpp_python.base_url}/chat/completions",
        json={"model": MODEL, "messages": nulled, "max_tokens": 8},
        timeout=120,
    )
    assert refused.status_code == 500


def test_a_missing_install_says_what_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the script's cache root
    with pytest.raises(NotBuilt) as raised:
        LlamaCppPythonServer()
    said = str(raised.value)
    assert "run scripts/install.sh" in said
    assert str(tmp_path / "agi-jupyter") in said  # the missing paths, named


def test_the_script_run_again_builds_nothing(llama_cpp_python: LlamaCppPythonServer) -> None:
    folder = installed().folder
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
    done = subprocess.run(
        ["bash", str(SCRIPT)], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stderr == ""  # no "building", no "installing", no "fetching"
    after = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
    assert after == before
