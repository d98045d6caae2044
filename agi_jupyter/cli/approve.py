"""``agi approve RUN`` / ``agi deny RUN``: decide the tool calls a run waits on, and the
question ``agi`` asks on a terminal when a run it follows starts waiting.

A run waits for approval durably (``waiting_approval``, no owner): the process that ran it may
have exited. A decision that leaves no call undecided queues the run; by default the command
then resumes it here and streams the rest (``--detach``: only decide, and whichever process
ticks next, ``agi tick`` or a server, resumes it).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click
from rich.text import Text

from agi_jupyter.changes_view import diff_style
from agi_jupyter.cli import render
from agi_jupyter.cli.common import EXIT_WAITING, fail, open_agi, project_option
from agi_jupyter.cli.render import compact_json, one_line
from agi_jupyter.config import local_user_name
from agi_jupyter.kinds import DecisionDoor

Decision = Literal["approve", "deny", "approve_always"]

if TYPE_CHECKING:
    from agi_jupyter.app import Agi
    from agi_jupyter.cli.stream import StreamPrinter
    from agi_jupyter.records import ToolCall


def budget_lines(question: dict[str, Any]) -> list[str]:
    """A budget question as text: the budgets that refused the next call and why."""
    from agi_jupyter.budget import describe

    lines = [f"  {describe(b)}" for b in question.get("budgets") or []]
    lines.append(f"  {question.get('reason')}")
    return lines


def waiting_message(agi: Agi, run_id: str) -> str:
    """What a run waits for and how to decide it (printed before exiting with code 5)."""
    question = agi.pending_budget(run_id)
    if question is not None:
        return "\n".join(
            [
                f"run {run_id} is waiting for a larger budget (review mode ask):",
                *budget_lines(question),
                f"raise it with `agi approve {run_id} --max-tokens N [--max-usd X]` or "
                f"`agi deny {run_id}` (or the side panel, or POST /agi/v1/runs/{{id}}/approvals "
                'with {"decision": "approve", "budget": {...}}); it waits until then',
            ]
        )
    calls = agi.pending_approvals(run_id)
    lines = [f"run {run_id} is waiting for approval of {len(calls)} tool call(s):"]
    lines += [f"  {c.tool_call_id}  {c.name} {one_line(compact_json(c.args), 100)}" for c in calls]
    lines.append(
        f"decide with `agi approve {run_id}` or `agi deny {run_id} --message '...'` "
        "(or the side panel, or POST /agi/v1/runs/{id}/approvals); it waits until then"
    )
    return "\n".join(lines)


def can_ask() -> bool:
    """Whether a person is at this terminal to answer (stdin and stdout are terminals)."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def ask_person(
    name: str, args: dict[str, Any], diff: str | None = None
) -> tuple[Decision, str | None]:
    """Ask about one waiting call: [y]es, [n]o (with an optional message to the model), or
    [a]lways for the session; a call that changes a notebook cell or a file shows its
    ``diff`` instead of its arguments. Returns the decision and the message of a denial."""
    if diff:
        click.echo(f"\n{name} wants to make this change:", err=True)
        out = render.console(stderr=True)
        for line in diff.splitlines():
            out.print(Text(line, style=diff_style(line) or ""))
    else:
        click.echo(f"\n{name} wants to run: {one_line(compact_json(args), 300)}", err=True)
    answer = click.prompt(
        "approve? [y]es / [n]o / [a]lways for this session",
        type=click.Choice(["y", "n", "a"]),
        show_choices=False,
        err=True,
    )
    if answer == "n":
        message = click.prompt(
            "message to the model (empty: none)", default="", show_default=False, err=True
        )
        return "deny", message or None
    return ("approve_always" if answer == "a" else "approve"), None


def ask_budget_answer(run_id: str, question: dict[str, Any]) -> tuple[Decision, Any]:
    """Offer to raise the session's budget the run waits on: (``approve``, the new limits)
    or (``deny``, None) when no new limit is given."""
    click.echo(f"\nrun {run_id} needs a larger budget:", err=True)
    click.echo("\n".join(budget_lines(question)), err=True)
    tokens = click.prompt(
        "new max tokens (0: keep)", type=click.IntRange(min=0), default=0, err=True
    )
    usd = click.prompt("new max usd (0: keep)", type=click.FloatRange(min=0), default=0.0, err=True)
    budget: dict[str, Any] = {}
    if tokens:
        budget["max_tokens"] = tokens
    if usd:
        budget["max_usd"] = usd
    if not budget:
        click.echo("no new limit: denied (the run fails BUDGET_EXCEEDED)", err=True)
        return "deny", None
    return "approve", budget


def ask_on_terminal(agi: Agi, run_id: str) -> None:
    """Ask about each call the run waits on, and record each answer."""
    question = agi.pending_budget(run_id)
    if question is not None:
        decision, budget = ask_budget_answer(run_id, question)
        agi.decide(run_id, decision, budget=budget, door=DecisionDoor.CLI, by=local_user_name())
        return
    diffs = agi.approval_diffs(run_id)
    for call in agi.pending_approvals(run_id):
        decision, message = ask_person(call.name, call.args, diffs.get(call.tool_call_id))
        agi.decide(
            run_id,
            decision,
            tool_call_id=call.tool_call_id,
            message=message,
            door=DecisionDoor.CLI,
            by=local_user_name(),
        )


def follow_with_approvals(agi: Agi, run_id: str, printer: StreamPrinter, after_seq: int) -> None:
    """Stream the run; each time it stops to wait for approval, ask here on a terminal (then
    go on), else print how to decide and exit with code 5, leaving the run waiting."""
    printer.consume(agi.follow(run_id, after_seq=after_seq))
    while agi.run(run_id).status == "waiting_approval":
        if not can_ask():
            fail(waiting_message(agi, run_id), EXIT_WAITING)
        ask_on_terminal(agi, run_id)
        printer.consume(agi.follow(run_id, after_seq=printer.last_seq))


def _decide(
    run_id: str,
    decision: str,
    tool_call: str | None,
    message: str | None,
    detach: bool,
    project: Path | None,
    budget: dict[str, Any] | None = None,
) -> None:
    from agi_jupyter.cli.ask import exit_for
    from agi_jupyter.cli.stream import Progress, StreamPrinter

    with open_agi(project) as agi:
        after = agi.run_events(run_id)
        last = after[-1].seq if after else 0
        decided: list[ToolCall] = agi.decide(
            run_id,
            decision,
            tool_call_id=tool_call,
            message=message,
            resume=not detach,
            budget=budget,
            door=DecisionDoor.CLI,
            by=local_user_name(),
        )
        names = ", ".join(f"{c.name} ({c.tool_call_id})" for c in decided) or (
            f"budget {budget}" if budget else "budget"
        )
        click.echo(f"{decision}: {names}", err=True)
        run = agi.run(run_id)
        if detach or run.status == "waiting_approval":
            if run.status == "waiting_approval":
                click.echo(waiting_message(agi, run_id), err=True)
            else:
                click.echo(f"run {run_id} is queued: the next tick resumes it", err=True)
            return
        printer = StreamPrinter(as_json=False, progress=Progress(False))
        follow_with_approvals(agi, run_id, printer, last)
    exit_for(printer, interrupted=False)


_TOOL_CALL = click.option(
    "--tool-call", metavar="ID", help="Decide this call only (default: every call that waits)."
)
_DETACH = click.option(
    "--detach", is_flag=True, help="Only record the decision; the next tick resumes the run."
)


@click.command()
@click.argument("run_id", metavar="RUN")
@_TOOL_CALL
@click.option("--always", is_flag=True, help="Also approve the tool for the rest of the session.")
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    metavar="N",
    help="A run waiting for a larger budget: the session's new token limit.",
)
@click.option(
    "--max-usd",
    type=click.FloatRange(min=0, min_open=True),
    metavar="X",
    help="A run waiting for a larger budget: the session's new cost limit (USD).",
)
@_DETACH
@project_option
def approve(
    run_id: str,
    tool_call: str | None,
    always: bool,
    max_tokens: int | None,
    max_usd: float | None,
    detach: bool,
    project: Path | None,
) -> None:
    """Approve the tool calls RUN waits on — or, when it waits for a larger budget, raise the
    session's (--max-tokens/--max-usd) — then resume it here (exit codes as `agi ask`)."""
    raw = {"max_tokens": max_tokens, "max_usd": max_usd}
    budget = {k: v for k, v in raw.items() if v is not None} or None
    decision = "approve_always" if always else "approve"
    _decide(run_id, decision, tool_call, None, detach, project, budget)


@click.command()
@click.argument("run_id", metavar="RUN")
@_TOOL_CALL
@click.option("--message", "-m", metavar="TEXT", help="Told to the model with the denial.")
@_DETACH
@project_option
def deny(
    run_id: str, tool_call: str | None, message: str | None, detach: bool, project: Path | None
) -> None:
    """Deny the tool calls RUN waits on (the model is told), then resume it here."""
    _decide(run_id, "deny", tool_call, message, detach, project)


COMMANDS = (approve, deny)
