"""Output shared by the commands: JSON, rich tables, key/value blocks and one-line summaries.

Tables and text go to stdout through one rich ``Console``; on a pipe it uses no colours and a
wide line, so ids are never cut. Text from the store (prompts, answers, tool output) is printed
as plain text, never interpreted as rich markup.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agi_jupyter import run_state_codec

# The commands' one way to write a cost and why an answer stopped short (re-exported).
from agi_jupyter.amounts import UNKNOWN as UNKNOWN
from agi_jupyter.amounts import known_usd as known_usd
from agi_jupyter.amounts import stop_note as stop_note
from agi_jupyter.amounts import usd as usd
from agi_jupyter.events import HOSTED_TOOL_TYPE
from agi_jupyter.run_state import LoopState

PIPE_WIDTH = 200


def console(*, stderr: bool = False) -> Console:
    """A console on the current stdout (or stderr): a terminal's width, else a wide line."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else PIPE_WIDTH
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


def jsonable(value: Any) -> Any:
    """Records, pages and dicts as plain JSON values (a run's state: its stored form)."""
    if isinstance(value, LoopState):
        return run_state_codec.to_json(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(jsonable(value), indent=2, default=str, ensure_ascii=False) + "\n")


def print_json_line(value: Any) -> None:
    sys.stdout.write(json.dumps(jsonable(value), default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def table(columns: Sequence[str], rows: Iterable[Sequence[object]], *, empty: str) -> None:
    """A borderless table, or ``empty`` (on stderr) when there are no rows."""
    grid = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for name in columns:
        grid.add_column(name, overflow="fold")
    count = 0
    for row in rows:
        grid.add_row(*(Text(cell(value)) for value in row))
        count += 1
    if count == 0:
        if empty:
            console(stderr=True).print(empty)
        return
    out = console()
    if out.is_terminal:
        out.print(grid)
        return
    with out.capture() as captured:
        out.print(grid)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def fields(pairs: Iterable[tuple[str, object]]) -> None:
    """``key  value`` lines, keys aligned; empty values are left out."""
    kept = [(k, cell(v)) for k, v in pairs if v not in (None, "", {}, [])]
    width = max((len(k) for k, _ in kept), default=0)
    out = console()
    for key, value in kept:
        out.print(Text(f"{key:<{width}}  ", style="bold") + Text(value))


def cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping | list):
        return compact_json(value)
    return str(value)


def compact_json(value: Any) -> str:
    return json.dumps(jsonable(value), default=str, ensure_ascii=False, separators=(", ", ": "))


def one_line(text: str, limit: int = 100) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def when(iso: str | None) -> str:
    """``2026-11-22T02:32:35.181Z`` -> ``2026-11-22 02:32:35``."""
    return iso[:19].replace("T", " ") if iso else "-"


def budget_line(status: Mapping[str, Any]) -> str:
    """``session budget: 60/100 tokens (40 tokens left)``: a budget status (``BudgetStatus``
    as a dict), as ``agi stats`` and ``agi budget`` print it."""
    from agi_jupyter.budget import describe

    left = []
    if status.get("remaining_tokens") is not None:
        left.append(f"{status['remaining_tokens']} tokens")
    if status.get("remaining_usd") is not None:
        left.append(usd(status["remaining_usd"]))
    return f"{describe(status)} ({', '.join(left)} left)"


def model_label(provider: str | None, model: str | None) -> str:
    return f"{provider}:{model}" if provider and model else (model or provider or "-")


def tokens(input_tokens: int | None, output_tokens: int | None) -> str:
    """``in/out``; ``?`` for a count the server did not send (unknown, not zero)."""
    return f"{_count(input_tokens)}/{_count(output_tokens)}"


def _count(value: int | None) -> str:
    return UNKNOWN if value is None else str(value)


# --- events ----------------------------------------------------------------------------------


def _tool(e: Mapping[str, Any]) -> str:
    by = ", run by the provider" if e.get("tool_type") == HOSTED_TOOL_TYPE else ""
    return f"{e.get('name')} ({e.get('tool_call_id')}{by})"


def _tool_output(e: Mapping[str, Any]) -> str:
    return f"{e.get('name')} {'ok' if e.get('ok') else 'error'}: {e.get('output', '')}"


def _usage(e: Mapping[str, Any]) -> str:
    return f"in={e.get('input_tokens')} out={e.get('output_tokens')} cost={usd(e.get('cost_usd'))}"


def _message(e: Mapping[str, Any]) -> str:
    message = e.get("message") or {}
    calls = [p.get("name") for p in message.get("parts") or [] if p.get("type") == "tool_call"]
    text = message.get("text") or ""
    return f"{message.get('role')}: {text}" + (f" [calls {', '.join(calls)}]" if calls else "")


def _final(e: Mapping[str, Any]) -> str:
    run = e.get("run") or {}
    error = run.get("error") or {}
    return f"{run.get('status')} {error.get('message', '')}".strip()


_SUMMARIES: dict[str, Any] = {
    "run.meta": lambda e: (
        f"{model_label(e.get('provider'), e.get('model'))} agent={e.get('agent')} "
        f"session={e.get('session_id')}"
    ),
    "run.status": lambda e: str(e.get("status")),
    "iteration": lambda e: f"{e.get('iteration')}/{e.get('max_iterations')}",
    "output.text.delta": lambda e: repr(e.get("delta", "")),
    "reasoning.delta": lambda e: repr(e.get("delta", "")),
    "output.text.done": lambda e: str(e.get("text", "")),
    "output.text.reset": lambda e: (
        f"attempt {e.get('attempt')} streams again; {e.get('discarded_chars')} characters discarded"
    ),
    "reasoning.done": lambda e: str(e.get("text", "")),
    "tool.call.started": _tool,
    "tool.call.arguments.delta": lambda e: repr(e.get("delta", "")),
    "tool.call.arguments.done": lambda e: compact_json(e.get("arguments")),
    "tool.call.delta": lambda e: f"{e.get('channel')}: {e.get('chunk', '')}",
    "tool.call.output": _tool_output,
    "usage": _usage,
    "message.completed": _message,
    "error": lambda e: f"{e.get('code')}: {e.get('message')}",
    "run.final": _final,
}
_ENVELOPE = frozenset({"type", "run_id", "seq", "ts"})


def event_summary(event: Mapping[str, Any]) -> str:
    """What an event says, on one line."""
    summarize = _SUMMARIES.get(str(event.get("type")))
    if summarize is not None:
        return one_line(summarize(event))
    return one_line(compact_json({k: v for k, v in event.items() if k not in _ENVELOPE}))


def event_line(event: Mapping[str, Any]) -> str:
    """``  12  02:32:35  tool.call.output           fs.list ok: (no entries)``"""
    stamp = when(event.get("ts"))[11:] or "-"
    return f"{event.get('seq', ''):>4}  {stamp:<8}  {event.get('type', ''):<26} " + event_summary(
        event
    )
