"""A run's view on its way to the screen while it streams.

``MarkdownView`` is a view as a rich display object (Markdown, or just its status line);
``LiveDisplay`` pushes a view into a notebook display handle at most ``rate`` times a second;
``TerminalPrinter`` prints a run as it streams in a terminal IPython. The view itself, folded
from the run's events, and its Markdown and text forms are ``render.py``'s.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from agi_jupyter.kernel.render import RunView, approval_hint, tool_text


class MarkdownView:
    """A display object: Markdown for notebooks, plain text for everything else.

    Its metadata names the run whose answer it shows: the original recording when the run
    is a replay (the replay's own id is in the store), so that a notebook re-run from its
    recordings is saved byte for byte as before."""

    def __init__(self, view: RunView, fmt: str = "markdown", *, status_only: bool = False) -> None:
        self.view, self.fmt, self.status_only = view, fmt, status_only

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, str], dict[str, Any]]:
        metadata = {"agi": {"run_id": self.view.recorded_run_id}}
        text = f"[{self.view.footer()}]" if self.status_only else self.view.to_text()
        if self.fmt == "text":
            return {"text/plain": text}, metadata
        markdown = self.view.to_markdown(status_only=self.status_only)
        return {"text/markdown": markdown, "text/plain": text}, metadata


class LiveDisplay:
    """The output area of a ``%%agi`` cell while it runs: a status line at once, then the run
    as it streams, updated at most ``rate`` times a second (``status_only``: the status line
    alone).

    The area starts as a display with no data (so tools that skip display updates, like
    nbval, see nothing of it) and is cleared (``clear_output(wait=True)``) when the final
    answer is displayed, so a saved notebook keeps only the answer. ``keep`` (background
    runs) leaves the final state in the area instead."""

    def __init__(
        self,
        view: RunView,
        fmt: str,
        *,
        rate: float = 20.0,
        keep: bool = False,
        status_only: bool = False,
    ) -> None:
        from agi_jupyter.kernel._ipython import display

        self.view, self.fmt, self.keep, self.status_only = view, fmt, keep, status_only
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.updates = 0
        self.closed = False
        self._last = 0.0
        self._dirty = False
        self.handle = display({}, raw=True, display_id=True)
        self._push(time.monotonic())

    def changed(self) -> None:
        self._dirty = True
        now = time.monotonic()
        if now - self._last >= self.interval and not self.closed:
            self._push(now)

    def _push(self, now: float) -> None:
        self._last, self._dirty = now, False
        self.updates += 1
        shown = MarkdownView(self.view, self.fmt, status_only=self.status_only)
        bundle, metadata = shown._repr_mimebundle_()
        self.handle.update(bundle, metadata=metadata, raw=True)

    def close(self) -> None:
        """Show the final state in the area (``keep``), or clear it for the final display."""
        if self.keep and not self.closed:
            self.status_only = False
            self._push(time.monotonic())
            self.closed = True
        else:
            self.discard()

    def discard(self) -> None:
        """Remove the area when the next output arrives (the answer, or an error line). Only
        once: a second clear would take the answer away too."""
        from agi_jupyter.kernel._ipython import clear_output

        if self.closed:
            return
        self.closed = True
        self.updates += 1
        clear_output(wait=True)


class TerminalPrinter:
    """Prints a run to a terminal as it streams: text deltas as they come, tool lines whole."""

    def __init__(self, view: RunView, stream: TextIO | None = None) -> None:
        self.view = view
        self.stream = stream or sys.stdout
        self._shown_tools: set[str] = set()
        self._streamed_text = False

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "output.text.delta":
            self._write(str(event.get("delta", "")))
            self._streamed_text = True
        elif kind == "output.text.done" and not self._streamed_text:
            self._write(str(event.get("text", "")))
        elif kind == "notice":
            self._write(f"\nWarning — {event.get('message')} [{event.get('code')}]\n")
        elif kind == "output.text.reset" and event.get("discarded_chars"):
            self._write(
                f"\n[retrying: attempt {event.get('attempt')} answers again; the "
                f"{event.get('discarded_chars')} characters above are discarded]\n"
            )
            self._streamed_text = False
        elif kind in ("iteration", "tool.call.started"):
            if self._streamed_text:
                self._write("\n")
            self._streamed_text = False
        elif kind == "tool.call.output":
            block = self.view._tool(event.get("tool_call_id"))
            if block is not None and block.tool_call_id not in self._shown_tools:
                self._shown_tools.add(block.tool_call_id)
                self._write(tool_text(block) + "\n")
        elif kind == "run.final":
            error = f"\nError — {self.view.error}" if self.view.error else ""
            self._write(f"\n{error}\n[{self.view.footer()}]\n")
        elif kind == "run.status" and event.get("status") == "waiting_approval":
            self._write(f"\n{approval_hint(self.view)}\n[{self.view.footer()}]\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
