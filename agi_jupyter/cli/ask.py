"""``agi "<prompt>"`` (``agi ask``): run a prompt and stream the answer.

In-process by default (the project's ``Agi``); with ``--server`` through a running server's
NDJSON endpoint (``remote.py``). Ctrl-C cancels the run, which ends ``cancelled``.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agi_jupyter.cli.approve import follow_with_approvals
from agi_jupyter.cli.common import (
    EXIT_BUDGET,
    EXIT_CANCELLED,
    EXIT_FAILED,
    fail,
    latest_session_id,
    open_agi,
    project_option,
    server_options,
    stdout_is_file,
    stdout_is_terminal,
)
from agi_jupyter.cli.render import one_line
from agi_jupyter.cli.stream import Progress, StreamPrinter
from agi_jupyter.errors import AgiError, ErrorCode, RunTerminal, UsageError
from agi_jupyter.kinds import ReviewMode, SdkName

if TYPE_CHECKING:
    from agi_jupyter.app import Agi
    from agi_jupyter.records import Run

TITLE_LENGTH = 60


@dataclass(frozen=True)
class AskOptions:
    prompt: str
    agent: str | None
    model: str | None
    session: str | None
    continue_: bool
    tools: tuple[str, ...]
    title: str | None
    sdk: str | None = None
    review_mode: str | None = None
    budget: dict[str, Any] | None = None  # of a new session (--max-tokens / --max-usd)
    hosted_tools: tuple[str, ...] = ()  # of a new session (--hosted-tools)
    vector_store_ids: tuple[str, ...] = ()  # of a new session (--vector-store)

    @property
    def session_title(self) -> str:
        """``--title``, else the prompt's first line, cut to ``TITLE_LENGTH``."""
        lines = self.prompt.strip().splitlines()
        return self.title or one_line(lines[0] if lines else "", TITLE_LENGTH)


@click.command()
@click.argument("prompt", nargs=-1)
@click.option(
    "--agent", "-a", metavar="NAME", help="Agent: general, plan, build or one of .agi/agents.json."
)
@click.option(
    "--model",
    "-m",
    metavar="PROVIDER:MODEL",
    help="Model, e.g. openai:gpt-5-mini (a bare gpt-…/claude-…/gemini-… name works too).",
)
@click.option("--session", "-s", metavar="ID", help="Continue this session.")
@click.option("--continue", "-c", "continue_", is_flag=True, help="Continue the latest session.")
@click.option(
    "--tools",
    "-t",
    multiple=True,
    metavar="NAMES",
    help="Extra tools for a new session (repeat or comma-separate; globs like fs.*).",
)
@click.option("--title", help="Title of a new session (default: the prompt's first line).")
@click.option(
    "--sdk",
    type=click.Choice([sdk.value for sdk in SdkName]),
    help="Agent SDK of a new session (default: the agent's, else native; see `agi sdks`).",
)
@click.option(
    "--review-mode",
    type=click.Choice([mode.value for mode in ReviewMode]),
    help="Which tool calls of a new session wait for you: ask (default: commands, code and "
    "edits), auto-edit (edits go through) or auto (nothing asks).",
)
@click.option(
    "--hosted-tools",
    multiple=True,
    metavar="NAMES",
    help="The provider's own tools a new session may use (repeat or comma-separate): "
    "web_search, file_search, code_interpreter (OpenAI), web_search, code_execution (Anthropic).",
)
@click.option(
    "--vector-store",
    "vector_stores",
    multiple=True,
    metavar="ID",
    help="A vector store file_search searches (repeat or comma-separate).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    help="Token budget of a new session: its runs stop before a model call would exceed it.",
)
@click.option("--max-usd", type=click.FloatRange(min=0, min_open=True), help="Cost budget (USD).")
@project_option
@click.option("--json", "as_json", is_flag=True, help="Print the run's events as NDJSON.")
@server_options(
    "Send the prompt to a running `agi serve` (--project is then a folder under its root)."
)
def ask(
    prompt: tuple[str, ...],
    agent: str | None,
    model: str | None,
    session: str | None,
    continue_: bool,
    tools: tuple[str, ...],
    title: str | None,
    sdk: str | None,
    review_mode: str | None,
    hosted_tools: tuple[str, ...],
    vector_stores: tuple[str, ...],
    max_tokens: int | None,
    max_usd: float | None,
    project: Path | None,
    as_json: bool,
    server: str | None,
    token: str | None,
) -> None:
    """Ask PROMPT and stream the answer (the default command).

    `agi "..."` is `agi ask "..."`. The answer streams to stdout; tool calls are shown on
    stderr. PROMPT `-` reads the prompt from stdin. Ctrl-C cancels the run. A tool call that
    needs your approval is asked about on a terminal; without one, agi prints how to decide
    and exits with code 5, leaving the run waiting.
    """
    if session and continue_:
        raise click.UsageError("give --session or --continue, not both")
    if tools and (session or continue_):
        raise click.UsageError("--tools applies to a new session, not to --session / --continue")
    if sdk and (session or continue_):
        raise click.UsageError("--sdk applies to a new session, not to --session / --continue")
    if review_mode and (session or continue_):
        raise click.UsageError(
            "--review-mode applies to a new session, not to --session / --continue"
        )
    if (hosted_tools or vector_stores) and (session or continue_):
        raise click.UsageError(
            "--hosted-tools/--vector-store apply to a new session, not to --session / --continue"
        )
    if (max_tokens or max_usd) and (session or continue_):
        raise click.UsageError("--max-tokens/--max-usd apply to a new session")
    budget = {k: v for k, v in (("max_tokens", max_tokens), ("max_usd", max_usd)) if v}
    options = AskOptions(
        prompt=_read_prompt(prompt),
        agent=agent,
        model=model,
        session=session,
        continue_=continue_,
        tools=_names(tools),
        title=title,
        sdk=sdk,
        review_mode=review_mode,
        budget=budget or None,
        hosted_tools=_names(hosted_tools),
        vector_store_ids=_names(vector_stores),
    )
    printer = StreamPrinter(
        as_json=as_json,
        progress=Progress(stdout_is_terminal() and not as_json),
        live_text=not stdout_is_file(),
    )
    if server:
        from agi_jupyter.cli.remote import ask_remote

        interrupted = ask_remote(server, token, project, options, printer)
    else:
        interrupted = _ask_local(project, options, printer)
    exit_for(printer, interrupted)


def _names(groups: tuple[str, ...]) -> tuple[str, ...]:
    """The names of a repeated, comma-separated option."""
    return tuple(name.strip() for group in groups for name in group.split(",") if name.strip())


def _read_prompt(words: tuple[str, ...]) -> str:
    text = sys.stdin.read() if words == ("-",) else " ".join(words)
    if not text.strip():
        raise click.UsageError("no prompt given (write it as an argument, or `-` to read stdin)")
    return text


def _ask_local(project: Path | None, options: AskOptions, printer: StreamPrinter) -> bool:
    """Run the prompt here; True when Ctrl-C cancelled it."""
    try:
        with open_agi(project) as agi:
            run = _submit(agi, options)
            try:
                follow_with_approvals(agi, run.id, printer, 0)
            except KeyboardInterrupt:
                _cancel(agi, run.id, printer)
                return True
    except KeyboardInterrupt:
        fail("interrupted before the run started", EXIT_CANCELLED)
    return False


def _submit(agi: Agi, options: AskOptions) -> Run:
    """Start the run, in a new session unless continuing one (a new session is removed again
    when the run cannot start, e.g. for a provider that is not configured)."""
    session_id = _existing_session(agi, options)
    if session_id is not None:
        return agi.submit(
            options.prompt, session=session_id, agent=options.agent, model=options.model
        )
    _check_tools(agi, options.tools)
    ses = agi.new_session(
        agent=options.agent,
        model=options.model,
        title=options.session_title,
        tools=options.tools,
        sdk=options.sdk,
        review_mode=options.review_mode,
        budget=options.budget,
        hosted_tools=options.hosted_tools,
        vector_store_ids=options.vector_store_ids,
    )
    try:
        return agi.submit(options.prompt, session=ses.id, model=options.model)
    except AgiError:
        agi.delete_session(ses.id)
        raise


def _existing_session(agi: Agi, options: AskOptions) -> str | None:
    if not (options.continue_ or options.session):
        return None
    if options.session:
        return agi.session(options.session).id
    latest = latest_session_id(agi)
    if latest is None:
        raise UsageError("there is no earlier session to continue")
    return latest


def _check_tools(agi: Agi, names: tuple[str, ...]) -> None:
    from fnmatch import fnmatchcase

    known = [tool.name for tool in agi.tools()]
    unknown = [n for n in names if not any(fnmatchcase(k, n) for k in known)]
    if unknown:
        raise UsageError(f"unknown tool {', '.join(unknown)} (known: {', '.join(sorted(known))})")


def _cancel(agi: Agi, run_id: str, printer: StreamPrinter) -> None:
    """Cancel the run, then print its remaining persisted events (its ``run.final``)."""
    printer.progress.stop()
    printer.end_line()
    try:
        with contextlib.suppress(RunTerminal):  # it ended on its own meanwhile
            agi.cancel(run_id)
        printer.consume(agi.follow(run_id, after_seq=printer.last_seq))
    except KeyboardInterrupt:
        fail(f"interrupted while cancelling run {run_id}", EXIT_CANCELLED)


def exit_for(printer: StreamPrinter, interrupted: bool) -> None:
    final: dict[str, Any] = printer.final or {}
    status = final.get("status")
    run_id = final.get("id") or printer.run_id
    if status == "succeeded" and not interrupted:
        return
    if status == "cancelled":
        fail(f"run {run_id} cancelled", EXIT_CANCELLED)
    if interrupted:
        fail(f"interrupted; run {run_id} is {status or 'being cancelled'}", EXIT_CANCELLED)
    if status is None:
        fail(f"the events of run {run_id} ended before the run did")
    error = final.get("error") or {}
    reason = error.get("message") if isinstance(error, dict) else error
    over = isinstance(error, dict) and error.get("code") == ErrorCode.BUDGET_EXCEEDED
    prefix = "BUDGET_EXCEEDED: " if over else ""
    reason = f"{prefix}{reason or 'no reason given'}"
    fail(f"run {run_id} {status}: {reason}", EXIT_BUDGET if over else EXIT_FAILED)
