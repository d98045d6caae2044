"""What a run keeps between its attempts (``records.Run.loop_state``), as typed records.

A run's state lives in the store while the run waits, and is read back by the attempt that
resumes it, in this process or another (after a crash, a takeover, a release, a decision):

- ``input``: the prompt of a queued run, until its attempt makes it the session's user message;
- ``max_iterations``: the run's own limit of model turns (None: the config's);
- ``progress``: where the native agent loop is, saved with each model turn (``LoopProgress``);
- ``budget_question``: what a run waiting for a larger budget asks, and the answer once a person
  gave it (``BudgetQuestion``; tool calls waiting for approval are ``tool_calls`` rows);
- ``external_call``: the tool call of an external agent that the run records (``ExternalCall``,
  the ``external`` SDK adapter's input);
- ``parked_on``: the cells a run waits for in ``waiting_execution`` (``ParkedExecution``: the
  ``notebook.wait`` call that parked it, the execution handle, who follows it, and once the
  cells ended or nobody follows them any more, what that call answers);
- ``extra``: what a newer writer stored that this version does not know, kept as it was and
  written back unchanged.

The records are frozen: a change is a new record (``dataclasses.replace``). They import nothing
from the package at run time, so ``records`` can use them; their JSON form, its version and the
migration of older rows are the codec's (``run_state_codec``), the one place that knows the keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

    from agi_jupyter.records import Part

BudgetAnswer = Literal["approve", "deny"]


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """The tokens of a run's model turns so far. A turn whose server sent no usage makes the
    totals unknown (None), never zero: a sum missing a part would understate tokens and cost."""

    input_tokens: int | None = 0
    output_tokens: int | None = 0
    unknown_turns: int = 0  # turns whose server sent no usage
    truncated: bool = False  # a turn stopped at a token limit
    # a turn stopped because prompt and answer filled the context window (not the output
    # limit): the window and the tokens it held
    context_full: bool = False
    context_window: int | None = None
    context_tokens: int | None = None

    def add(
        self,
        tokens: tuple[int, int] | None,
        *,
        truncated: bool = False,
        context: tuple[int | None, int | None] | None = None,
    ) -> UsageTotals:
        """These totals with one more turn: its (input, output) tokens, None if not sent;
        ``context``: (window, tokens) when that turn filled the context window."""
        input_tokens, output_tokens, unknown = self.input_tokens, self.output_tokens, 0
        if tokens is None:
            unknown, input_tokens, output_tokens = 1, None, None
        elif not self.unknown_turns:
            input_tokens = (input_tokens or 0) + tokens[0]
            output_tokens = (output_tokens or 0) + tokens[1]
        window, held = (self.context_window, self.context_tokens) if context is None else context
        return UsageTotals(
            input_tokens,
            output_tokens,
            self.unknown_turns + unknown,
            self.truncated or truncated,
            self.context_full or context is not None,
            window,
            held,
        )


@dataclass(frozen=True, slots=True)
class LoopProgress:
    """Where the native agent loop is: saved with each model turn's assistant message, so a
    resumed attempt continues after that turn."""

    iteration: int
    usage: UsageTotals
    cost_usd: float | None  # None: a turn's cost is unknown (no usage, or no catalog price)
    # For the budget check of the next call (budget.py): its prompt resends at least this
    # one's (0 when the call sent no usage).
    last_input_tokens: int = 0


@dataclass(frozen=True, slots=True)
class BudgetDecision:
    """A person's answer to a budget question (``Agi.decide``)."""

    decision: BudgetAnswer
    decided_at: str
    budget: Mapping[str, Any] | None = None  # the session's raised budget (approve)
    message: str | None = None


@dataclass(frozen=True, slots=True)
class BudgetQuestion:
    """What a run waiting for a larger budget asks (review mode ``ask``): why, the budgets that
    refused its next model call (``budget.BudgetStatus.to_dict``: scope, spent, limits) and
    that call's lower bound; ``decision`` once answered."""

    reason: str
    budgets: tuple[Mapping[str, Any], ...]
    input_tokens_at_least: int
    decision: BudgetDecision | None = None


@dataclass(frozen=True, slots=True)
class ExternalCall:
    """An external agent's call of one of our tools (``sdk.external``), recorded as a run."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExecutionOutcome:
    """What the ``notebook.wait`` call of a parked run answers once it resumes: the text the
    model reads, whether it is an error, and the call's structured data."""

    output: str
    ok: bool
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParkedExecution:
    """The cells a run waits for with no owner (``waiting_execution``): the ``notebook.wait``
    call that parked it (its id and tool name; its row stays ``running``), the execution
    handle, the notebook and the ledger's rows of the cells, when it parked and until when
    it waits at most, and the process following the job (``RuntimeDeps.owner``; None: nobody,
    the process stopped). ``outcome``: set with the run queued again, the call's answer."""

    handle: str
    path: str
    tool_call_id: str
    name: str
    since: str
    until: str
    follower: str | None
    execution_ids: tuple[str, ...] = ()
    outcome: ExecutionOutcome | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopState:
    """A run's state between attempts (see the module's docstring)."""

    input: tuple[Part, ...] = ()
    max_iterations: int | None = None
    progress: LoopProgress | None = None
    budget_question: BudgetQuestion | None = None
    external_call: ExternalCall | None = None
    parked_on: ParkedExecution | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def iteration(self) -> int:
        """The last model turn saved (0: none yet)."""
        return 0 if self.progress is None else self.progress.iteration

    def answered(self, decision: BudgetDecision) -> LoopState:
        """This state with its budget question answered."""
        if self.budget_question is None:
            raise ValueError("the run waits for no budget decision")
        return replace(self, budget_question=replace(self.budget_question, decision=decision))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        """In REST bodies a run's state is its stored JSON object (the codec's), as before it
        was typed: the OpenAPI document and the clients see a JSON object."""
        from agi_jupyter import run_state_codec

        return run_state_codec.pydantic_schema(cls)
