"""The ``%agi`` line magic: ``%agi COMMAND [options]``; ``%agi help`` lists the commands.

Listings return a ``Table`` (HTML in a notebook, text in a terminal), so ``t = %agi runs`` keeps
it; problems (unknown command, bad option, unknown id) print one line and the usage.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from IPython.core.error import UsageError as IPythonUsageError

from agi_jupyter.amounts import UNKNOWN, context_gauge, usd
from agi_jupyter.errors import UsageError
from agi_jupyter.kernel._ipython import MagicArgumentParser, is_terminal
from agi_jupyter.kernel.tables import Table, Text
from agi_jupyter.kinds import ReviewMode, SdkName

if TYPE_CHECKING:
    import argparse

    from agi_jupyter.kernel.context import KernelContext
    from agi_jupyter.records import Session

HELP = """\
%agi sessions                      sessions of this project (* marks the notebook's)
%agi use ID                        make session ID the notebook's session
%agi new [--agent A] [--model M] [--sdk S] [--review-mode R]
         [--max-tokens N] [--max-usd X] [--hosted-tools T,...] [--vector-store V]
                                   start a new notebook session (S: native, claude, codex, acp;
                                   R: ask, auto-edit, auto — which tool calls wait for you;
                                   N, X: its token / cost budget; T: the provider's own tools,
                                   web_search, file_search, code_interpreter, code_execution;
                                   V: a vector store file_search searches)
%agi budget [--notebook] [--max-tokens N] [--max-usd X] [--none]
                                   spent and remaining of the session's and notebook's budgets;
                                   with options: set (or remove) the session's budget first
                                   (--notebook: this notebook's, for every process)
%agi history [ID] [--full]         messages of a session (--full: tool calls, reasoning)
%agi compact [ID]                  fold the session's messages before its last turn into a
                                   summary its model writes, sent in their place (the
                                   history is kept whole; runs also compact by themselves)
%agi runs [ID]                     runs of a session
%agi show RUN                      a run's answer and tool calls
%agi cancel RUN                    cancel a run
%agi approve RUN [--always] [--tool-call ID]
                                   approve the tool calls RUN waits on; it resumes here
%agi approve RUN --max-tokens N [--max-usd X]
                                   RUN waits for a larger budget: raise the session's
%agi deny RUN [-m MESSAGE] [--tool-call ID]
                                   deny them (the model gets the denial and MESSAGE)
%agi diff RUN                      the run's changes: per cell and file, with diffs and ids
%agi executions [-n N]             what this notebook's kernel ran, by whom (the ledger)
%agi protect CELL / unprotect CELL agents may not run, edit or delete CELL (agi.protected)
%agi undo RUN [--turn N] [--change ID ...] [--force | --force-cell CELL ...] [--redo]
                                   undo the run's changes (all, from turn N on, or those
                                   named) cell by cell: cells changed since are left as they
                                   are (--force: put back anyway); --redo makes them again
%agi wait [RUN]                    wait for --background runs (or RUN); returns the result
%agi agents                        agents and their tools
%agi sdks                          agent SDKs, their capabilities, whether installed
%agi tools [AGENT]                 tools (those AGENT is offered)
%agi models                        known models and list prices
%agi config                        resolved settings (no secrets)
%agi stats                         totals of the store, and how full the session's
                                   context is (tokens of the window, when it compacts)
%agi chat                          open the chat widget on the notebook's session
%agi help                          this text

%%agi [options]   (cell magic)     ask an agent; see %%agi? for the options"""

Command = Callable[["KernelContext", "argparse.Namespace"], Any]


def _parser() -> Any:
    parser = MagicArgumentParser(prog="%agi", add_help=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in ("sessions", "agents", "sdks", "models", "config", "stats", "chat", "help"):
        sub.add_parser(name, add_help=False)
    sub.add_parser("use", add_help=False).add_argument("id")
    new = sub.add_parser("new", add_help=False)
    new.add_argument("--agent", "-a")
    new.add_argument("--model", "-m")
    new.add_argument("--sdk", choices=tuple(SdkName))
    new.add_argument("--review-mode", choices=tuple(ReviewMode))
    new.add_argument("--max-tokens", type=int)
    new.add_argument("--max-usd", type=float)
    new.add_argument("--hosted-tools", default="")
    new.add_argument("--vector-store", action="append", default=[])
    budget = sub.add_parser("budget", add_help=False)
    budget.add_argument("--max-tokens", type=int)
    budget.add_argument("--max-usd", type=float)
    budget.add_argument("--none", action="store_true")
    budget.add_argument("--notebook", action="store_true")
    history = sub.add_parser("history", add_help=False)
    history.add_argument("id", nargs="?")
    history.add_argument("--full", action="store_true")
    sub.add_parser("compact", add_help=False).add_argument("id", nargs="?")
    sub.add_parser("runs", add_help=False).add_argument("id", nargs="?")
    sub.add_parser("show", add_help=False).add_argument("run")
    sub.add_parser("cancel", add_help=False).add_argument("run")
    approve = sub.add_parser("approve", add_help=False)
    approve.add_argument("run")
    approve.add_argument("--always", action="store_true")
    approve.add_argument("--tool-call")
    approve.add_argument("--max-tokens", type=int)
    approve.add_argument("--max-usd", type=float)
    deny = sub.add_parser("deny", add_help=False)
    deny.add_argument("run")
    deny.add_argument("--message", "-m")
    deny.add_argument("--tool-call")
    undo = sub.add_parser("undo", add_help=False)
    undo.add_argument("run")
    undo.add_argument("--force", action="store_true")
    undo.add_argument("--force-cell", action="append", dest="force_cells")
    undo.add_argument("--turn", type=int)
    undo.add_argument("--change", action="append", dest="changes")
    undo.add_argument("--redo", action="store_true")
    sub.add_parser("diff", add_help=False).add_argument("run")
    sub.add_parser("executions", add_help=False).add_argument("-n", type=int, dest="limit")
    sub.add_parser("protect", add_help=False).add_argument("cell")
    sub.add_parser("unprotect", add_help=False).add_argument("cell")
    sub.add_parser("wait", add_help=False).add_argument("run", nargs="?")
    sub.add_parser("tools", add_help=False).add_argument("agent", nargs="?")
    return parser


def run_command(ctx: KernelContext, line: str) -> Any:
    from agi_jupyter.errors import AgiError

    try:
        args = _parser().parse_argstring(line)
    except (IPythonUsageError, ValueError) as e:
        print(f"agi: {e}\n\n{HELP}", file=sys.stderr)
        return None
    command = COMMANDS.get(args.command or "help")
    assert command is not None
    try:
        return command(ctx, args)
    except AgiError as e:
        print(f"agi: {e.message}", file=sys.stderr)
        return None


# --- sessions ----------------------------------------------------------------------------------


def cmd_help(ctx: KernelContext, args: argparse.Namespace) -> Text:
    return Text(HELP)


def cmd_sessions(ctx: KernelContext, args: argparse.Namespace) -> Table:
    rows = []
    for s in ctx.agi.sessions(limit=50).items:
        mark = "*" if s.id == ctx.session_id else ""
        rows.append(
            [
                mark,
                s.id,
                s.title or "",
                s.agent,
                f"{s.provider}:{s.model}",
                s.sdk,
                s.message_count,
                s.input_tokens + s.output_tokens,
                usd(s.cost_usd),
                s.notebook_path or "",
                s.created_at,
            ]
        )
    columns = ["", "id", "title", "agent", "model", "sdk", "messages", "tokens", "cost"]
    columns.append("notebook")
    return Table([*columns, "created"], rows, title="Sessions")


def cmd_use(ctx: KernelContext, args: argparse.Namespace) -> None:
    session = ctx.use_session(args.id)
    print(f"agi: the notebook now uses session {session.id} ({session.agent}, {session.model})")


def cmd_new(ctx: KernelContext, args: argparse.Namespace) -> None:
    limits = (("max_tokens", args.max_tokens), ("max_usd", args.max_usd))
    budget = {k: v for k, v in limits if v is not None}
    session = ctx.new_session(
        agent=args.agent,
        model=args.model,
        sdk=args.sdk,
        review_mode=args.review_mode,
        budget=budget or None,
        hosted_tools=[t.strip() for t in args.hosted_tools.split(",") if t.strip()],
        vector_store_ids=args.vector_store,
    )
    sdk = "" if session.sdk == SdkName.NATIVE else f", sdk {session.sdk}"
    print(
        f"agi: new session {session.id} ({session.agent}, {session.provider}:{session.model}{sdk})"
    )
    if session.budget:
        print(f"agi: {budget_lines(ctx, session)[0]}")


def cmd_budget(ctx: KernelContext, args: argparse.Namespace) -> None:
    session = ctx.current_session()
    limits = (("max_tokens", args.max_tokens), ("max_usd", args.max_usd))
    budget = {k: v for k, v in limits if v is not None}
    if args.notebook and (budget or args.none):
        path = session.notebook_path or ctx.notebook_path()
        if not path:
            raise UsageError("this kernel does not know its notebook's path: no notebook budget")
        ctx.agi.set_notebook_budget(path, budget or None)
    elif budget or args.none:
        session = ctx.agi.update_session(session.id, budget=budget or None)
    lines = budget_lines(ctx, session)
    for line in lines or ["no budget applies to this notebook's session"]:
        print(f"agi: {line}")


def budget_lines(ctx: KernelContext, session: Session) -> list[str]:
    """One line per budget that applies to ``session``: spent, limit, what is left."""
    lines = []
    for status in ctx.agi.budget_statuses(session.id):
        left = [f"{status.remaining_tokens} tokens"] if status.remaining_tokens is not None else []
        if status.remaining_usd is not None:
            left.append(f"${status.remaining_usd:.4f}")
        lines.append(f"{status.describe()} ({', '.join(left)} left)")
    return lines


def _session_id(ctx: KernelContext, given: str | None) -> str:
    return given or ctx.current_session().id


def cmd_history(ctx: KernelContext, args: argparse.Namespace) -> Table:
    """A session's messages. Each names the run that answered as its cell shows it: a replayed
    run by the recorded run it replays, so after "Restart & Run All" the table is the same
    bytes as before (every kernel start opens a fresh session, so the notebook's own session
    is named as such, not by its new id)."""
    from agi_jupyter.records import part_to_dict

    session_id = _session_id(ctx, args.id)
    shown_as: dict[str, str] = {}
    cursor: str | None = None
    while True:
        runs = ctx.agi.runs(session_id, limit=200, cursor=cursor)
        shown_as.update((r.id, r.replayed_from) for r in runs.items if r.replayed_from)
        if (cursor := runs.next_cursor) is None:
            break
    view: Literal["simple", "full"] = "full" if args.full else "simple"
    rows: list[list[Any]] = []
    folded = {} if args.full else compaction_marks(ctx, session_id)
    for message in ctx.agi.history(session_id, view=view, lazy=not args.full):
        run_id = shown_as.get(message.run_id or "", message.run_id) or ""
        if not args.full:
            rows.append([message.role, message.text, run_id])
            if message.id in folded:
                rows.append(["—", folded[message.id], ""])
            continue
        for part in message.parts:
            data = part_to_dict(part)
            kind = data.pop("type")
            content = data.get("text") or data.get("output") or data
            rows.append([message.role, kind, content, run_id])
    columns = ["role", "type", "content", "run"] if args.full else ["role", "text", "run"]
    title = f"History of {session_id}" if args.id else "History of the notebook's session"
    return Table(columns, rows, title=title)


def compaction_marks(ctx: KernelContext, session_id: str) -> dict[str, str]:
    """Where the simple history marks each compaction: after its last message."""
    return {
        c.through_message_id: (
            f"{c.message_count} messages above compacted into a summary for the model ({c.id})"
        )
        for c in ctx.agi.compactions(session_id)
    }


def cmd_compact(ctx: KernelContext, args: argparse.Namespace) -> None:
    session_id = _session_id(ctx, args.id)
    compaction = ctx.agi.compact(session_id)
    if compaction is None:
        print(f"agi: {session_id}: nothing to compact (only its last turn)")
        return
    tokens = f"{compaction.input_tokens or UNKNOWN} in / {compaction.output_tokens or UNKNOWN} out"
    print(
        f"agi: {compaction.id}: {compaction.message_count} messages folded into a summary "
        f"({tokens} tokens, {usd(compaction.cost_usd)})"
    )


# --- runs --------------------------------------------------------------------------------------


def cmd_runs(ctx: KernelContext, args: argparse.Namespace) -> Table:
    session_id = _session_id(ctx, args.id)
    rows = []
    for r in ctx.agi.runs(session_id, limit=100).items:
        known = not r.usage.get("unknown_turns")  # the server sent no usage: unknown, not 0
        tokens = (
            int(r.usage.get("input_tokens") or 0) + int(r.usage.get("output_tokens") or 0)
            if known
            else UNKNOWN
        )
        status: str = r.status
        if r.status == "waiting_approval":
            from agi_jupyter.kernel.approvals import waiting_on

            status = f"{status}: {waiting_on(ctx, r.id)} (%agi approve|deny {r.id})"
        elif r.is_terminal and (undone := ctx.agi.undo_state(r.id)):
            status = f"{status} ({undone})"
        rows.append(
            [
                r.id,
                status,
                f"{r.provider}:{r.model}",
                tokens,
                usd(r.cost_usd),
                r.execution_count if r.execution_count is not None else "",
                r.cell_id or "",
                r.replayed_from or "",
                r.created_at,
            ]
        )
    columns = ["id", "status", "model", "tokens", "cost", "In", "cell", "replayed from"]
    return Table([*columns, "created"], rows, title=f"Runs of {session_id}")


def cmd_show(ctx: KernelContext, args: argparse.Namespace) -> Any:
    from agi_jupyter.kernel.live import MarkdownView
    from agi_jupyter.kernel.render import RunView

    run = ctx.agi.run(args.run)
    view = RunView(load_artifact=lambda a: _patch_of(ctx, a))
    for event in ctx.agi.follow(run.id):
        view.apply(event)
        if event.get("type") == "run.final":
            break
    if is_terminal(ctx.shell):
        return Text(view.to_text())
    return MarkdownView(view)


def _patch_of(ctx: KernelContext, artifact_id: str) -> str | None:
    from agi_jupyter.errors import AgiError

    try:
        data = ctx.agi.artifact(artifact_id).data or {}
    except AgiError:
        return None
    return str(data["patch"]) if data.get("patch") else None


def cmd_cancel(ctx: KernelContext, args: argparse.Namespace) -> None:
    run = ctx.agi.cancel(args.run)
    print(f"agi: run {run.id} is {run.status}")


def cmd_approve(ctx: KernelContext, args: argparse.Namespace) -> Any:
    from agi_jupyter.kernel.approvals import decide_and_follow, show

    decision = "approve_always" if args.always else "approve"
    raw = {"max_tokens": args.max_tokens, "max_usd": args.max_usd}
    budget = {k: v for k, v in raw.items() if v is not None} or None
    view = decide_and_follow(ctx, args.run, decision, tool_call_id=args.tool_call, budget=budget)
    return show(ctx, view)


def cmd_deny(ctx: KernelContext, args: argparse.Namespace) -> Any:
    from agi_jupyter.kernel.approvals import decide_and_follow, show

    view = decide_and_follow(
        ctx, args.run, "deny", tool_call_id=args.tool_call, message=args.message
    )
    return show(ctx, view)


def cmd_undo(ctx: KernelContext, args: argparse.Namespace) -> None:
    from agi_jupyter.changes_view import conflict_summary, undo_lines

    force = args.force_cells or args.force
    result = ctx.agi.undo(
        args.run, force=force, turn=args.turn, changes=args.changes, redo=args.redo
    ).to_dict()
    for line in undo_lines(result):
        print(f"agi: {line}")
    summary = conflict_summary(result)
    if summary:
        print(f"agi: {summary}", file=sys.stderr)


def cmd_diff(ctx: KernelContext, args: argparse.Namespace) -> None:
    from agi_jupyter.changes_view import ansi, diff_lines

    changes = [c.to_dict() for c in ctx.agi.changes(args.run)]
    for line, style in diff_lines(changes):
        print(ansi(line, style))


def cmd_executions(ctx: KernelContext, args: argparse.Namespace) -> Table:
    from agi_jupyter.notebook.ledger import LEDGER_COLUMNS, ledger_row

    path = _own_notebook(ctx)
    rows = [ledger_row(e) for e in ctx.agi.executions(path, limit=args.limit)]
    return Table(list(LEDGER_COLUMNS), rows, title=f"Executions of {path}")


def cmd_protect(ctx: KernelContext, args: argparse.Namespace) -> None:
    _protect(ctx, args.cell, True)


def cmd_unprotect(ctx: KernelContext, args: argparse.Namespace) -> None:
    _protect(ctx, args.cell, False)


def _protect(ctx: KernelContext, cell_id: str, protected: bool) -> None:
    path = _own_notebook(ctx)
    changed = ctx.agi.protect_cell(path, cell_id, protected)
    state = "protected" if protected else "not protected"
    print(f"agi: cell {cell_id} is {state}" + ("" if changed else " (it already was)"))


def _own_notebook(ctx: KernelContext) -> str:
    path = ctx.notebook_path()
    if not path:
        raise UsageError("this kernel does not know its notebook's path")
    return path


def cmd_wait(ctx: KernelContext, args: argparse.Namespace) -> Any:
    from agi_jupyter.kernel.agi_cell import cell_result
    from agi_jupyter.kernel.dispatch import follow_with_dispatch, join_with_dispatch

    run_ids = [args.run] if args.run else list(ctx.background)
    if not run_ids:
        print("agi: no background runs")
        return None
    for run_id in run_ids:
        for _event in follow_with_dispatch(ctx.agi, run_id, ctx.dispatcher):
            pass
        # Kept until waited for (not removed when the run ends), so a wait after a fast run
        # still returns its result.
        thread = ctx.background.pop(run_id, None)
        if thread is not None:
            join_with_dispatch(thread, ctx.dispatcher, timeout=10)
    return cell_result(ctx.agi, run_ids[-1], shown=True)


# --- catalogue ---------------------------------------------------------------------------------


def cmd_agents(ctx: KernelContext, args: argparse.Namespace) -> Table:
    rows = [
        [a.name, a.description, ", ".join(a.tools) or "(none)", a.model or "", a.source]
        for a in ctx.agi.agents().values()
    ]
    return Table(["agent", "description", "tools", "model", "source"], rows, title="Agents")


def cmd_sdks(ctx: KernelContext, args: argparse.Namespace) -> Table:
    default = ctx.agi.config.default_sdk
    rows = [
        [
            s["id"] + (" (default)" if s["id"] == default else ""),
            s["display_name"],
            "yes" if s["available"] else f"no: {s['reason']}",
            ", ".join(k for k, v in s["capabilities"].items() if v),
        ]
        for s in ctx.agi.sdks()
    ]
    return Table(["sdk", "name", "installed", "capabilities"], rows, title="Agent SDKs")


def cmd_tools(ctx: KernelContext, args: argparse.Namespace) -> Table:
    rows = []
    for t in ctx.agi.tools(args.agent):
        first = t.description.strip().splitlines()[0] if t.description.strip() else ""
        requires = ", ".join(sorted(t.requires))
        rows.append([t.name, first, "yes" if t.read_only else "", requires, t.source])
    title = f"Tools offered to {args.agent}" if args.agent else "Tools"
    failed = [s for s in ctx.agi.mcp_servers() if s["state"] == "failed"]
    note = "; ".join(f"MCP server {s['name']} failed: {s['error']}" for s in failed)
    columns = ["tool", "description", "read-only", "requires", "source"]
    return Table(columns, rows, title=title, note=note)


def cmd_models(ctx: KernelContext, args: argparse.Namespace) -> Table:
    from agi_jupyter.providers import catalog
    from agi_jupyter.providers.local_models import list_local_models

    config = ctx.agi.config
    rows = []
    for info in catalog.models():
        settings = config.providers.get(info.vendor)
        configured = settings is not None and settings.configured
        rows.append(
            [
                f"{info.vendor}:{info.model}",
                info.context_window,
                info.input_per_mtok,
                info.output_per_mtok,
                "yes" if configured else "no key",
            ]
        )
    notes = [f"default: {config.default_model}; fake:echo is the offline model (no key needed)"]
    for name, served in list_local_models(config.providers).items():
        for model in served.models:
            rows.append([f"{name}:{model}", "", "", "", "served"])
        if served.error:
            notes.append(f"{name} ({served.base_url}): models not listed: {served.error}")
    note = "; ".join(notes)
    columns = ["model", "context", "input $/M", "output $/M", "configured"]
    return Table(columns, rows, title="Models", note=note)


def cmd_config(ctx: KernelContext, args: argparse.Namespace) -> Text:
    config = ctx.agi.config
    s = ctx.settings
    providers = ", ".join(
        f"{name}{'' if p.configured else ' (no key)'}"
        for name, p in config.providers.items()
        if p.enabled
    )
    lines = [
        f"project:          {config.project}",
        f"store:            {ctx.agi.store_location}",
        f"config sources:   {', '.join(config.sources) or '(defaults only)'}",
        f"default agent:    {config.default_agent}",
        f"default model:    {config.default_model}",
        f"max iterations:   {config.max_iterations}",
        f"providers:        {providers}",
        f"notebook:         {ctx.notebook_path() or '(unknown)'}",
        f"session:          {ctx.session_id or '(none yet)'}",
        f"AgiMagics:        format={s.format} replay={s.replay} update_rate={s.update_rate}"
        f" default_agent={s.default_agent!r} model={s.model!r}"
        f" max_iterations={s.max_iterations}",
    ]
    return Text("\n".join(lines))


def cmd_stats(ctx: KernelContext, args: argparse.Namespace) -> Table:
    rows = [[k, v] for k, v in ctx.agi.stats().items()]
    if ctx.session_id:
        context = ctx.agi.context(ctx.session_id)
        rows.append(["context", context_gauge(context["gauge"]) or "no model request yet"])
        rows.append(["session compactions", context["compactions"]])
        rows.append(["session cached input tokens", context["cached_input_tokens"]])
    return Table(["", "value"], rows, title="Store statistics")


def cmd_chat(ctx: KernelContext, args: argparse.Namespace) -> Any:
    from agi_jupyter.kernel.widget import ChatWidget

    return ChatWidget(ctx, session=ctx.current_session().id)


COMMANDS: dict[str, Command] = {
    "help": cmd_help,
    "sessions": cmd_sessions,
    "use": cmd_use,
    "new": cmd_new,
    "budget": cmd_budget,
    "history": cmd_history,
    "compact": cmd_compact,
    "runs": cmd_runs,
    "show": cmd_show,
    "cancel": cmd_cancel,
    "approve": cmd_approve,
    "deny": cmd_deny,
    "undo": cmd_undo,
    "diff": cmd_diff,
    "executions": cmd_executions,
    "protect": cmd_protect,
    "unprotect": cmd_unprotect,
    "wait": cmd_wait,
    "agents": cmd_agents,
    "sdks": cmd_sdks,
    "tools": cmd_tools,
    "models": cmd_models,
    "config": cmd_config,
    "stats": cmd_stats,
    "chat": cmd_chat,
}
