"""Unknown is never zero, and an answer cut short says why: against the wire-level fake server.

- a cost nobody measured (the server sent no usage, or a local model without a catalog price)
  is stored as null on the run, and counted apart in the stats;
- an answer truncated because the context window was full says so, with the tokens (the local
  server's ``n_ctx`` from llama-server's ``/props``), distinct from the output token limit;
- tools offered to a local model whose chat template cannot take them (llama-server's
  ``chat_template_caps.supports_tools``, Ollama's ``capabilities``) give one ``notice`` per
  session, stored with the run's events.
"""

from __future__ import annotations

from typing import Any

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.kernel.render import RunView
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.runtime.conftest import MakeAgi

LOCAL = "compat:qwen3-local"  # a model no catalog prices
CHAT = "openai-chat:gpt-4o-mini"


def _local(make_agi: MakeAgi, fake_llm: FakeLLMServer, **config: Any) -> Agi:
    providers = {"compat": {"base_url": fake_llm.openai_base_url}}
    return make_agi(config={"providers": providers, **config})


def _view(agi: Agi, run_id: str) -> RunView:
    view = RunView()
    for event in agi.store.list_run_events(run_id):
        view.apply({"type": event.type, "run_id": event.run_id, **event.payload})
    return view


def test_a_run_without_usage_stores_its_cost_as_unknown(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="no usage here", send_usage=False), Turn(text="priced"))
    agi = make_agi()
    session = agi.new_session(model="openai-chat:gpt-4o-mini")
    unknown = agi.ask("hi", session=session.id).run
    assert unknown.cost_usd is None
    assert agi.run(unknown.id).cost_usd is None  # as stored, not only as returned
    priced = agi.ask("again", session=session.id).run
    assert priced.cost_usd is not None
    assert priced.cost_usd > 0
    stats = agi.stats()
    assert (stats["unknown_usage_runs"], stats["unknown_cost_runs"]) == (1, 1)
    assert stats["cost_usd"] == pytest.approx(priced.cost_usd)  # the measured costs only
    assert "cost ?" in _view(agi, unknown.id).footer()


def test_a_local_model_without_a_price_has_an_unknown_cost(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="local answer", usage=(12, 3)))
    agi = _local(make_agi, fake_llm)
    result = agi.ask("hi", model=LOCAL)
    assert result.run.usage["input_tokens"] == 12  # the tokens are known...
    assert result.run.cost_usd is None  # ...the price is not: never $0
    assert result.messages[-1].meta["cost_usd"] is None
    assert agi.stats()["unknown_cost_runs"] == 1
    footer = _view(agi, result.run.id).footer()
    assert "12 in / 3 out tokens · cost ?" in footer


def test_a_full_context_window_is_not_the_output_limit(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.serve_props({"default_generation_settings": {"n_ctx": 512}})
    fake_llm.enqueue(
        Turn(text="filled the window", hit_max_tokens=True, usage=(500, 12)),
        Turn(text="hit the output limit", hit_max_tokens=True, usage=(40, 12)),
    )
    agi = _local(make_agi, fake_llm)
    session = agi.new_session(model=LOCAL)
    full = agi.ask("long", session=session.id)
    meta = full.messages[-1].meta
    assert (meta["truncated"], meta["context_full"]) == (True, True)
    assert (meta["context_window"], meta["context_tokens"]) == (512, 512)
    assert full.run.usage["context_full"] is True
    footer = _view(agi, full.run.id).footer()
    assert "truncated: the context window is full (512 of 512 tokens)" in footer
    cut = agi.ask("short", session=session.id)
    assert cut.messages[-1].meta["truncated"] is True
    assert "context_full" not in cut.messages[-1].meta
    assert "truncated: output token limit" in _view(agi, cut.run.id).footer()


@pytest.mark.parametrize("server", ["llama-server", "ollama"])
def test_tools_offered_to_a_model_that_cannot_take_them_are_said_once_per_session(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, server: str
) -> None:
    if server == "llama-server":
        fake_llm.serve_props({"chat_template_caps": {"supports_tools": False}})
    else:
        fake_llm.serve_show({"capabilities": ["completion"]})
    agi = _local(make_agi, fake_llm)
    session = agi.new_session(agent="plan", model=LOCAL)
    first = agi.ask("list the files", session=session.id)
    notices = [e for e in agi.store.list_run_events(first.run.id) if e.type == "notice"]
    assert len(notices) == 1  # stored with the run's events
    assert notices[0].payload["code"] == "TOOLS_UNSUPPORTED"
    assert "cannot take tools" in notices[0].payload["message"]
    assert "drops the" in notices[0].payload["message"]
    assert "Warning" in _view(agi, first.run.id).to_markdown()
    second = agi.ask("and again", session=session.id)
    assert "notice" not in [e.type for e in agi.store.list_run_events(second.run.id)]
    other = agi.ask("a new session", agent="plan", model=LOCAL)
    assert "notice" in [e.type for e in agi.store.list_run_events(other.run.id)]


def test_a_model_whose_template_takes_tools_gets_no_notice(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.serve_props({"chat_template_caps": {"supports_tools": True}})
    agi = _local(make_agi, fake_llm)
    result = agi.ask("list the files", agent="plan", model=LOCAL)
    assert "notice" not in [e.type for e in agi.store.list_run_events(result.run.id)]
    assert any(r.path == "/props" for r in fake_llm.requests)  # it was asked


def test_budgets_never_count_unknown_spend_as_zero(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    """The documented policy (README, Budgets): a call that reported no usage stops the run
    before its next call under any budget; with ``max_usd`` a model without a price is refused
    at once."""
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})], send_usage=False),
        Turn(text="never asked"),
    )
    agi = _local(make_agi, fake_llm)
    session = agi.new_session(agent="plan", model=CHAT, budget={"max_tokens": 100_000})
    stopped = agi.ask("list", session=session.id).run
    assert (stopped.status, (stopped.error or {}).get("code")) == ("failed", "BUDGET_EXCEEDED")
    assert "reported no usage" in str((stopped.error or {}).get("message"))
    assert stopped.cost_usd is None
    assert fake_llm.pending_turns == 1  # the second call was never made
    unpriced = agi.new_session(model=LOCAL, budget={"max_usd": 1.0})
    refused = agi.ask("hi", session=unpriced.id).run
    assert (refused.error or {}).get("code") == "BUDGET_EXCEEDED"
    assert "no known price" in str((refused.error or {}).get("message"))
