"""Budgets end to end: the agent loop stops before a model call that would go over one."""

from __future__ import annotations

import pytest

from agi_jupyter.budget import Budget, BudgetStatus, NextCall, refusal
from agi_jupyter.errors import BudgetNotRaised, NoPendingApproval, UsageError
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.runtime.conftest import MakeAgi

MODEL = "openai-chat:gpt-4o-mini"


def _budget_events(agi: object, run_id: str) -> list[dict[str, object]]:
    store = agi.store  # type: ignore[attr-defined]
    return [e.payload for e in store.list_run_events(run_id) if e.type == "budget"]


def test_a_100_token_session_stops_before_the_call_that_would_exceed_it(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})], usage=(50, 10)),
        Turn(text="never asked for", usage=(70, 5)),
    )
    agi = make_agi()
    session = agi.new_session(agent="plan", model=MODEL, budget={"max_tokens": 100})
    assert session.budget == {"max_tokens": 100}

    result = agi.ask("list the files", session=session.id)

    run = result.run
    assert run.status == "failed"
    assert run.error is not None
    assert run.error["code"] == "BUDGET_EXCEEDED"
    assert "resends at least 50 tokens" in str(run.error["message"])
    assert len(fake_llm.requests) == 1  # the second call was never made
    ses = agi.session(session.id)
    assert ses.input_tokens + ses.output_tokens == 60 <= 100
    events = _budget_events(agi, run.id)
    assert events[0]["spent_tokens"] == 60
    assert events[0]["remaining_tokens"] == 40
    assert events[-1]["exceeded"] is True
    errors = [e.payload for e in agi.store.list_run_events(run.id) if e.type == "error"]
    assert errors[-1]["code"] == "BUDGET_EXCEEDED"


def test_a_spent_budget_refuses_the_next_run_before_any_call(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="hello", usage=(50, 10)))
    agi = make_agi()
    session = agi.new_session(model=MODEL, budget={"max_tokens": 60})
    assert agi.ask("hi", session=session.id).run.status == "succeeded"

    second = agi.ask("again", session=session.id).run

    assert second.error is not None
    assert second.error["code"] == "BUDGET_EXCEEDED"
    assert "token budget is spent" in str(second.error["message"])
    assert len(fake_llm.requests) == 1


def test_a_cost_budget_needs_a_priced_model(make_agi: MakeAgi, fake_llm: FakeLLMServer) -> None:
    agi = make_agi()
    session = agi.new_session(model="openai-chat:no-such-priced-model", budget={"max_usd": 1.0})

    run = agi.ask("hi", session=session.id).run

    assert run.error is not None
    assert run.error["code"] == "BUDGET_EXCEEDED"
    assert "no known price" in str(run.error["message"])
    assert fake_llm.requests == []


def test_a_cost_budget_stops_once_spent(make_agi: MakeAgi, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text="expensive", usage=(1_000_000, 0)))
    agi = make_agi()
    session = agi.new_session(model=MODEL, budget={"max_usd": 0.01})
    assert agi.ask("hi", session=session.id).run.status == "succeeded"
    assert agi.session(session.id).cost_usd > 0.01  # one call can overshoot (documented)

    run = agi.ask("again", session=session.id).run

    assert run.error is not None
    assert run.error["code"] == "BUDGET_EXCEEDED"
    assert "cost budget is spent" in str(run.error["message"])
    assert len(fake_llm.requests) == 1


def test_a_notebook_budget_counts_every_session_of_the_notebook(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="one", usage=(30, 10)), Turn(text="two", usage=(30, 10)))
    agi = make_agi(config={"budgets": {"notebooks": {"work/a.ipynb": {"max_tokens": 80}}}})
    first = agi.new_session(model=MODEL, notebook_path="work/a.ipynb")
    second = agi.new_session(model=MODEL, notebook_path="./work/a.ipynb")
    other = agi.new_session(model=MODEL, notebook_path="b.ipynb")
    assert agi.ask("1", session=first.id).run.status == "succeeded"
    assert agi.ask("2", session=second.id).run.status == "succeeded"

    refused = agi.ask("3", session=first.id).run
    fake_llm.enqueue(Turn(text="free", usage=(30, 10)))
    elsewhere = agi.ask("4", session=other.id).run

    assert refused.error is not None
    assert refused.error["code"] == "BUDGET_EXCEEDED"
    assert "notebook work/a.ipynb budget: 80/80 tokens" in str(refused.error["message"])
    assert elsewhere.status == "succeeded"


def test_the_config_gives_new_sessions_a_default_budget(make_agi: MakeAgi) -> None:
    agi = make_agi(config={"budgets": {"session": {"max_tokens": 500}}})
    assert agi.new_session().budget == {"max_tokens": 500}
    assert agi.new_session(budget={"max_usd": 2}).budget == {"max_usd": 2}


@pytest.mark.parametrize(
    "raw", [{"max_tokens": 0}, {"max_usd": -1}, {"max_tokens": "many"}, {"tokens": 5}]
)
def test_an_invalid_budget_is_a_usage_error(make_agi: MakeAgi, raw: dict[str, object]) -> None:
    with pytest.raises(UsageError, match="invalid budget"):
        make_agi().new_session(budget=raw)


def test_unknown_usage_is_not_counted_as_zero() -> None:
    status = BudgetStatus("session", Budget(max_tokens=1000), spent_tokens=10, spent_usd=0.0)
    assert refusal(status, NextCall(input_tokens_at_least=10)) is None
    reason = refusal(status, NextCall(input_tokens_at_least=10, usage_unknown=True))
    assert reason is not None
    assert "spend is unknown" in reason


def _park_on_budget(make_agi: MakeAgi, fake_llm: FakeLLMServer) -> tuple[str, str]:
    """A ``build`` session in review mode ask with 100 tokens: its second call would go over."""
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})], usage=(50, 10)),
        Turn(text="listed", usage=(70, 5)),
    )
    agi = make_agi()
    session = agi.new_session(
        agent="build", model=MODEL, budget={"max_tokens": 100}, review_mode="ask"
    )
    run = agi.ask("list the files", session=session.id).run
    assert (run.status, run.owner, run.error) == ("waiting_approval", None, None)
    assert agi.store.due_runs() == []  # no tick claims it until it is answered
    question = agi.pending_budget(run.id)
    assert question is not None
    (asked,) = question["budgets"]
    assert (asked["scope"], asked["spent_tokens"], asked["max_tokens"]) == ("session", 60, 100)
    assert question["input_tokens_at_least"] == 50
    assert "resends at least 50 tokens" in question["reason"]
    last = _budget_events(agi, run.id)[-1]
    assert (last["exceeded"], last["asking"]) == (True, True)
    assert len(fake_llm.requests) == 1
    agi.close()  # the process that ran it is gone: the question is in the store
    return run.id, session.id


def test_in_ask_mode_a_spent_budget_waits_and_a_larger_one_resumes_the_run(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    run_id, session_id = _park_on_budget(make_agi, fake_llm)
    agi = make_agi()
    with pytest.raises(BudgetNotRaised):
        agi.decide(run_id, "approve")
    with pytest.raises(BudgetNotRaised):
        agi.decide(run_id, "approve", budget={"max_tokens": 100})

    assert agi.decide(run_id, "approve", budget={"max_tokens": 1000}, resume=False) == []
    assert agi.run(run_id).status == "queued"
    assert agi.pending_budget(run_id) is None
    with pytest.raises(NoPendingApproval):
        agi.decide(run_id, "approve", budget={"max_tokens": 2000})
    make_agi().tick()  # any process resumes it

    run = agi.run(run_id)
    assert run.status == "succeeded", run.error
    assert agi.result(run_id).text == "listed"
    assert len(fake_llm.requests) == 2  # the first turn was not repeated
    assert agi.session(session_id).budget == {"max_tokens": 1000}


def test_in_ask_mode_a_denied_budget_fails_the_run(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    run_id, _ = _park_on_budget(make_agi, fake_llm)
    agi = make_agi()
    agi.decide(run_id, "deny", resume=False)
    agi.tick()

    run = agi.run(run_id)
    assert run.status == "failed"
    assert run.error is not None
    assert run.error["code"] == "BUDGET_EXCEEDED"
    assert "denied" in str(run.error["message"])
    assert len(fake_llm.requests) == 1
