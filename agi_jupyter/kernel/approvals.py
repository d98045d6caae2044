"""Deciding a run's waiting tool calls from a notebook: ``%agi approve|deny RUN``.

The decision is recorded in the store (``Agi.decide``, door ``cell``), so it holds across
kernel restarts; the run then resumes in this kernel, and its continuation is shown in the
magic's output. The buttons under a ``%%agi`` cell whose run waits, which follow a decision
taken anywhere, are ``decisions.DecisionArea``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from agi_jupyter.kernel._ipython import is_terminal
from agi_jupyter.kernel.decisions import DecisionArea, decide_here
from agi_jupyter.kernel.live import MarkdownView
from agi_jupyter.kernel.render import RunView
from agi_jupyter.kinds import DecisionDoor

if TYPE_CHECKING:
    from agi_jupyter.kernel.context import KernelContext


class NobodyToApprove(Exception):
    """A ``%%agi`` run waits for a decision in a kernel no person drives (nbclient, papermill,
    ``nbconvert --execute``, nbval): the cell fails at once and says how to allow the call,
    instead of ending with buttons nobody will press. The run keeps waiting, durably: a
    decision from a terminal (``agi approve``) still resumes it."""

    def __init__(self, run_id: str, waiting_on: str) -> None:
        self.lines = [
            f"agi: run {run_id} waits for your approval of {waiting_on}, but this notebook runs"
            " headless (nbclient, papermill or nbconvert): nobody can answer here.",
            "agi: let the notebook's session run its tools with `%agi new --review-mode auto`"
            " (or `auto-edit`) in a cell before this one, or set `review_mode` in"
            f" .agi/config.json; or decide from a terminal: agi approve {run_id}",
        ]
        super().__init__("\n".join(self.lines))

    def _render_traceback_(self) -> list[str]:
        """IPython shows these lines as the cell's error, without a Python traceback."""
        return self.lines


def waiting_on(ctx: KernelContext, run_id: str) -> str:
    """What a waiting run waits for, in words: its tool calls' names, or a larger budget."""
    names = ", ".join(sorted({c.name for c in ctx.agi.pending_approvals(run_id)}))
    if names:
        return names
    return "a larger budget" if ctx.agi.pending_budget(run_id) is not None else "a decision"


# Stored events replayed into the view before the continuation (who runs it, which calls).
_CONTEXT = ("run.meta", "tool.call.started", "tool.call.arguments.done", "approval.requested")


def decide_and_follow(
    ctx: KernelContext,
    run_id: str,
    decision: str,
    *,
    tool_call_id: str | None = None,
    message: str | None = None,
    budget: dict[str, Any] | None = None,
) -> RunView:
    """Record the decision, resume the run here once nothing is left undecided, and return
    the view of what the run did after it (its continuation)."""
    from agi_jupyter.kernel.dispatch import follow_with_dispatch

    stored = ctx.agi.run_events(run_id)
    after = stored[-1].seq if stored else 0
    view = RunView(run_id=run_id)
    for stored_event in stored:  # the run's header and tool blocks, so the view reads whole
        if stored_event.type in _CONTEXT:
            view.apply({"type": stored_event.type, "run_id": run_id, **stored_event.payload})
    options = {"tool_call_id": tool_call_id, "message": message, "budget": budget}
    decided = decide_here(ctx.agi, run_id, decision, DecisionDoor.CELL, **options)
    names = ", ".join(c.name for c in decided) or (f"budget {budget}" if budget else "budget")
    print(f"agi: {decision.replace('_', ' ')} {names}", file=sys.stderr)
    for event in follow_with_dispatch(ctx.agi, run_id, ctx.dispatcher, after_seq=after):
        view.apply(event)
    view.status = ctx.agi.run(run_id).status
    return view


def show(ctx: KernelContext, view: RunView) -> Any:
    """The continuation as the cell's output (with buttons again if it waits once more)."""
    if is_terminal(ctx.shell):
        from agi_jupyter.kernel.tables import Text

        return Text(view.to_text())
    from agi_jupyter.kernel._ipython import display

    answer = display(MarkdownView(view), display_id=True)
    if view.status == "waiting_approval":
        DecisionArea(ctx, view, answer, "markdown").start()
    return None
