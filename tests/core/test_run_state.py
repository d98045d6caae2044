"""The run state's codec (``run_state_codec``): every kind of state round-trips, rows written
before the state had a version still read, unknown keys are kept, a newer version is refused;
and the boundaries that show the state as JSON (the store column, REST, ``run.final``, the CLI)
show the stored object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter import run_state_codec as codec
from agi_jupyter.cli.render import jsonable
from agi_jupyter.errors import RunStateUnreadable
from agi_jupyter.records import ImagePart, Run, TextPart
from agi_jupyter.run_state import (
    BudgetDecision,
    BudgetQuestion,
    ExternalCall,
    LoopProgress,
    LoopState,
    UsageTotals,
)
from agi_jupyter.runtime.endings import run_to_dict
from agi_jupyter.server.openapi import build_openapi
from agi_jupyter.server.responses import RunResponse
from agi_jupyter.store import SqliteStore, open_store

SPENT = {"scope": "session", "max_tokens": 100, "spent_tokens": 90, "notebook_path": None}
QUESTION = BudgetQuestion("the session's budget is spent", (SPENT,), 900)

STATES = {
    "empty": LoopState(),
    "queued": LoopState(
        input=(TextPart(text="hi"), ImagePart(mime="image/png", data_base64="aGk=")),
        max_iterations=3,
    ),
    "in progress": LoopState(
        max_iterations=8, progress=LoopProgress(2, UsageTotals(120, 30), 0.0125, 90)
    ),
    "usage unknown, truncated": LoopState(
        max_iterations=8,
        progress=LoopProgress(3, UsageTotals(None, None, 1, truncated=True), 0.5, 0),
    ),
    "waiting for a budget": LoopState(
        max_iterations=8,
        progress=LoopProgress(1, UsageTotals(90, 5), 0.0, 90),
        budget_question=QUESTION,
    ),
    "budget raised": LoopState(
        budget_question=BudgetQuestion(
            QUESTION.reason,
            QUESTION.budgets,
            900,
            BudgetDecision("approve", "2026-01-01T00:00:00.000Z", {"max_tokens": 500}, "ok"),
        )
    ),
    "budget denied": LoopState(
        budget_question=BudgetQuestion(
            QUESTION.reason, (), 0, BudgetDecision("deny", "2026-01-01T00:00:00.000Z")
        )
    ),
    "external call": LoopState(
        external_call=ExternalCall("mcp_1", "fs.read", {"path": "a.txt", "limit": 2})
    ),
    "keys of a newer writer": LoopState(
        max_iterations=2, extra={"plan": ["a", "b"], "sdk_resume": {"thread": "t1"}}
    ),
}


@pytest.mark.parametrize("name", list(STATES))
def test_every_kind_of_state_round_trips_through_json_text(name: str) -> None:
    state = STATES[name]
    stored = json.dumps(codec.encode(state))  # as the store writes the column
    assert json.loads(stored)["version"] == codec.VERSION
    assert codec.decode(json.loads(stored)) == state


def test_the_json_form_is_the_flat_object_it_always_was() -> None:
    assert codec.encode(STATES["in progress"]) == {
        "version": 1,
        "max_iterations": 8,
        "iteration": 2,
        "usage": {"input_tokens": 120, "output_tokens": 30},
        "cost_usd": 0.0125,
        "last_input_tokens": 90,
    }
    assert codec.encode(STATES["budget raised"])["budget_question"] == {
        "reason": "the session's budget is spent",
        "budgets": [SPENT],
        "input_tokens_at_least": 900,
        "decision": {
            "decision": "approve",
            "budget": {"max_tokens": 500},
            "message": "ok",
            "decided_at": "2026-01-01T00:00:00.000Z",
        },
    }
    assert codec.encode(STATES["queued"])["input"] == [
        {"type": "text", "text": "hi"},
        {"mime": "image/png", "data_base64": "aGk=", "url": None, "type": "image"},
    ]


# Rows as the code before the version wrote them (``app.submit``, ``AgentLoop``, ``Agi.decide``,
# ``mcp_server.calls``): no ``version`` key.
OLD_ROWS: list[tuple[dict[str, Any], LoopState]] = [
    ({}, LoopState()),
    (
        {"input": [{"type": "text", "text": "hi"}], "max_iterations": 3},
        LoopState(input=(TextPart(text="hi"),), max_iterations=3),
    ),
    (
        {
            "iteration": 2,
            "max_iterations": 8,
            "usage": {"input_tokens": None, "output_tokens": None, "unknown_turns": 1},
            "cost_usd": 0.0,
            "last_input_tokens": 0,
        },
        LoopState(max_iterations=8, progress=LoopProgress(2, UsageTotals(None, None, 1), 0.0)),
    ),
    (
        {
            "iteration": 1,
            "max_iterations": 8,
            "usage": {"input_tokens": 90, "output_tokens": 5, "truncated": True},
            "cost_usd": 0.01,
            "last_input_tokens": 90,
            "budget_question": {
                "reason": "spent",
                "budgets": [SPENT],
                "input_tokens_at_least": 90,
                "decision": {
                    "decision": "approve",
                    "budget": {"max_usd": 2.0},
                    "message": None,
                    "decided_at": "2026-01-01T00:00:00.000Z",
                },
            },
        },
        LoopState(
            max_iterations=8,
            progress=LoopProgress(1, UsageTotals(90, 5, truncated=True), 0.01, 90),
            budget_question=BudgetQuestion(
                "spent",
                (SPENT,),
                90,
                BudgetDecision("approve", "2026-01-01T00:00:00.000Z", {"max_usd": 2.0}),
            ),
        ),
    ),
    (
        {
            "budget_question": {
                "reason": "spent",
                "budgets": [],
                "input_tokens_at_least": 0,
                "decision": None,
            }
        },
        LoopState(budget_question=BudgetQuestion("spent", (), 0)),
    ),
    (
        {"external_call": {"id": "mcp_1", "name": "fs.read", "arguments": {"path": "a"}}},
        LoopState(external_call=ExternalCall("mcp_1", "fs.read", {"path": "a"})),
    ),
]


@pytest.mark.parametrize(("row", "state"), OLD_ROWS)
def test_rows_without_a_version_are_version_0_and_read(
    row: dict[str, Any], state: LoopState
) -> None:
    assert codec.decode(row) == state
    assert codec.decode({**row, "version": 0}) == state
    # written back, an old row keeps its keys and gains the version (1 added only that)
    assert codec.encode(codec.decode(row)) == {"version": codec.VERSION, **row}


def test_unknown_keys_are_kept_as_they_were_and_never_override_known_ones() -> None:
    row = {"version": 1, "iteration": 1, "later_feature": {"x": [1, 2]}, "note": "n"}
    state = codec.decode(row)
    assert state.extra == {"later_feature": {"x": [1, 2]}, "note": "n"}
    assert state.iteration == 1
    assert codec.encode(state)["later_feature"] == {"x": [1, 2]}
    clash = LoopState(max_iterations=4, extra={"max_iterations": 99})
    assert codec.encode(clash)["max_iterations"] == 4


def test_unknown_keys_inside_known_objects_are_dropped() -> None:
    row = {"usage": {"input_tokens": 1, "output_tokens": 2, "cached": 7}, "iteration": 1}
    assert codec.decode(row).progress == LoopProgress(1, UsageTotals(1, 2), 0.0)


def test_a_newer_version_is_refused_with_a_clear_error() -> None:
    with pytest.raises(RunStateUnreadable, match=r"newer agi-jupyter \(state version 2;"):
        codec.decode({"version": 2, "iteration": 1})


@pytest.mark.parametrize(
    "raw",
    [
        [1, 2],
        "state",
        {"version": "1"},
        {"version": -1},
        {"iteration": "many"},
        {"budget_question": {"reason": "r", "decision": {"decision": "maybe"}}},
        {"external_call": {"name": "fs.read"}},
        {"input": [{"type": "nope"}]},
    ],
)
def test_a_malformed_state_is_refused_with_a_clear_error(raw: object) -> None:
    with pytest.raises(RunStateUnreadable) as caught:
        codec.decode(raw)
    assert caught.value.code == "RUN_STATE_UNREADABLE"


def test_usage_totals_add_turns_and_stay_unknown_once_a_turn_sent_none() -> None:
    total = UsageTotals().add((10, 2)).add((5, 1), truncated=True)
    assert total == UsageTotals(15, 3, 0, truncated=True)
    unknown = total.add(None).add((7, 7))
    assert unknown == UsageTotals(None, None, 1, truncated=True)
    assert codec.usage_to_json(unknown) == {
        "input_tokens": None,
        "output_tokens": None,
        "unknown_turns": 1,
        "truncated": True,
    }


def test_answering_a_budget_question() -> None:
    decision = BudgetDecision("deny", "2026-01-01T00:00:00.000Z")
    answered = STATES["waiting for a budget"].answered(decision)
    assert answered.budget_question == BudgetQuestion(
        QUESTION.reason, QUESTION.budgets, 900, decision
    )
    with pytest.raises(ValueError, match="no budget decision"):
        LoopState().answered(decision)


def test_redaction_goes_through_the_json_form() -> None:
    state = LoopState(
        input=(TextPart(text="key sk-123"),), external_call=ExternalCall("c", "n", {"k": "sk-123"})
    )

    def redact(value: Any) -> Any:
        return json.loads(json.dumps(value).replace("sk-123", "[REDACTED]"))

    clean = codec.redacted(state, redact)
    assert clean.input == (TextPart(text="key [REDACTED]"),)
    assert clean.external_call == ExternalCall("c", "n", {"k": "[REDACTED]"})


# --- the boundaries -------------------------------------------------------------------------


def _run(state: LoopState | None) -> Run:
    return Run(id="run_1", session_id="ses_1", loop_state=state)


@pytest.mark.parametrize("name", ["empty", "queued", "waiting for a budget"])
def test_rest_run_final_and_cli_show_the_stored_object(name: str) -> None:
    state = STATES[name]
    stored = codec.encode(state)
    body = json.loads(RunResponse(run=_run(state)).model_dump_json())
    assert body["run"]["loop_state"] == stored
    assert run_to_dict(_run(state))["loop_state"] == stored
    assert jsonable(_run(state))["loop_state"] == stored
    assert json.loads(RunResponse(run=_run(None)).model_dump_json())["run"]["loop_state"] is None
    assert RunResponse.model_validate({"run": {**body["run"]}}).run.loop_state == state


def test_the_openapi_document_shows_a_json_object_as_before() -> None:
    run = build_openapi()["components"]["schemas"]["Run"]
    assert run["properties"]["loop_state"] == {
        "anyOf": [{"additionalProperties": True, "type": "object"}, {"type": "null"}],
        "default": None,
        "title": "Loop State",
    }


def test_the_store_column_decodes_old_rows_and_refuses_untyped_values(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    assert isinstance(store, SqliteStore)
    try:
        session = store.create_session()
        run = store.create_run(session.id, loop_state=STATES["queued"])
        assert store.get_run(run.id).loop_state == STATES["queued"]
        old = {"input": [{"type": "text", "text": "from before"}], "iteration": 1}
        with store._write() as conn:
            conn.execute("UPDATE runs SET loop_state = ? WHERE id = ?", [json.dumps(old), run.id])
        read = store.get_run(run.id).loop_state
        assert read is not None
        assert (read.input, read.iteration) == ((TextPart(text="from before"),), 1)
        assert store.list_runs(session_id=session.id).items[0].loop_state == read
        store.update_run(run.id, loop_state=read)
        raw = store.query("SELECT loop_state FROM runs WHERE id = ?", [run.id]).rows[0][0]
        assert json.loads(raw)["version"] == codec.VERSION
    finally:
        store.close()
