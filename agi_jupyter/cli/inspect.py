"""Sessions and runs: ``sessions``, ``show``, ``compact``, ``runs``, ``run``, ``events``,
``cancel``, ``tick``.

Human-readable tables by default, ``--json`` for scripts. Each command opens the project's
``Agi``, asks it (or its store, for events and tool calls) and prints.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.text import Text

from agi_jupyter.amounts import context_gauge, usd
from agi_jupyter.cli import render
from agi_jupyter.cli.common import (
    EXIT_CANCELLED,
    fail,
    json_option,
    open_agi,
    project_option,
    server_options,
    stdout_is_terminal,
)
from agi_jupyter.cli.stream import Progress

if TYPE_CHECKING:
    from agi_jupyter.records import Compaction, Message, Part, Run, Session

LIMIT = click.option(
    "--limit", "-n", type=click.IntRange(1, 1000), default=20, show_default=True, help="How many."
)


@click.command()
@LIMIT
@project_option
@json_option
def sessions(limit: int, project: Path | None, as_json: bool) -> None:
    """List sessions, newest first."""
    with open_agi(project) as agi:
        items = agi.sessions(limit=limit).items
    if as_json:
        render.print_json(items)
        return
    render.table(
        ["id", "title", "agent", "model", "messages", "tokens in/out", "cost", "created"],
        (_session_row(s) for s in items),
        empty='no sessions yet: ask something with `agi "..."`',
    )


def _session_row(s: Session) -> list[object]:
    return [
        s.id,
        render.one_line(s.title or "", 50),
        s.agent,
        render.model_label(s.provider, s.model),
        s.message_count,
        render.tokens(s.input_tokens, s.output_tokens),
        render.usd(s.cost_usd),
        render.when(s.created_at),
    ]


@click.command()
@click.argument("session_id", metavar="SESSION")
@click.option("--full", is_flag=True, help="Also reasoning, tool calls and tool results.")
@project_option
@json_option
def show(session_id: str, full: bool, project: Path | None, as_json: bool) -> None:
    """Show a session and its conversation."""
    with open_agi(project) as agi:
        ses = agi.session(session_id)
        # every part is printed: decoded eagerly, in batches (cheaper than one by one)
        messages = agi.history(session_id, view="full" if full else "simple", lazy=False)
        compactions = agi.compactions(session_id)
        context = agi.context(session_id)
    if as_json:
        render.print_json({"session": ses, "messages": messages, "compactions": compactions})
        return
    render.fields(
        [
            ("session", ses.id),
            ("title", ses.title),
            ("agent", ses.agent),
            ("model", render.model_label(ses.provider, ses.model)),
            ("messages", ses.message_count),
            ("tokens in/out", render.tokens(ses.input_tokens, ses.output_tokens)),
            ("cost", render.known_usd(ses.cost_usd, unknown_cost_answers(messages))),
            ("context", context_gauge(context["gauge"]) or "-"),
            ("created", render.when(ses.created_at)),
        ]
    )
    folded = {c.through_message_id: c for c in compactions}
    for message in messages:
        _print_message(message)
        if not full and message.id in folded:
            _print_compaction(folded[message.id])


def _print_compaction(compaction: Compaction) -> None:
    """Where the simple view marks a compaction: the model is sent its summary in place of
    the messages above (``--full`` shows them all, and nothing is lost)."""
    render.console().print(
        Text(
            f"\n── {compaction.message_count} messages above compacted into a summary for the "
            f"model ({compaction.id}, {render.when(compaction.created_at)}) ──",
            style="dim",
        )
    )


@click.command()
@click.argument("session_id", metavar="SESSION")
@project_option
@json_option
def compact(session_id: str, project: Path | None, as_json: bool) -> None:
    """Fold a session's messages before its last turn into a summary its model writes.

    The summary is sent in their place from the next request on (a compaction; runs also
    compact by themselves when older turns no longer fit the model's context window). The
    history itself is never changed: `agi show --full` and export still show everything.
    """
    with open_agi(project) as agi:
        compaction = agi.compact(session_id)
    if as_json:
        render.print_json({"compaction": compaction})
    elif compaction is None:
        click.echo(f"{session_id}: nothing to compact (only its last turn)")
    else:
        click.echo(
            f"{compaction.id}: {compaction.message_count} messages folded into a summary "
            f"({render.tokens(compaction.input_tokens, compaction.output_tokens)} tokens, "
            f"{usd(compaction.cost_usd)})"
        )


def unknown_cost_answers(messages: list[Message]) -> int:
    """The model answers of ``messages`` whose cost is unknown (no usage, or no catalog
    price): the session's cost counts only what was measured."""
    return sum(
        1
        for m in messages
        if m.role == "assistant" and "cost_usd" in m.meta and m.meta["cost_usd"] is None
    )


def _print_message(message: Message) -> None:
    out = render.console()
    out.print()
    head = Text(message.role, style="bold") + Text(f"  {render.when(message.created_at)}")
    stop = render.stop_note(message.meta) if message.role == "assistant" else None
    if stop:
        head += Text(f"  {stop}", style="bold yellow")
    out.print(head)
    for part in message.parts:
        out.print(Text(_part_text(part)))


def _part_text(part: Part) -> str:
    from agi_jupyter import records

    if isinstance(part, records.TextPart):
        return part.text
    if isinstance(part, records.ReasoningPart):
        return f"(reasoning) {part.text}"
    if isinstance(part, records.ToolCallPart):
        return f"[{part.name}] {render.compact_json(part.arguments)}"
    if isinstance(part, records.ToolResultPart):
        state = "error" if part.is_error else "ok"
        return f"[{part.name}] {state}: {render.one_line(part.output, 400)}"
    if isinstance(part, records.ErrorPart):
        return f"error {part.code}: {part.message}"
    if isinstance(part, records.ArtifactRefPart):
        return f"artifact {part.artifact_id} ({part.kind}) {part.title or ''}".rstrip()
    return f"({part.type})"


@click.command()
@click.argument("session_id", metavar="[SESSION]", required=False)
@LIMIT
@project_option
@json_option
def runs(session_id: str | None, limit: int, project: Path | None, as_json: bool) -> None:
    """List runs (of one session, or all), newest first."""
    with open_agi(project) as agi:
        if session_id:
            agi.session(session_id)
        items = agi.runs(session_id, limit=limit).items
        waiting = {
            r.id: [c.name for c in agi.pending_approvals(r.id)]
            or (["a larger budget"] if agi.pending_budget(r.id) else [])
            for r in items
            if r.status == "waiting_approval"
        }
        undone = {r.id: agi.undo_state(r.id) for r in items if r.is_terminal}
    if as_json:
        render.print_json(items)
        return
    render.table(
        ["id", "session", "status", "model", "attempt", "tokens in/out", "cost", "stop", "created"],
        (_run_row(r, waiting.get(r.id), undone.get(r.id, "")) for r in items),
        empty="no runs",
    )
    if waiting:
        click.echo(
            "runs waiting for approval: decide with `agi approve RUN` or `agi deny RUN`", err=True
        )


def _run_row(r: Run, waiting: list[str] | None = None, undone: str = "") -> list[object]:
    """A row of ``agi runs``; ``undone``: ``undone`` / ``partly undone`` (its changes)."""
    status = f"{r.status}: {', '.join(waiting)}" if waiting else r.status
    if undone:
        status = f"{status} ({undone})"
    return [
        r.id,
        r.session_id,
        status,
        render.model_label(r.provider, r.model),
        f"{r.attempt}/{r.max_attempts}",
        render.tokens(r.usage.get("input_tokens"), r.usage.get("output_tokens")),
        render.usd(r.cost_usd),
        _stop_cell(r.usage),
        render.when(r.created_at),
    ]


def _stop_cell(usage: dict[str, object]) -> str:
    """The ``stop`` column: ``context full`` / ``truncated`` (output token limit), else empty."""
    if usage.get("context_full"):
        return "context full"
    return "truncated" if usage.get("truncated") else ""


@click.command("run")
@click.argument("run_id", metavar="RUN")
@project_option
@json_option
def run_(run_id: str, project: Path | None, as_json: bool) -> None:
    """Show a run and its tool calls (with who decided those that waited for a person)."""
    with open_agi(project) as agi:
        run = agi.run(run_id)
        calls = agi.tool_calls(run_id)
    if as_json:
        render.print_json({"run": run, "tool_calls": calls})
        return
    error = run.error or {}
    render.fields(
        [
            ("run", run.id),
            ("session", run.session_id),
            ("status", run.status),
            ("type", f"{run.type} ({run.execution_mode})"),
            ("model", render.model_label(run.provider, run.model)),
            ("attempt", f"{run.attempt}/{run.max_attempts}"),
            ("error", f"{error.get('code')}: {error.get('message')}" if error else None),
            (
                "tokens in/out",
                render.tokens(run.usage.get("input_tokens"), run.usage.get("output_tokens")),
            ),
            ("cost", render.usd(run.cost_usd)),
            ("answer", render.stop_note(run.usage)),
            ("created", render.when(run.created_at)),
            ("started", render.when(run.started_at) if run.started_at else None),
            ("completed", render.when(run.completed_at) if run.completed_at else None),
        ]
    )
    if calls:
        render.console().print()
        render.table(
            ["tool call", "name", "status", "decision", "arguments"],
            (
                [
                    c.tool_call_id,
                    c.name,
                    c.status,
                    c.decided,
                    render.one_line(render.compact_json(c.args), 80),
                ]
                for c in calls
            ),
            empty="",
        )


@click.command()
@click.argument("run_id", metavar="RUN")
@click.option("--follow", "-f", is_flag=True, help="Keep printing until the run ends.")
@click.option("--after", type=int, default=0, metavar="SEQ", help="Only events after this seq.")
@project_option
@click.option("--json", "as_json", is_flag=True, help="Print the events as NDJSON.")
def events(run_id: str, follow: bool, after: int, project: Path | None, as_json: bool) -> None:
    """Print a run's recorded events (live ones too with --follow)."""
    progress = Progress(follow and stdout_is_terminal() and not as_json)
    with open_agi(project) as agi:
        if follow:
            stream: Iterable[dict[str, object]] = agi.follow(run_id, after_seq=after)
        else:
            from agi_jupyter.runtime.follow import stored_event_to_dict

            agi.run(run_id)
            stream = [stored_event_to_dict(e) for e in agi.run_events(run_id, after_seq=after)]
        try:
            for event in stream:
                progress.stop()
                if as_json:
                    render.print_json_line(event)
                else:
                    render.console().print(Text(render.event_line(event)))
                progress.show(f"following {run_id}…")
        except KeyboardInterrupt:
            progress.stop()
            fail("stopped following (the run goes on)", EXIT_CANCELLED)
        progress.stop()


@click.command()
@click.argument("run_id", metavar="RUN")
@click.option(
    "--interrupt",
    is_flag=True,
    help="Also interrupt the notebook cells the run's notebook.run left running (default: "
    "they go on in their kernel). They live in the process that runs the run: use --server.",
)
@project_option
@json_option
@server_options(
    "Through the running `agi serve` or Jupyter server that runs the run (--project: a folder "
    "under its root): its cells left running are named, or interrupted."
)
def cancel(
    run_id: str,
    interrupt: bool,
    project: Path | None,
    as_json: bool,
    server: str | None,
    token: str | None,
) -> None:
    """Cancel a run (it ends `cancelled`, wherever it runs). Cells its notebook.run started
    go on running unless --interrupt."""
    if server:
        from urllib.parse import quote

        from agi_jupyter.cli.remote import ServerClient

        client = ServerClient(server, token, str(project) if project else None)
        path = f"runs/{quote(run_id, safe='')}/cancel"
        answer = client.call("POST", path, {"interrupt": interrupt})
        run_json, cells = answer["run"], answer["cells"]
    else:
        with open_agi(project) as agi:
            run = agi.cancel(run_id)
            found = agi.interrupt_cells(run_id) if interrupt else agi.running_cells(run_id)
        run_json, cells = render.jsonable(run), [render.jsonable(c) for c in found]
    if as_json:  # the run, as before, with its cells
        render.print_json({**run_json, "cells": cells})
        return
    click.echo(f"{run_json['id']} {run_json['status']}")
    for cell in cells:
        state = "interrupted" if cell["interrupted"] else "left running"
        click.echo(f"cell {cell['cell_id']} of {cell['path']} ({cell['handle']}): {state}")


@click.command()
@click.option(
    "--max-runs",
    type=click.IntRange(1, 100),
    default=10,
    show_default=True,
    help="At most this many runs.",
)
@project_option
@json_option
def tick(max_runs: int, project: Path | None, as_json: bool) -> None:
    """Run the queued runs that are due; recover stalled ones.

    Waits for the runs it starts. Safe to run in several processes at once.
    """
    progress = Progress(stdout_is_terminal() and not as_json)
    with open_agi(project) as agi:
        progress.show("running due runs…")
        try:
            result = agi.tick(max_runs=max_runs)
        finally:
            progress.stop()
    if as_json:
        render.print_json(result.to_dict())
    else:
        render.fields(result.to_dict().items())


COMMANDS = (sessions, show, compact, runs, run_, events, cancel, tick)
