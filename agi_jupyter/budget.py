"""Token and cost budgets of sessions and notebooks, and the check before every model call.

A budget is ``max_tokens`` (input + output tokens) and/or ``max_usd`` (list-price cost from
the provider catalog). A *session* budget is stored with the session (``sessions.budget``,
set when it is created: API, ``new_session(budget=)``, ``%agi new --max-tokens``, ``agi
--max-tokens``; default ``budgets.session`` of the config). A *notebook* budget is config
(``budgets.notebooks``, keyed by the notebook's path relative to the project) or set from a
front door (``%agi budget --notebook``, ``PUT /agi/v1/notebook-budgets``: stored in the store's
``notebook_budgets``, winning over the config's, seen by every process at once) and counts
what every session of that notebook spent.

The rule (``check``), applied by the native agent loop before each model call: the call is
refused with ``BUDGET_EXCEEDED`` when what was spent already reaches a limit, or when spent
plus a lower bound of the call's own size goes over it. The lower bound is the input tokens of
the run's previous call (the next request resends that whole conversation, plus what was added
since), priced at the model's cheapest input rate (cached); the first call of a run has no such
bound, so a single call can still overshoot by its own size. Usage that is unknown is never
counted as 0: a call that reported no usage stops the run's next call under a budget, and with
``max_usd`` set a model without a catalog price is refused outright (its spend could not be
measured). Runs of the other SDKs (claude, codex, acp) make their calls inside the SDK: they
are only refused at the start once a budget is spent (``check_start``). Spent tokens and cost
are the session's counters (``sessions.input_tokens/output_tokens/cost_usd``), updated after
every model call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agi_jupyter.errors import BudgetExceeded, BudgetNotRaised, UsageError
from agi_jupyter.records import JSON, Session
from agi_jupyter.run_state import BudgetQuestion

if TYPE_CHECKING:
    from agi_jupyter.store import Store


class BudgetLayer(BaseModel):
    """One budget as written in a config file or a request."""

    model_config = ConfigDict(extra="forbid")
    max_tokens: int | None = Field(default=None, ge=1)
    max_usd: float | None = Field(default=None, gt=0)


class BudgetsLayer(BaseModel):
    """``budgets`` of a config layer: the default of new sessions, and per notebook path."""

    model_config = ConfigDict(extra="forbid")
    session: BudgetLayer | None = None
    notebooks: dict[str, BudgetLayer] | None = None


@dataclass(frozen=True)
class Budget:
    max_tokens: int | None = None
    max_usd: float | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> Budget | None:
        """A budget from ``{"max_tokens": N, "max_usd": X}`` (either optional); None for
        nothing or an empty mapping. ``UsageError`` for anything else."""
        if not raw:
            return None
        try:
            layer = BudgetLayer.model_validate(dict(raw))
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'budget'}: {err['msg']}"
                for err in e.errors()
            )
            raise UsageError(f"invalid budget: {problems}") from None
        return cls.of(layer)

    @classmethod
    def of(cls, layer: BudgetLayer | None) -> Budget | None:
        if layer is None or (layer.max_tokens is None and layer.max_usd is None):
            return None
        return cls(layer.max_tokens, layer.max_usd)

    def to_dict(self) -> JSON:
        return {k: v for k, v in (("max_tokens", self.max_tokens), ("max_usd", self.max_usd)) if v}


@dataclass(frozen=True)
class BudgetSettings:
    """The config's budgets: ``session`` for new sessions, ``notebooks`` by path."""

    session: Budget | None = None
    notebooks: dict[str, Budget] = field(default_factory=dict)

    @classmethod
    def of(cls, layer: BudgetsLayer | None) -> BudgetSettings:
        if layer is None:
            return cls()
        notebooks = {
            notebook_key(path): budget
            for path, raw in (layer.notebooks or {}).items()
            if (budget := Budget.of(raw)) is not None
        }
        return cls(Budget.of(layer.session), notebooks)

    def for_notebook(self, path: str | None) -> Budget | None:
        return self.notebooks.get(notebook_key(path)) if path else None

    def with_stored(self, store: Store) -> BudgetSettings:
        """These settings with the notebook budgets set from a front door (the store's, which
        win over the config's: set later, and seen by every process at once)."""
        stored = {
            notebook_key(path): budget
            for path, raw in store.notebook_budgets().items()
            if (budget := Budget.parse(raw)) is not None
        }
        if not stored:
            return self
        return BudgetSettings(self.session, {**self.notebooks, **stored})


def notebook_key(path: str | None) -> str:
    """A notebook path as budgets key it: relative, ``/``-separated, no leading ``./``."""
    return str(PurePosixPath(str(path or "").replace("\\", "/"))).lstrip("/")


@dataclass(frozen=True)
class BudgetStatus:
    """A budget with what was spent against it: ``scope`` is ``session`` or ``notebook``."""

    scope: str
    budget: Budget
    spent_tokens: int
    spent_usd: float
    notebook_path: str | None = None

    @property
    def remaining_tokens(self) -> int | None:
        if self.budget.max_tokens is None:
            return None
        return max(0, self.budget.max_tokens - self.spent_tokens)

    @property
    def remaining_usd(self) -> float | None:
        if self.budget.max_usd is None:
            return None
        return max(0.0, self.budget.max_usd - self.spent_usd)

    @property
    def exhausted(self) -> bool:
        return self.remaining_tokens == 0 or self.remaining_usd == 0.0

    def to_dict(self) -> JSON:
        return {
            "scope": self.scope,
            "notebook_path": self.notebook_path,
            "max_tokens": self.budget.max_tokens,
            "max_usd": self.budget.max_usd,
            "spent_tokens": self.spent_tokens,
            "spent_usd": self.spent_usd,
            "remaining_tokens": self.remaining_tokens,
            "remaining_usd": self.remaining_usd,
        }

    def describe(self) -> str:
        return describe(self.to_dict())


def describe(status: Mapping[str, Any]) -> str:
    """``session budget: 60/100 tokens`` from a status or a ``budget`` event: what the magic
    footer, the widget, ``agi`` and ``agi stats`` show."""
    parts = []
    if status.get("max_tokens") is not None:
        parts.append(f"{status.get('spent_tokens') or 0}/{status['max_tokens']} tokens")
    if status.get("max_usd") is not None:
        parts.append(f"${float(status.get('spent_usd') or 0):.4f}/${float(status['max_usd']):g}")
    where = (
        f"notebook {status.get('notebook_path')}"
        if status.get("scope") == "notebook"
        else "session"
    )
    return f"{where} budget: {', '.join(parts)}"


def session_budget(session: Session) -> Budget | None:
    return Budget.parse(session.budget) if session.budget else None


def statuses(store: Store, session: Session, settings: BudgetSettings) -> list[BudgetStatus]:
    """The budgets that apply to a session's runs, with what was spent so far."""
    found: list[BudgetStatus] = []
    settings = settings.with_stored(store)
    own = session_budget(session)
    if own is not None:
        tokens = session.input_tokens + session.output_tokens
        found.append(BudgetStatus("session", own, tokens, session.cost_usd))
    notebook = settings.for_notebook(session.notebook_path)
    if notebook is not None and session.notebook_path:
        tokens, usd = notebook_spent(store, session.notebook_path)
        found.append(
            BudgetStatus("notebook", notebook, tokens, usd, notebook_key(session.notebook_path))
        )
    return found


def notebook_spent(store: Store, path: str) -> tuple[int, float]:
    """Tokens and cost of every session of the notebook ``path``, and of its inline
    completions."""
    key = notebook_key(path)
    completions = store.completion_totals(key)
    tokens = int(completions["input_tokens"]) + int(completions["output_tokens"])
    usd = float(completions["cost_usd"])
    cursor: str | None = None
    for _ in range(10_000):  # bounded: 100 sessions a page
        page = store.list_sessions(limit=100, cursor=cursor)
        for s in page.items:
            if s.notebook_path and notebook_key(s.notebook_path) == key:
                tokens += s.input_tokens + s.output_tokens
                usd += s.cost_usd
        cursor = page.next_cursor
        if cursor is None:
            break
    return tokens, usd


def every_status(store: Store, settings: BudgetSettings) -> list[JSON]:
    """Every budget of the project with its spend: each session that has one (with its id),
    then each notebook budget (config and stored: ``agi stats``)."""
    found: list[JSON] = []
    settings = settings.with_stored(store)
    cursor: str | None = None
    for _ in range(10_000):  # bounded: 100 sessions a page
        page = store.list_sessions(limit=100, cursor=cursor)
        for s in page.items:
            own = session_budget(s)
            if own is not None:
                status = BudgetStatus("session", own, s.input_tokens + s.output_tokens, s.cost_usd)
                found.append({**status.to_dict(), "session_id": s.id})
        cursor = page.next_cursor
        if cursor is None:
            break
    for path, budget in sorted(settings.notebooks.items()):
        tokens, usd = notebook_spent(store, path)
        found.append(BudgetStatus("notebook", budget, tokens, usd, path).to_dict())
    return found


@dataclass(frozen=True)
class NextCall:
    """What is known of the model call about to be made."""

    input_tokens_at_least: int = 0  # the previous call's prompt (0: unknown)
    cheapest_usd_per_mtok: float | None = None  # None: the model has no catalog price
    usage_unknown: bool = False  # an earlier call of the run reported no usage


def refusal(status: BudgetStatus, call: NextCall) -> str | None:
    """Why ``call`` may not be made under ``status`` (the module's rule), or None."""
    budget, what = status.budget, status.describe()
    if call.usage_unknown:
        return f"{what}: an earlier model call reported no usage, so the spend is unknown"
    if budget.max_tokens is not None:
        if status.spent_tokens >= budget.max_tokens:
            return f"{what}: the token budget is spent"
        if status.spent_tokens + call.input_tokens_at_least > budget.max_tokens:
            return (
                f"{what}: the next model call resends at least "
                f"{call.input_tokens_at_least} tokens, which would go over the budget"
            )
    if budget.max_usd is not None:
        if call.cheapest_usd_per_mtok is None:
            return f"{what}: the model has no known price, so max_usd cannot be kept"
        if status.spent_usd >= budget.max_usd:
            return f"{what}: the cost budget is spent"
        floor = call.input_tokens_at_least * call.cheapest_usd_per_mtok / 1_000_000
        if status.spent_usd + floor > budget.max_usd:
            return (
                f"{what}: the next model call costs at least ${floor:.4f}, which would go "
                "over the budget"
            )
    return None


def raisable(status: BudgetStatus, call: NextCall) -> bool:
    """Whether a larger budget can let ``call`` be made under ``status``: a session budget
    (notebook budgets are the config's) whose spend is measured (known usage, and a catalog
    price when it has ``max_usd``). Review mode ``ask`` then asks for one instead of failing."""
    if status.scope != "session" or call.usage_unknown:
        return False
    return status.budget.max_usd is None or call.cheapest_usd_per_mtok is not None


def question(refused: list[BudgetStatus], call: NextCall, reason: str) -> BudgetQuestion:
    """The budget question a run waits on (``LoopState.budget_question``): the budgets that
    refused the call (spent, limit), the call's lower bound, and why."""
    return BudgetQuestion(
        reason=reason,
        budgets=tuple(s.to_dict() for s in refused),
        input_tokens_at_least=call.input_tokens_at_least,
    )


def raised(current: Budget | None, given: Budget | None) -> Budget:
    """``current`` with the limits of ``given``; ``BudgetNotRaised`` unless ``given`` sets
    at least one limit and each it sets is above the current one."""
    if given is None:
        raise BudgetNotRaised(
            "the run waits for a larger budget: approve with max_tokens and/or max_usd "
            "above the session's budget, or deny"
        )
    old = current or Budget()
    for name in ("max_tokens", "max_usd"):
        new, was = getattr(given, name), getattr(old, name)
        if new is not None and was is not None and new <= was:
            raise BudgetNotRaised(f"{name} {new} is not above the session's {was}")
    return Budget(
        given.max_tokens if given.max_tokens is not None else old.max_tokens,
        given.max_usd if given.max_usd is not None else old.max_usd,
    )


def check_start(found: list[BudgetStatus]) -> None:
    """For runs of other agent SDKs (claude, codex, acp), whose model calls happen inside the
    SDK: refuse to start one once a budget is spent (they cannot be stopped between calls)."""
    for status in found:
        if status.exhausted:
            raise BudgetExceeded(f"{status.describe()}: the budget is spent")


def check(found: list[BudgetStatus], call: NextCall) -> None:
    """Raise ``BudgetExceeded`` when the call may not be made under any of ``found``."""
    for status in found:
        reason = refusal(status, call)
        if reason is not None:
            raise BudgetExceeded(reason)
