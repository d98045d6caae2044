"""A question asked in a notebook follows its answer, from whichever door gave it.

A run that waits for a person (``waiting_approval``) can be decided in the side panel, in the
chat widget, with a ``%%agi`` cell's buttons or ``%agi approve``, with ``agi approve``, or
through the REST API. Every notebook door that shows the question follows the run past its
wait (``follow_across_waits``): once the decision is stored, from any process, the run's
``approval.decided`` event says who decided it and where, and its continuation streams on.

``DecisionArea`` is that follower for a ``%%agi`` cell whose run waits: the cell's answer and
its buttons are displays with ids, updated in place from a daemon thread, so the cell ends
showing the decision ("approved in the panel by alice") and the rest of the run, and the saved
notebook keeps that final state, never a stale "waiting" with buttons.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agi_jupyter.config import local_user_name
from agi_jupyter.kernel.live import MarkdownView
from agi_jupyter.kinds import DecisionDoor
from agi_jupyter.runtime.follow import POLL_INTERVAL

if TYPE_CHECKING:
    from agi_jupyter.app import Agi
    from agi_jupyter.kernel.context import KernelContext
    from agi_jupyter.kernel.render import RunView
    from agi_jupyter.records import ToolCall

# How often the view is pushed to the cell while the continuation streams (per second).
UPDATE_RATE = 10.0


def decide_here(
    agi: Agi, run_id: str, decision: str, door: DecisionDoor, **options: Any
) -> list[ToolCall]:
    """``Agi.decide`` from a notebook door (``cell`` or ``widget``), by the kernel's user;
    ``options``: ``tool_call_id``, ``message``, ``budget``."""
    return agi.decide(run_id, decision, door=door, by=local_user_name(), **options)


def follow_across_waits(
    agi: Agi, run_id: str, after_seq: int, stop: threading.Event
) -> Iterator[dict[str, Any]]:
    """The run's events after ``after_seq`` until it ends, across its waits for a person:
    while it waits, the store is asked every ``POLL_INTERVAL`` whether a decision moved it on
    (a decision taken in another process reaches this one only through the store). Ends early
    once ``stop`` is set, or when the runtime is closed under it (the kernel shuts down)."""
    last = after_seq
    while not stop.is_set():
        try:
            for event in agi.follow(run_id, after_seq=last):
                last = max(last, int(event.get("seq") or 0))
                yield event
                if event.get("type") == "run.final":
                    return
            # parked for a decision (or queued for a process to take it on): look again soon
            while stop.wait(POLL_INTERVAL) is False:
                if agi.run(run_id).status != "waiting_approval":
                    break
            else:
                return
        except Exception:  # the kernel's runtime was closed (unload, shutdown): nothing to show
            return


class DecisionArea:
    """The answer and the Approve / Deny / Always buttons of a ``%%agi`` cell whose run waits,
    kept true from a daemon thread until the run ends: the buttons give way to who decided
    (wherever it was decided), the answer streams on in place, and a new question brings
    new buttons in the same place."""

    def __init__(self, ctx: KernelContext, view: RunView, answer: Any, fmt: str) -> None:
        from agi_jupyter.kernel._ipython import display

        self.ctx, self.view, self.answer, self.fmt = ctx, view, answer, fmt
        self.stop = threading.Event()
        self.asked = 0  # the questions shown: a buttons' click answers only its own
        self.open = False  # buttons are showing
        self.asking: set[str] = set()  # the tool calls they ask about
        self.budget_asked = False  # ... or the budget question they answer
        self.buttons = display({"text/plain": ""}, raw=True, display_id=True)
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Show the buttons and follow the run on a daemon thread."""
        self._ask()
        self.thread = threading.Thread(
            target=self._follow, name=f"agi-decision-{self.view.run_id}", daemon=True
        )
        self.thread.start()

    # --- the buttons ---------------------------------------------------------------------------

    def _ask(self) -> None:
        """The buttons for the question the run waits on now (without ipywidgets: the printed
        hint, ``%agi approve``, is all there is)."""
        self.asked += 1
        self.open = True
        agi, run_id = self.ctx.agi, self.view.run_id
        self.asking = {c.tool_call_id for c in agi.pending_approvals(run_id)}
        self.budget_asked = agi.pending_budget(run_id) is not None
        try:
            import ipywidgets as widgets
        except ImportError:
            return
        if self.budget_asked:
            box = budget_buttons(self.ctx, run_id, widgets)
        else:
            box = self._approval_buttons(widgets)
        self.buttons.update(box)

    def _approval_buttons(self, widgets: Any) -> Any:
        message = widgets.Text(placeholder="message to the model with a denial (optional)")
        buttons = {
            "approve": widgets.Button(description="Approve", button_style="success"),
            "deny": widgets.Button(description="Deny", button_style="danger"),
            "approve_always": widgets.Button(description="Always (this session)"),
        }
        output = widgets.Output()
        question = self.asked

        def click(decision: str) -> Any:
            def handler(_button: Any) -> None:
                if question != self.asked:
                    return  # a later question's buttons replaced these
                for button in buttons.values():
                    button.disabled = True
                message.disabled = True
                self.ctx.dispatcher.capture_loop()
                try:
                    decide_here(
                        self.ctx.agi,
                        self.view.run_id,
                        decision,
                        DecisionDoor.CELL,
                        message=message.value.strip() or None,
                    )
                except Exception as e:  # another door won: say so (the follower shows whom)
                    with output:
                        print(f"agi: {getattr(e, 'message', e)}", file=sys.stderr)

            return handler

        for decision, button in buttons.items():
            button.add_class(f"agi-approval-{decision.replace('_', '-')}")
            button.on_click(click(decision))
        box = widgets.VBox([widgets.HBox([*buttons.values(), message]), output])
        box.add_class("agi-approval")
        return box

    def _answered(self) -> None:
        """The question was answered (anywhere): its buttons give way to who answered it, as
        stored with each decision."""
        self.open = False
        decided = [
            f"{c.name} {c.decided}"
            for c in self.ctx.agi.tool_calls(self.view.run_id)
            if c.tool_call_id in self.asking and c.approval
        ]
        if not decided:
            decided = [
                "the budget question was answered"
                if self.budget_asked and not self.view.done
                else f"no decision: the run is {self.view.status}"
            ]
        words = "; ".join(decided)
        self.buttons.update({"text/plain": words, "text/markdown": f"*{words}*"}, raw=True)

    # --- following the run -----------------------------------------------------------------------

    def _follow(self) -> None:
        view, last_push, dirty = self.view, 0.0, False
        for event in follow_across_waits(self.ctx.agi, view.run_id, view.seq, self.stop):
            view.apply(event)
            kind, status = event.get("type"), event.get("status")
            if kind == "run.status" and status == "waiting_approval":
                self._ask()
            elif kind == "run.status" and self.open:
                self._answered()
            dirty = True
            now = time.monotonic()
            if now - last_push >= 1.0 / UPDATE_RATE or kind in ("run.final", "run.status"):
                self._push()
                last_push, dirty = now, False
        if dirty:
            self._push()
        if self.open and view.status != "waiting_approval":
            self._answered()  # ended without resuming (cancelled meanwhile)

    def _push(self) -> None:
        bundle, metadata = MarkdownView(self.view, self.fmt)._repr_mimebundle_()
        with contextlib.suppress(Exception):  # the kernel is going away: nothing to show
            self.answer.update(bundle, metadata=metadata, raw=True)


def budget_buttons(ctx: KernelContext, run_id: str, widgets: Any) -> Any:
    """New max tokens / max USD and Raise / Deny, for a run waiting for a larger budget."""
    tokens = widgets.IntText(description="max tokens", value=0)
    usd = widgets.FloatText(description="max USD", value=0.0)
    buttons = {
        "approve": widgets.Button(description="Raise budget", button_style="success"),
        "deny": widgets.Button(description="Deny", button_style="danger"),
    }
    output = widgets.Output()

    def click(decision: str) -> Any:
        def handler(_button: Any) -> None:
            raw = {"max_tokens": tokens.value or None, "max_usd": usd.value or None}
            budget = {k: v for k, v in raw.items() if v} if decision == "approve" else None
            ctx.dispatcher.capture_loop()
            try:
                decide_here(ctx.agi, run_id, decision, DecisionDoor.CELL, budget=budget)
            except Exception as e:  # BUDGET_NOT_RAISED: shown, the inputs stay usable
                with output:
                    print(f"agi: {getattr(e, 'message', e)}", file=sys.stderr)
                return
            for button in buttons.values():
                button.disabled = True

        return handler

    for decision, button in buttons.items():
        button.add_class(f"agi-budget-{decision}")
        button.on_click(click(decision))
    box = widgets.VBox([widgets.HBox([tokens, usd, *buttons.values()]), output])
    box.add_class("agi-approval")
    return box
