"""Printing a run's events as they arrive.

Human mode: the answer's text goes to stdout as it streams; tool calls and notes go to stderr
compactly (``[fs.read] {"path": "notes.txt"}`` then ``[fs.read] ok: ...``); a rich status line
shows what the run waits for, only when stdout is a terminal. ``--json``: every event as one
NDJSON line on stdout, nothing else there.

When stdout is a regular file (``agi ... > file``), a model turn's text is written once the turn
is complete (``output.text.done``): a turn cut short and retried (an ``error`` event with
``retryable``, then ``output.text.reset``) is dropped, so the file holds only the final attempt's
answer. On a terminal or a pipe the text streams live and stderr says that an attempt was
retried and how much of the text above it discards. A usage the server
did not send prints as unknown; an answer cut short is said so on stderr (the output token limit,
or a full context window with its tokens), and so is a ``notice`` (tools a local model cannot
take).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

import click
from rich.status import Status

from agi_jupyter.budget import describe
from agi_jupyter.cli.render import compact_json, console, one_line, print_json_line, stop_note
from agi_jupyter.events import HOSTED_TOOL_TYPE

FAKE_NOTE = (
    "note: answering with the offline fake model (no provider key set); "
    "run `agi setup` or set OPENAI_API_KEY / ANTHROPIC_API_KEY for a real one"
)


class Progress:
    """A transient status line on a terminal stdout; does nothing when disabled."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._status: Status | None = None

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        if self._status is None:
            self._status = console().status(text, spinner="dots")
            self._status.start()
        else:
            self._status.update(text)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


class StreamPrinter:
    """Consumes a run's events; ``final`` is the ``run.final`` run object once it arrived."""

    def __init__(self, *, as_json: bool, progress: Progress, live_text: bool = True) -> None:
        self.as_json = as_json
        self.progress = progress
        self.live_text = live_text  # False: write each turn's text when the turn completed
        self._pending: list[str] = []  # the current turn's text not written yet (live_text off)
        self.final: dict[str, Any] | None = None
        self.run_id: str | None = None
        self.last_seq = 0
        self._tool_names: dict[str, str] = {}
        self.budgets: dict[str, Mapping[str, Any]] = {}  # the last ``budget`` event per scope
        self._mid_line = False  # stdout holds text not yet ended by a newline

    def consume(self, events: Iterable[Mapping[str, Any]]) -> None:
        for event in events:
            self.handle(event)
        self.progress.stop()
        self.end_line()

    def handle(self, event: Mapping[str, Any]) -> None:
        self.run_id = self.run_id or event.get("run_id")
        self.last_seq = max(self.last_seq, int(event.get("seq") or 0))
        if event.get("type") == "run.final":
            self.final = dict(event.get("run") or {})
        if self.as_json:
            print_json_line(event)
            return
        handler = getattr(self, "_on_" + str(event.get("type")).replace(".", "_"), None)
        if handler is not None:
            handler(event)

    def end_line(self) -> None:
        if self._mid_line:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self._mid_line = False

    def note(self, text: str) -> None:
        """A line on stderr, after ending the answer's current line."""
        self.progress.stop()
        self.end_line()
        click.echo(text, err=True)

    # --- human mode, one method per event type ----------------------------------------------

    def _on_run_meta(self, e: Mapping[str, Any]) -> None:
        if e.get("provider") == "fake":
            self.note(FAKE_NOTE)
        self.progress.show(f"waiting for {e.get('provider')}:{e.get('model')}…")

    def _on_reasoning_delta(self, e: Mapping[str, Any]) -> None:
        self.progress.show("thinking…")

    def _on_output_text_delta(self, e: Mapping[str, Any]) -> None:
        self.progress.stop()
        delta = str(e.get("delta", ""))
        if not delta:
            return
        if self.live_text:
            self._write(delta)
        else:
            self._pending.append(delta)

    def _on_output_text_done(self, e: Mapping[str, Any]) -> None:
        if not self.live_text:
            self._pending.clear()
            self._write(str(e.get("text", "")))

    def _write(self, text: str) -> None:
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
            self._mid_line = not text.endswith("\n")

    def _on_message_completed(self, e: Mapping[str, Any]) -> None:
        message = e.get("message") or {}
        stop = stop_note(message.get("meta") or {}) if message.get("role") == "assistant" else None
        if stop:
            self.note(f"note: the answer was cut short ({stop})")

    def _on_notice(self, e: Mapping[str, Any]) -> None:
        self.note(f"warning: {e.get('message')} [{e.get('code')}]")

    def _on_tool_call_started(self, e: Mapping[str, Any]) -> None:
        self._tool_names[str(e.get("tool_call_id"))] = str(e.get("name"))
        if e.get("tool_type") == HOSTED_TOOL_TYPE:
            self.note(f"[{e.get('name')}] run by the provider")
        self.progress.show(f"calling {e.get('name')}…")

    def _on_tool_call_arguments_done(self, e: Mapping[str, Any]) -> None:
        name = self._tool_names.get(str(e.get("tool_call_id")), "tool")
        self.note(one_line(f"[{name}] {compact_json(e.get('arguments') or {})}", 160))
        self.progress.show(f"running {name}…")

    def _on_tool_call_output(self, e: Mapping[str, Any]) -> None:
        state = "ok" if e.get("ok") else "error"
        self.note(one_line(f"[{e.get('name')}] {state}: {e.get('output', '')}", 160))
        self.progress.show("waiting for the model…")

    def _on_error(self, e: Mapping[str, Any]) -> None:
        if e.get("retryable"):
            self.note(one_line(f"[retrying] {e.get('code')}: {e.get('message')}", 160))

    def _on_output_text_reset(self, e: Mapping[str, Any]) -> None:
        """The next attempt streams the unfinished turn again: what it streamed is dropped
        (not written yet when the text is written per turn; said so when it is live)."""
        dropped = bool(self._pending)
        self._pending.clear()
        shown = int(e.get("discarded_chars") or 0)
        if dropped or (self.live_text and shown):
            kept = "" if dropped else f" (the {shown} characters above)"
            self.note(
                f"note: the attempt was retried; its partial answer{kept} is not kept: "
                f"attempt {e.get('attempt')} answers again"
            )

    def _on_budget(self, e: Mapping[str, Any]) -> None:
        self.budgets[str(e.get("scope"))] = e

    def _on_run_final(self, e: Mapping[str, Any]) -> None:
        self._write("".join(self._pending))  # the partial answer of a run that ended mid-turn
        self._pending.clear()
        self.progress.stop()
        self.end_line()
        run = e.get("run") or {}
        if run.get("id"):
            line = recorded_line(run)
            for status in self.budgets.values():
                line += f" · {describe(status)}"
            if self.progress.enabled:
                console(stderr=True).print(f"[dim]{line}[/dim]", highlight=False)
            else:
                click.echo(line, err=True)


def recorded_line(run: Mapping[str, Any]) -> str:
    """Where a run is recorded and how to look at it again (one line, on stderr)."""
    usage = run.get("usage") or {}
    session = run.get("session_id")
    if usage.get("unknown_turns"):
        tokens = "usage unknown (the server sent none)"
    else:
        tokens = f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out"
    stop = stop_note(usage)
    truncated = f" · {stop}" if stop else ""
    return (
        f"{run.get('id')} · session {session} · {tokens}{truncated} · recorded in "
        f".agi/agi.sqlite (`agi show {session} --full`)"
    )
