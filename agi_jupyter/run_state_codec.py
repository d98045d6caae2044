"""The JSON form of a run's state (``run_state.LoopState``): the one place that knows its keys.

The store calls ``to_column`` / ``from_column`` for the ``runs.loop_state`` column
(``store.rows.RUNS``), so everything past the store boundary holds typed records; REST bodies
and ``run.final`` events show the same JSON object (``to_json``, ``pydantic_schema``). The form
is a flat object, as it was before it carried a version::

    {"version": 1,
     "input": [part, ...],                          # a queued run's prompt (records.part_to_dict)
     "max_iterations": 8,
     "iteration": 2, "usage": {...}, "cost_usd": 0.01, "last_input_tokens": 900,  # progress
     "budget_question": {"reason", "budgets", "input_tokens_at_least", "decision"},
     "external_call": {"id", "name", "arguments"},
     "parked_on": {"handle", "path", "tool_call_id", "name", "since", "until", "follower",
                   "execution_ids", "outcome": {"output", "ok", "data"} | null}}

Versions: a row without ``version`` was written before it had one (version 0, the same keys);
``decode`` brings older versions up to ``VERSION`` through ``_UPGRADES``. A change that an
older reader could misread bumps ``VERSION``, and such a row makes an older reader fail with
``RunStateUnreadable`` rather than guess. Keys this version does not know (added by a newer
writer without a bump) are kept in ``LoopState.extra`` and written back unchanged, so a process
of an older version that resumes a run does not drop what a newer one saved. Unknown keys
inside the known objects (``usage``, the question...) are dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agi_jupyter.errors import RunStateUnreadable, UsageError
from agi_jupyter.records import JSON, part_from_dict, part_to_dict
from agi_jupyter.run_state import (
    BudgetDecision,
    BudgetQuestion,
    ExecutionOutcome,
    ExternalCall,
    LoopProgress,
    LoopState,
    ParkedExecution,
    UsageTotals,
)

if TYPE_CHECKING:
    from pydantic_core import CoreSchema

VERSION = 1

_PROGRESS = ("iteration", "usage", "cost_usd", "last_input_tokens")
_KNOWN = frozenset(
    {
        "version",
        "input",
        "max_iterations",
        "budget_question",
        "external_call",
        "parked_on",
        *_PROGRESS,
    }
)


def _from_v0(data: JSON) -> JSON:
    """Version 0 (rows written before the state had a version) has the keys of version 1."""
    return data


# version -> the function that turns that version's JSON into the next version's
_UPGRADES: dict[int, Callable[[JSON], JSON]] = {0: _from_v0}


# --- encoding ----------------------------------------------------------------------------------


def encode(state: LoopState) -> JSON:
    """The JSON object of ``state`` (current version)."""
    out: JSON = {"version": VERSION}
    if state.input:
        out["input"] = [part_to_dict(p) for p in state.input]
    if state.max_iterations is not None:
        out["max_iterations"] = state.max_iterations
    progress = state.progress
    if progress is not None:
        out["iteration"] = progress.iteration
        out["usage"] = usage_to_json(progress.usage)
        out["cost_usd"] = progress.cost_usd
        out["last_input_tokens"] = progress.last_input_tokens
    if state.budget_question is not None:
        out["budget_question"] = question_to_json(state.budget_question)
    call = state.external_call
    if call is not None:
        out["external_call"] = {"id": call.id, "name": call.name, "arguments": dict(call.arguments)}
    if state.parked_on is not None:
        out["parked_on"] = parked_to_json(state.parked_on)
    for key, value in state.extra.items():
        out.setdefault(key, value)  # (never over a known key)
    return out


def parked_to_json(parked: ParkedExecution) -> JSON:
    """The cells a run waits for, as its state stores them."""
    outcome = parked.outcome
    return {
        "handle": parked.handle,
        "path": parked.path,
        "tool_call_id": parked.tool_call_id,
        "name": parked.name,
        "since": parked.since,
        "until": parked.until,
        "follower": parked.follower,
        "execution_ids": list(parked.execution_ids),
        "outcome": None
        if outcome is None
        else {"output": outcome.output, "ok": outcome.ok, "data": dict(outcome.data)},
    }


def usage_to_json(usage: UsageTotals) -> JSON:
    """A run's usage as its ``usage`` column and results hold it: ``unknown_turns`` and
    ``truncated`` only when they apply."""
    out: JSON = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    if usage.unknown_turns:
        out["unknown_turns"] = usage.unknown_turns
    if usage.truncated:
        out["truncated"] = True
    if usage.context_full:
        out["context_full"] = True
        out["context_window"] = usage.context_window
        out["context_tokens"] = usage.context_tokens
    return out


def question_to_json(question: BudgetQuestion) -> JSON:
    """A budget question as ``Agi.pending_budget`` and the REST API show it."""
    decision = question.decision
    answer: JSON | None = None
    if decision is not None:
        answer = {"decision": decision.decision}
        if decision.budget is not None:
            answer["budget"] = dict(decision.budget)
        answer.update(message=decision.message, decided_at=decision.decided_at)
    return {
        "reason": question.reason,
        "budgets": [dict(b) for b in question.budgets],
        "input_tokens_at_least": question.input_tokens_at_least,
        "decision": answer,
    }


# --- decoding ----------------------------------------------------------------------------------


def decode(raw: object) -> LoopState:
    """The state stored as ``raw`` (a decoded JSON object of any version up to ``VERSION``);
    ``RunStateUnreadable`` for a newer version or a malformed state."""
    if not isinstance(raw, Mapping):
        raise RunStateUnreadable(f"a run state is a JSON object, not {type(raw).__name__}")
    version = raw.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise RunStateUnreadable(f"a run state's version is a whole number, not {version!r}")
    if version > VERSION:
        raise RunStateUnreadable(
            f"the run's state was written by a newer agi-jupyter (state version {version}; "
            f"this one reads up to {VERSION}): upgrade to resume the run"
        )
    data = dict(raw)
    for old in range(version, VERSION):
        data = _UPGRADES[old](data)
    try:
        return _read(data)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise RunStateUnreadable(f"the run's state is malformed ({type(e).__name__}: {e})") from e


def _read(data: JSON) -> LoopState:
    limit = data.get("max_iterations")
    return LoopState(
        input=tuple(part_from_dict(dict(p)) for p in data.get("input") or ()),
        max_iterations=int(limit) if limit else None,
        progress=_progress(data) if any(k in data for k in _PROGRESS) else None,
        budget_question=_question(data.get("budget_question")),
        external_call=_call(data.get("external_call")),
        parked_on=_parked(data.get("parked_on")),
        extra={k: v for k, v in data.items() if k not in _KNOWN},
    )


def _progress(data: JSON) -> LoopProgress:
    return LoopProgress(
        iteration=int(data.get("iteration") or 0),
        usage=_usage(data.get("usage")),
        cost_usd=_cost(data),
        last_input_tokens=int(data.get("last_input_tokens") or 0),
    )


def _cost(data: JSON) -> float | None:
    """0 before the first turn; None (unknown) once a turn's cost was unknown."""
    if "cost_usd" not in data:
        return 0.0
    cost = data["cost_usd"]
    return None if cost is None else float(cost)


def _usage(raw: Mapping[str, Any] | None) -> UsageTotals:
    if not raw:
        return UsageTotals()
    return UsageTotals(
        _tokens(raw.get("input_tokens", 0)),
        _tokens(raw.get("output_tokens", 0)),
        unknown_turns=int(raw.get("unknown_turns") or 0),
        truncated=bool(raw.get("truncated")),
        context_full=bool(raw.get("context_full")),
        context_window=_tokens(raw.get("context_window")),
        context_tokens=_tokens(raw.get("context_tokens")),
    )


def _tokens(value: Any) -> int | None:
    return None if value is None else int(value)


def _question(raw: Mapping[str, Any] | None) -> BudgetQuestion | None:
    if not raw:
        return None
    return BudgetQuestion(
        reason=str(raw.get("reason") or ""),
        budgets=tuple(dict(b) for b in raw.get("budgets") or ()),
        input_tokens_at_least=int(raw.get("input_tokens_at_least") or 0),
        decision=_decision(raw.get("decision")),
    )


def _decision(raw: Mapping[str, Any] | None) -> BudgetDecision | None:
    if not raw:
        return None
    answer = raw["decision"]
    if answer not in ("approve", "deny"):
        raise ValueError(f"a budget decision is approve or deny, not {answer!r}")
    budget = raw.get("budget")
    return BudgetDecision(
        decision=answer,
        decided_at=str(raw.get("decided_at") or ""),
        budget=None if budget is None else dict(budget),
        message=raw.get("message"),
    )


def _call(raw: Mapping[str, Any] | None) -> ExternalCall | None:
    if raw is None:
        return None
    return ExternalCall(str(raw["id"]), str(raw["name"]), dict(raw.get("arguments") or {}))


def _parked(raw: Mapping[str, Any] | None) -> ParkedExecution | None:
    if raw is None:
        return None
    outcome = raw.get("outcome")
    follower = raw.get("follower")
    return ParkedExecution(
        handle=str(raw["handle"]),
        path=str(raw["path"]),
        tool_call_id=str(raw["tool_call_id"]),
        name=str(raw["name"]),
        since=str(raw["since"]),
        until=str(raw["until"]),
        follower=None if follower is None else str(follower),
        execution_ids=tuple(str(i) for i in raw.get("execution_ids") or ()),
        outcome=None
        if outcome is None
        else ExecutionOutcome(
            str(outcome["output"]), bool(outcome["ok"]), dict(outcome.get("data") or {})
        ),
    )


# --- the boundaries: the store's column, REST bodies, redaction -------------------------------


def to_column(value: object) -> JSON | None:
    """The ``runs.loop_state`` column's JSON of a ``Run.loop_state`` value (None: NULL)."""
    if value is None:
        return None
    if not isinstance(value, LoopState):
        raise UsageError(f"a run's loop_state is a run_state.LoopState, not {type(value).__name__}")
    return encode(value)


def from_column(raw: object) -> LoopState | None:
    """The ``Run.loop_state`` of the column's decoded JSON (NULL: None)."""
    return None if raw is None else decode(raw)


to_json = to_column  # a run's state in a JSON body (``endings.run_to_dict``)


def redacted(state: LoopState, redact: Callable[[Any], Any]) -> LoopState:
    """``state`` with ``redact`` (``Redactor.redact_json``) applied to its JSON form."""
    return decode(redact(encode(state)))


def pydantic_schema(cls: type[LoopState]) -> CoreSchema:
    """How pydantic shows a ``LoopState`` (``LoopState.__get_pydantic_core_schema__``): as its
    JSON object, validated from one (or given as the record)."""
    from pydantic_core import core_schema

    json_object = core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())

    def validate(value: object) -> LoopState:
        return value if isinstance(value, cls) else decode(value)

    return core_schema.no_info_plain_validator_function(
        validate,
        json_schema_input_schema=json_object,
        serialization=core_schema.plain_serializer_function_ser_schema(
            encode, return_schema=json_object
        ),
    )
