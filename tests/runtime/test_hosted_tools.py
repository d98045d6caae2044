"""Provider-hosted tools (``kinds.HostedTool``): a session turns them on, the request carries
them, the provider's call streamed inside the answer is recorded as a tool call the provider
ran (with its input and result), shown as ``tool.call.*`` events, and sent back verbatim in the
next request. Each wire API that offers them, read by our HTTP reader and by the real
openai/anthropic SDKs, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pytest

from agi_jupyter.errors import ErrorCode, HostedToolUnsupported
from agi_jupyter.records import HostedToolPart, TextPart
from agi_jupyter.testing import FakeHostedCall, FakeLLMServer, Turn
from tests.runtime.conftest import MakeAgi

URLS = "https://jupyter.org\nhttps://docs.jupyter.org"
ANSWER = "Jupyter lives at jupyter.org."
# model -> (the web search tool entry the request carries, the call's recorded input)
WEB_SEARCH = {
    "openai:gpt-5-mini": ({"type": "web_search"}, {"type": "search", "query": "jupyter"}),
    "anthropic:claude-haiku-4-5": (
        {"type": "web_search_20250305", "name": "web_search"},
        {"query": "jupyter"},
    ),
}


def _tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in body.get("tools") or [] if t.get("type") != "function" and "type" in t]


def _echoed(model: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """What of the first answer the next request sends back: its hosted items/blocks."""
    if model.startswith("openai"):
        return [i for i in body["input"] if i.get("type") == "web_search_call"]
    return [
        block
        for message in body["messages"]
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] in ("server_tool_use", "web_search_tool_result")
    ]


@pytest.mark.parametrize("wire", ["http", "sdk"])
@pytest.mark.parametrize("model", list(WEB_SEARCH))
def test_a_web_search_is_recorded_shown_and_sent_back(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, model: str, wire: str
) -> None:
    search = FakeHostedCall(name="web_search", input={"query": "jupyter"}, result=URLS)
    fake_llm.enqueue(Turn(text=ANSWER, hosted_calls=[search]), Turn(text="You are welcome."))
    agi = make_agi(config={"wire": wire})
    session = agi.new_session(model=model, hosted_tools=["web_search"])
    assert session.tool_config["hosted_tools"] == ["web_search"]
    events = list(agi.stream("Where does Jupyter live?", session=session.id))
    entry, arguments = WEB_SEARCH[model]
    (first,) = fake_llm.requests
    assert _tools(first.body) == [entry]
    if model.startswith("anthropic"):
        assert "anthropic-beta" not in {k.lower() for k in first.headers}

    # One model turn: the hosted call is not ours to run and asks for no other turn.
    run_id = events[-1]["run_id"]
    result = agi.result(run_id)
    assert (result.run.status, result.text) == ("succeeded", ANSWER)
    assert [e["iteration"] for e in events if e["type"] == "iteration"] == [1]

    # Shown as a tool call: started (hosted), its arguments, its output.
    (started,) = [e for e in events if e["type"] == "tool.call.started"]
    assert (started["name"], started["tool_type"]) == ("web_search", "hosted")
    call_id = started["tool_call_id"]
    (done,) = [e for e in events if e["type"] == "tool.call.arguments.done"]
    assert (done["tool_call_id"], done["arguments"]) == (call_id, arguments)
    (output,) = [e for e in events if e["type"] == "tool.call.output"]
    assert (output["tool_call_id"], output["ok"], output["status"]) == (call_id, True, "completed")
    assert "https://docs.jupyter.org" in output["output"]

    # Recorded as the run's tool call, run by the provider, with its input and result.
    (row,) = agi.tool_calls(run_id)
    assert (row.tool_call_id, row.name, row.status, row.executed_by) == (
        call_id,
        "web_search",
        "completed",
        "provider",
    )
    assert row.args == arguments
    assert "https://jupyter.org" in row.result
    assert row.approval is None

    # The answer's message holds the call before its text.
    (assistant,) = [m for m in agi.history(session.id, view="full") if m.role == "assistant"]
    hosted, text = assistant.parts
    assert isinstance(hosted, HostedToolPart)
    assert isinstance(text, TextPart)
    assert (hosted.tool_call_id, hosted.name, text.text) == (call_id, "web_search", ANSWER)

    # The next turn sends the call back exactly as it came, and the tool again.
    assert agi.ask("Thanks", session=session.id).text == "You are welcome."
    second = fake_llm.requests[1].body
    assert _tools(second) == [entry]
    assert _echoed(model, second) == hosted.echo
    assert len(hosted.echo) == (1 if model.startswith("openai") else 2)


def test_code_execution_sends_its_beta_header_and_records_the_output(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    run = FakeHostedCall(name="code_execution", input={"command": "echo 42"}, result="42\n")
    fake_llm.enqueue(Turn(text="It printed 42.", hosted_calls=[run]))
    agi = make_agi()
    session = agi.new_session(model="anthropic:claude-haiku-4-5", hosted_tools=["code_execution"])
    result = agi.ask("run it", session=session.id)
    (request,) = fake_llm.requests
    assert _tools(request.body) == [{"type": "code_execution_20250825", "name": "code_execution"}]
    headers = {k.lower(): v for k, v in request.headers.items()}
    assert headers["anthropic-beta"] == "code-execution-2025-08-25"
    (row,) = agi.tool_calls(result.run.id)
    assert (row.name, row.args, row.result, row.executed_by) == (
        "bash_code_execution",
        {"command": "echo 42"},
        "42\n",
        "provider",
    )


def test_responses_hosted_tools_and_a_failed_call(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    searched = FakeHostedCall(name="file_search", input={"query": "budget"}, result="42 EUR")
    failed = FakeHostedCall(name="code_interpreter", input={"code": "1/0"}, failed=True)
    fake_llm.enqueue(Turn(text="done", hosted_calls=[searched, failed]))
    agi = make_agi()
    session = agi.new_session(
        model="openai:gpt-5-mini",
        hosted_tools=["file_search", "code_interpreter"],
        vector_store_ids=["vs_1"],
    )
    result = agi.ask("look", session=session.id)
    (request,) = fake_llm.requests
    assert _tools(request.body) == [
        {"type": "file_search", "vector_store_ids": ["vs_1"]},
        {"type": "code_interpreter", "container": {"type": "auto"}},
    ]
    rows = {row.name: row for row in agi.tool_calls(result.run.id)}
    assert (rows["file_search"].args, rows["file_search"].result) == (
        {"queries": ["budget"]},
        "fake.txt: 42 EUR",
    )
    assert (rows["code_interpreter"].status, rows["code_interpreter"].is_error) == ("failed", True)
    assert rows["code_interpreter"].args == {"code": "1/0"}


@pytest.mark.parametrize("model", ["openai:gpt-5-mini", "anthropic:claude-haiku-4-5"])
def test_without_hosted_tools_the_request_has_none(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, model: str
) -> None:
    fake_llm.enqueue(Turn(text="plain"))
    agi = make_agi()
    session = agi.new_session(model=model)
    assert "hosted_tools" not in session.tool_config
    agi.ask("hi", session=session.id)
    (request,) = fake_llm.requests
    assert _tools(request.body) == []
    assert "anthropic-beta" not in {k.lower() for k in request.headers}


@pytest.mark.parametrize(
    ("model", "tools", "stores", "words"),
    [
        ("openai-chat:gpt-4o-mini", ["web_search"], [], "does not offer the hosted tool"),
        ("anthropic:claude-haiku-4-5", ["code_interpreter"], [], "it offers: web_search, code"),
        ("openai:gpt-5-mini", ["file_search"], [], "vector_store_ids"),
        ("openai:gpt-5-mini", ["browser"], [], "'browser' is no hosted tool"),
    ],
)
def test_a_hosted_tool_the_provider_lacks_is_refused(
    make_agi: MakeAgi, model: str, tools: list[str], stores: list[str], words: str
) -> None:
    agi = make_agi()
    with pytest.raises(HostedToolUnsupported) as caught:
        agi.new_session(model=model, hosted_tools=tools, vector_store_ids=stores)
    assert caught.value.code == ErrorCode.HOSTED_TOOL_UNSUPPORTED
    assert caught.value.http_status == 409
    assert words in caught.value.message


def test_changing_the_model_or_the_tools_is_checked_and_a_run_names_what_is_missing(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_agi()
    session = agi.new_session(model="openai:gpt-5-mini")
    changed = agi.update_session(session.id, hosted_tools=["web_search", "code_interpreter"])
    assert changed.tool_config["hosted_tools"] == ["web_search", "code_interpreter"]
    with pytest.raises(HostedToolUnsupported, match="openai-chat"):
        agi.update_session(session.id, model="openai-chat:gpt-4o-mini")
    cleared = agi.update_session(session.id, hosted_tools=[])
    assert "hosted_tools" not in cleared.tool_config
    # A run on another model (a run's own model) fails, naming the tool and the provider.
    agi.update_session(session.id, hosted_tools=["code_interpreter"])
    result = agi.ask("go", session=session.id, model="anthropic:claude-haiku-4-5")
    assert result.run.status == "failed"
    assert result.run.error is not None
    assert result.run.error["code"] == ErrorCode.HOSTED_TOOL_UNSUPPORTED
    assert "'code_interpreter'" in result.run.error["message"]
    assert "'anthropic'" in result.run.error["message"]
    assert fake_llm.requests == []


@pytest.mark.parametrize("wire", ["http", "sdk"])
def test_a_turn_anthropic_paused_is_sent_back_and_continued(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, wire: str
) -> None:
    """``stop_reason: pause_turn`` (a long server-tool turn the API paused) is not the end of
    the answer: the paused answer goes back as it is, and the model continues its turn."""
    search = FakeHostedCall(name="web_search", input={"query": "jupyter"}, result=URLS)
    fake_llm.enqueue(Turn(hosted_calls=[search], paused=True), Turn(text=ANSWER))
    agi = make_agi(config={"wire": wire})
    session = agi.new_session(model="anthropic:claude-haiku-4-5", hosted_tools=["web_search"])
    result = agi.ask("Where does Jupyter live?", session=session.id)
    assert (result.run.status, result.text) == ("succeeded", ANSWER)
    first, second = fake_llm.requests
    # The continuation sends the paused answer last, as it came: the model goes on from it.
    paused = second.body["messages"][-1]
    assert paused["role"] == "assistant"
    assert [b["type"] for b in paused["content"]] == ["server_tool_use", "web_search_tool_result"]
    assert _without_cache_marks(second.body["messages"][:-1]) == _without_cache_marks(
        first.body["messages"]
    )
    (row,) = agi.tool_calls(result.run.id)
    assert (row.name, row.executed_by) == ("web_search", "provider")


def _without_cache_marks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without their prompt-caching breakpoints (which move with the window)."""
    return [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in messages
    ]
