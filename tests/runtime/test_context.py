"""Long sessions: the context window, compaction and prompt caching, end to end through the
real SDK paths against the fake server (every test on both store backends)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.errors import ConfigError
from agi_jupyter.providers.catalog import lookup
from agi_jupyter.records import TextPart, ToolCallPart, ToolResultPart
from agi_jupyter.runtime.compaction import COMPACTION_FAILED, SUMMARY_SYSTEM
from agi_jupyter.testing import FakeLLMServer, Fault, RecordedRequest, Turn
from agi_jupyter.testing.rules import last_user_text, messages_of
from agi_jupyter.testing.script import JSON
from tests.runtime.conftest import MakeAgi

MODELS = ["openai:gpt-5-mini", "openai-chat:gpt-4o-mini", "anthropic:claude-haiku-4-5"]
WORDS = [
    "the",
    "model",
    "answers",
    "this",
    "question",
    "at",
    "length",
    "with",
    "many",
    "plain",
    "words",
]
SUMMARY = "Summary: numbered questions were asked and each was answered at length."


def long_answers(protocol: str, body: JSON) -> Turn:
    """The fake model's rule: a long answer naming the question; a summary when asked for one."""
    if is_summary_request(body):
        return Turn(text=SUMMARY)
    question = last_user_text(protocol, body)
    return Turn(text=f"About {question.split(':')[0]}: " + " ".join(WORDS * 25))  # 275 words


def is_summary_request(body: JSON) -> bool:
    return SUMMARY_SYSTEM[:40] in json.dumps(body)


def configure(project: Path, **settings: Any) -> None:
    (project / ".agi" / "config.json").write_text(json.dumps(settings))


def tokens_of(body: JSON) -> int:
    """A request's size as its JSON text over four characters a token (the JSON structure
    counted too: more than the context estimate)."""
    return len(json.dumps(body)) // 4


def answer_requests(fake: FakeLLMServer) -> list[RecordedRequest]:
    return [r for r in fake.requests if r.body and not is_summary_request(r.body)]


def history_count(request: RecordedRequest) -> int:
    """The history messages of a request (the system prompt not counted)."""
    items = messages_of(request.protocol, request.body)
    return len([m for m in items if m.get("role") != "system"])


def test_the_bar_a_small_window_holds_a_long_session(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    """The issue's bar: 40 long answers with ``context_window`` 6,000 stay under it."""
    configure(project, models={"openai-chat:gpt-4o-mini": {"context_window": 6000}})
    fake_llm.default_rule = long_answers
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")

    for i in range(1, 41):
        result = agi.ask(f"Question {i}: what about item {i}?", session=session.id)
        assert result.run.status == "succeeded"

    answers = answer_requests(fake_llm)
    assert len(answers) == 40
    assert all(tokens_of(r.body) < 6000 for r in fake_llm.requests)  # summaries' too
    for i, request in enumerate(answers, start=1):
        assert last_user_text("chat", request.body) == f"Question {i}: what about item {i}?"
    assert max(tokens_of(r.body) for r in answers) > 3000  # the window was used, not emptied
    history = agi.history(session.id, view="full")
    assert len(history) == 80  # nothing of the canonical history is lost
    assert agi.session(session.id).message_count == 80
    compactions = agi.compactions(session.id)
    assert compactions  # older turns were folded, and the summary sent in their place
    assert SUMMARY in json.dumps(answers[-1].body)
    gauge = history[-1].meta["context"]
    assert gauge["window"] == 6000
    assert gauge["tokens"] < gauge["compacts_at"] <= 6000


def test_default_config_sends_at_most_50_history_messages(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    for i in range(30):
        agi.ask(f"short question {i}", session=session.id)

    counts = [history_count(r) for r in answer_requests(fake_llm)]
    assert counts[24] == 49  # the 25th request: 48 earlier messages and its question
    assert max(counts) <= 50
    assert counts[-1] < 50  # folded into a summary and sent again with room to grow
    assert len(agi.history(session.id, view="full")) == 60


def test_tokens_only_with_a_null_message_window(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    configure(project, max_history_messages=None)
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    for i in range(28):
        agi.ask(f"short question {i}", session=session.id)
    assert history_count(answer_requests(fake_llm)[-1]) == 55
    assert agi.compactions(session.id) == []


def tool_session(agi: Any, session_id: str, turns: int, output_chars: int) -> None:
    """A stored history of ``turns`` turns, each a question, a tool call, its (large) result
    and an answer."""
    store = agi.store
    for i in range(turns):
        store.add_message(session_id, "user", [TextPart(text=f"read file {i}")])
        call = ToolCallPart(
            tool_call_id=f"call_{i:04d}", name="fs_read", arguments={"path": f"f{i}"}
        )
        store.add_message(session_id, "assistant", [call])
        output = f"contents of f{i}: " + "x" * output_chars
        result = ToolResultPart(tool_call_id=call.tool_call_id, name="fs_read", output=output)
        store.add_message(session_id, "tool", [result])
        store.add_message(session_id, "assistant", [TextPart(text=f"file {i} holds x's")])


def calls_and_results(protocol: str, body: JSON) -> tuple[list[str], list[str]]:
    """The tool call ids of a request and of its results, in order, checking that every call's
    results come right after it as each wire API requires."""
    calls: list[str] = []
    results: list[str] = []
    open_calls: list[str] = []
    for item in messages_of(protocol, body):
        made, answered = _item_calls(protocol, item)
        assert set(answered) <= set(open_calls), f"results {answered} without their calls"
        if open_calls and not answered and not made:
            pytest.fail(f"calls {open_calls} not answered before the next message")
        open_calls = [c for c in open_calls if c not in answered] + made
        calls += made
        results += answered
    assert not open_calls
    return calls, results


def _item_calls(protocol: str, item: JSON) -> tuple[list[str], list[str]]:
    if protocol == "chat":
        made = [c["id"] for c in item.get("tool_calls") or []]
        return made, [item["tool_call_id"]] if item.get("role") == "tool" else []
    if protocol == "responses":
        kind = item.get("type")
        return (
            [item["call_id"]] if kind == "function_call" else [],
            [item["call_id"]] if kind == "function_call_output" else [],
        )
    content = item.get("content") if isinstance(item.get("content"), list) else []
    return (
        [b["id"] for b in content if b.get("type") == "tool_use"],
        [b["tool_use_id"] for b in content if b.get("type") == "tool_result"],
    )


@pytest.mark.parametrize("model", MODELS)
def test_a_200_turn_session_stays_under_a_small_window_and_keeps_calls_with_results(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, model: str
) -> None:
    configure(project, models={model: {"context_window": 8000}}, compaction=False)
    agi = make_agi()
    session = agi.new_session(model=model, agent="plan")
    tool_session(agi, session.id, 200, output_chars=3000)
    fake_llm.enqueue(Turn(text="Turn 201 answered."))

    result = agi.ask("the last question", session=session.id)

    assert result.text == "Turn 201 answered."
    (request,) = fake_llm.requests
    assert tokens_of(request.body) < 8000
    calls, results = calls_and_results(request.protocol, request.body)
    assert calls == results
    assert calls  # older turns with their tool calls are in the window
    assert "call_0199" in calls  # the newest ones
    text = json.dumps(request.body)
    assert "left out of this request to save context" in text  # large old outputs by reference
    assert "earlier messages of this session are left out" in text  # and said so
    assert last_user_text(request.protocol, request.body) == "the last question"
    assert len(agi.history(session.id, view="full")) == 802


@pytest.mark.parametrize("model", MODELS)
def test_caching_hints_and_cached_tokens_of_each_api(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, model: str
) -> None:
    provider, name = model.split(":")
    fake_llm.enqueue(Turn(text="first", usage=(1000, 10)))
    fake_llm.enqueue(Turn(text="second", usage=(1200, 20), cached_tokens=900))
    agi = make_agi()
    session = agi.new_session(model=model, agent="plan")
    agi.ask("one", session=session.id)
    run = agi.ask("two", session=session.id).run

    body = fake_llm.requests[-1].body
    if provider == "anthropic":
        system = body["system"]
        assert system[-1]["cache_control"] == {"type": "ephemeral"}
        marked = [
            block
            for message in body["messages"]
            for block in message["content"]
            if "cache_control" in block
        ]
        assert len(marked) == 2  # the end of the earlier turns, and the last message
        assert "prompt_cache_key" not in body
    else:
        assert body["prompt_cache_key"] == session.id
        assert "cache_control" not in json.dumps(body)
    answer = agi.history(session.id, view="full")[-1]
    assert answer.meta["usage"] == {
        "input_tokens": 1200,
        "output_tokens": 20,
        "cached_input_tokens": 900,
    }
    info = lookup(provider, name)
    assert info is not None
    expected = (300 * info.input_per_mtok + 900 * info.cached_input_per_mtok) / 1e6
    expected += 20 * info.output_per_mtok / 1e6
    assert run.cost_usd == pytest.approx(expected)
    assert agi.session(session.id).cached_input_tokens == 900
    assert agi.stats()["cached_tokens"] == 900
    usage_events = [e for e in agi.run_events(run.id) if e.type == "usage"]
    assert usage_events[-1].payload["cached_input_tokens"] == 900


def test_no_cache_key_for_openai_compatible_servers(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_agi()
    session = agi.new_session(model="fake:echo")
    agi.ask("hello", session=session.id)
    assert "prompt_cache_key" not in fake_llm.requests[-1].body


@pytest.mark.parametrize("model", MODELS)
def test_compaction_is_a_stored_step_with_its_cost(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, model: str
) -> None:
    configure(project, max_history_messages=6)
    fake_llm.default_rule = long_answers
    agi = make_agi()
    session = agi.new_session(model=model)
    for i in range(3):
        agi.ask(f"Question {i}: more", session=session.id)
    run = agi.ask("Question 3: the one that compacts", session=session.id).run

    (compaction,) = agi.compactions(session.id)
    history = agi.history(session.id, view="full")
    assert compaction.first_message_id == history[0].id
    # the oldest three messages folded; the newest three, half the window, kept
    assert compaction.through_message_id == history[2].id
    assert compaction.message_count == 3
    assert compaction.summary == SUMMARY
    assert compaction.run_id == run.id
    assert compaction.cost_usd is not None
    assert compaction.cost_usd > 0
    assert compaction.input_tokens
    events = [e for e in agi.run_events(run.id) if e.type == "context.compacted"]
    assert events[0].payload["compaction_id"] == compaction.id
    assert events[0].payload["cost_usd"] == pytest.approx(compaction.cost_usd)
    answer = answer_requests(fake_llm)[-1]
    body = json.dumps(answer.body)
    assert SUMMARY in body
    assert "Question 0: more" not in body
    assert "Question 1: more" not in body
    assert "Question 2: more" in body
    assert history_count(answer) == 5  # the summary, three messages kept, the question
    assert run.cost_usd > compaction.cost_usd  # the run's cost counts its compaction
    assert len(history) == 8  # the history itself is whole


def test_a_failed_compaction_leaves_the_run_going(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    configure(project, max_history_messages=4)
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    for i in range(2):
        agi.ask(f"question {i}", session=session.id)
    fake_llm.enqueue(
        Turn(fault=Fault(status=400, body={"error": {"message": "no"}})),  # the summary
        Turn(text="answered anyway"),
    )
    result = agi.ask("question 2", session=session.id)

    assert (result.run.status, result.text) == ("succeeded", "answered anyway")
    notices = [e for e in agi.run_events(result.run.id) if e.type == "notice"]
    assert notices[0].payload["code"] == COMPACTION_FAILED
    assert agi.compactions(session.id) == []
    body = fake_llm.requests[-1].body
    assert "earlier messages of this session are left out" in json.dumps(body)


def test_compact_on_demand(make_agi: MakeAgi, fake_llm: FakeLLMServer) -> None:
    fake_llm.default_rule = long_answers
    agi = make_agi()
    session = agi.new_session(model="anthropic:claude-haiku-4-5")
    for i in range(3):
        agi.ask(f"Question {i}: more", session=session.id)

    compaction = agi.compact(session.id)

    assert compaction is not None
    history = agi.history(session.id, view="full")
    assert (compaction.through_message_id, compaction.message_count) == (history[3].id, 4)
    assert compaction.run_id is None
    assert agi.compact(session.id) is None  # nothing more to fold before the last turn
    agi.ask("Question 3: after", session=session.id)
    body = json.dumps(answer_requests(fake_llm)[-1].body)
    assert SUMMARY in body
    assert "Question 2: more" in body
    assert "Question 0: more" not in body


LIMIT_KEYS = {"openai": "max_output_tokens", "openai-chat": "max_completion_tokens"}


@pytest.mark.parametrize("model", MODELS)
def test_temperature_and_answer_limit_per_model_and_per_agent(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path, model: str
) -> None:
    """Seed 004: ``max_tokens`` and ``temperature`` per model in config and per agent in
    ``.agi/agents.json``; the agent's win; unset, nothing is sent (the provider's default)."""
    provider, name = model.split(":")
    limit_key = LIMIT_KEYS.get(provider, "max_tokens")
    (project / ".agi").mkdir(exist_ok=True)
    (project / ".agi" / "agents.json").write_text(
        json.dumps({"precise": {"temperature": 0, "max_output_tokens": 300, "tools": []}})
    )
    agi = make_agi(config={"models": {name: {"temperature": 0.7, "max_output_tokens": 900}}})
    fake_llm.enqueue(Turn(text="a"), Turn(text="b"))
    agi.ask("by the model's settings", session=agi.new_session(model=model, agent="plan").id)
    by_model = fake_llm.requests[-1].body
    agi.ask("by the agent's", session=agi.new_session(model=model, agent="precise").id)
    by_agent = fake_llm.requests[-1].body
    assert (by_model["temperature"], by_model[limit_key]) == (0.7, 900)
    assert (by_agent["temperature"], by_agent[limit_key]) == (0, 300)

    plain = make_agi()  # nothing configured: no temperature sent
    fake_llm.enqueue(Turn(text="c"))
    plain.ask("defaults", session=plain.new_session(model=model, agent="plan").id)
    assert "temperature" not in fake_llm.requests[-1].body


def test_a_temperature_out_of_range_is_a_config_error(make_agi: MakeAgi, project: Path) -> None:
    with pytest.raises(ConfigError, match="temperature"):
        make_agi(config={"models": {"gpt-4o-mini": {"temperature": 3}}})
    (project / ".agi").mkdir(exist_ok=True)
    (project / ".agi" / "agents.json").write_text(json.dumps({"hot": {"temperature": -1}}))
    with pytest.raises(ConfigError, match="temperature"):
        make_agi()
