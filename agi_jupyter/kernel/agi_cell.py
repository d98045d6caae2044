"""One ``%%agi`` cell, from its options and body to a rendered answer and a ``RunResult``.

    render the request (interpolation, context) -> hash it -> replay a recorded run, or submit
    -> follow the run on the main thread (running ``python`` tool work handed to it, updating a
       display handle at most ``update_rate`` times a second) -> final display in the format
    -> the cell's value: a ``CellResult`` (a ``RunResult``)

A kernel interrupt at any point cancels exactly the cell's run (``Agi.cancel``), shows how far
it got and ends the cell with a one-line ``RunInterrupted`` (no traceback): while the run is
being created interrupts are held back (``interrupts_deferred``), so the run always exists, with
its id known, before one lands. An interrupt before that (while the runtime is still being
imported) leaves no run behind. Every wait of the cell on the runtime thread is bounded.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agi_jupyter.app import RunResult
from agi_jupyter.errors import AgiError, RunTerminal
from agi_jupyter.kernel._ipython import is_terminal
from agi_jupyter.kernel.dispatch import follow_with_dispatch, interrupts_deferred
from agi_jupyter.kernel.interpolate import context_block, interpolate, written_mentions
from agi_jupyter.kernel.live import LiveDisplay, MarkdownView, TerminalPrinter
from agi_jupyter.kernel.python_tool import run_in_namespace
from agi_jupyter.kernel.render import RunView
from agi_jupyter.kernel.replay import (
    RenderedRequest,
    find_recorded,
    history_fingerprint,
    recorded_python_calls,
)
from agi_jupyter.records import TextPart

if TYPE_CHECKING:
    from agi_jupyter.app import Agi
    from agi_jupyter.kernel.context import KernelContext
    from agi_jupyter.records import MentionPart, Run, Session

_CODE_BLOCK = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)
CANCEL_WAIT = 10.0  # seconds an interrupted cell waits for its run's cancel to take effect
SETTLE_WAIT = 10.0  # ... and then for the run's last events


@dataclass
class CellResult(RunResult):
    """The value of a ``%%agi`` cell: a ``RunResult`` that the cell itself does not display a
    second time (the answer is already on screen); displayed later (``_``), it shows the answer.
    ``value`` is the parsed JSON (``-f json``) or the extracted code (``-f code``)."""

    value: Any = None
    _shown: bool = False

    def _ipython_display_(self) -> None:
        if not self._shown:
            self._shown = True
            return
        from agi_jupyter.kernel._ipython import display

        display({"text/markdown": self.text, "text/plain": self.text}, raw=True)


class RunInterrupted(KeyboardInterrupt):
    """The kernel was interrupted while a ``%%agi`` cell waited: the run was cancelled."""

    def _render_traceback_(self) -> list[str]:
        return [f"RunInterrupted: {self}"]


@dataclass
class CellRequest:
    prompt: str
    session: Session
    agent: str | None
    model: str | None
    thinking_level: str | None
    max_iterations: int | None
    request_hash: str
    mentions: list[MentionPart] = field(default_factory=list)  # its @var / @file context


class CellRunner:
    """``live`` is the cell's output area, shown before the runtime was ready (None in a
    terminal IPython, which has no display handles)."""

    def __init__(self, ctx: KernelContext, args: Any, live: LiveDisplay | None = None) -> None:
        self.ctx = ctx
        self.args = args
        self.fmt: str = args.format or ctx.settings.format
        self.shell = ctx.shell
        self.live = live
        self.view = live.view if live is not None else RunView()
        self.view.load_artifact = self._diff_of
        self.agi: Agi = ctx.agi
        self.answer: Any = None  # the display handle of the answer (``display_final``)

    # --- the request ---------------------------------------------------------------------------

    def render_prompt(self, body: str) -> str:
        namespace = self.shell.user_ns
        prompt = interpolate(body, namespace, self.ctx.errors).strip()
        names = [n.strip() for n in (self.args.context or "").split(",") if n.strip()]
        if names:
            prompt = f"{prompt}\n\n{context_block(names, namespace)}"
        return prompt

    def session(self) -> Session:
        args = self.args
        if args.new:
            return self.ctx.new_session(agent=args.agent, model=args.model, sdk=args.sdk)
        if args.session:
            return self.agi.session(args.session)
        return self.ctx.current_session()

    def request(self, body: str) -> CellRequest:
        prompt = self.render_prompt(body)
        mentions = written_mentions(self.agi, prompt, self.shell.user_ns) if prompt else []
        session = self.session()
        tools = [t.strip() for t in (self.args.tools or "").split(",") if t.strip()]
        if tools:
            extra = list(session.tool_config.get("extra_tools") or [])
            extra += [t for t in tools if t not in extra]
            session = self.agi.update_session(session.id, tools=extra)
        model = self.args.model or None
        if model:
            provider, model_name = self.agi.config.resolve_model(model)
        elif session.provider and session.model:
            provider, model_name = session.provider, session.model
        else:
            provider, model_name = self.agi.config.resolve_model()
        max_iterations = self.args.max_iterations or self.ctx.settings.max_iterations or None
        rendered = RenderedRequest(
            prompt="\n\n".join([prompt, *(m.for_model() for m in mentions)]),
            agent=self.args.agent or session.agent,
            provider=provider,
            model=model_name,
            thinking_level=self.args.thinking or session.thinking_level,
            max_iterations=max_iterations,
            tools=tuple(session.tool_config.get("extra_tools") or ()),
            history=history_fingerprint(self.agi.messages(session.id)),
        )
        return CellRequest(
            prompt=prompt,
            session=session,
            agent=self.args.agent or None,
            model=model,
            thinking_level=self.args.thinking or None,
            max_iterations=max_iterations,
            request_hash=rendered.digest(),
            mentions=mentions,
        )

    # --- running -------------------------------------------------------------------------------

    def run(self, body: str) -> CellResult | None:
        req = self.request(body)
        if not req.prompt:
            self.discard_live()
            print("agi: the prompt is empty; write it in the cell below %%agi", file=sys.stderr)
            return None
        recorded = None
        if self.ctx.settings.replay and not self.args.fresh:
            recorded = find_recorded(self.agi, req.request_hash, self.ctx.notebook_path())
        if recorded is not None:
            return self.replay(req, recorded)
        if self.args.research:
            self.research(req)
            return None
        self.ctx.prepare_notebook()
        with interrupts_deferred() as interrupted:
            run = self.agi.submit(
                [TextPart(text=req.prompt), *req.mentions],
                session=req.session.id,
                run_agent=req.agent,
                model=req.model,
                thinking_level=req.thinking_level,
                max_iterations=req.max_iterations,
                execution_mode="kernel",
                request_hash=req.request_hash,
                **self.ctx.run_fields(),
            )
        try:
            if interrupted:  # it came while the run was being created: act on it now
                raise KeyboardInterrupt
            self.announce(run, req)
            if self.args.background:
                self.follow_in_background(run)
                return None
            self.follow(run, self.view)
        except RunInterrupted:
            raise
        except KeyboardInterrupt:  # between the run's creation and following it
            self.interrupted(run, self.view)
        return self.finish(self.view)

    def announce(self, run: Run, req: CellRequest) -> None:
        """What the status line says before the run's first event."""
        view = self.view
        view.run_id, view.session_id = run.id, run.session_id
        view.provider, view.model = run.provider or "", run.model or ""
        view.agent = run.agent or req.session.agent
        if self.live is not None:
            self.live.changed()

    def discard_live(self) -> None:
        if self.live is not None:
            self.live.discard()
            self.live = None

    def research(self, req: CellRequest) -> None:
        """Queue a deep research run; its live status shows until the report renders."""
        run = self.agi.research(
            req.prompt,
            session=req.session.id,
            model=self.args.model or None,
            request_hash=req.request_hash,
            **self.ctx.run_fields(),
        )
        self.announce(run, req)
        self.follow_in_background(run)

    def _diff_of(self, artifact_id: str) -> str | None:
        try:
            artifact = self.agi.artifact(artifact_id)
        except AgiError:
            return None
        patch = (artifact.data or {}).get("patch")
        return str(patch) if patch else None

    def follow(self, run: Run, view: RunView) -> None:
        live = self.live
        printer = TerminalPrinter(view) if is_terminal(self.shell) else None
        try:
            for event in follow_with_dispatch(self.agi, run.id, self.ctx.dispatcher):
                view.apply(event)
                if printer is not None:
                    printer.event(event)
                elif live is not None:
                    live.changed()
        except KeyboardInterrupt:
            self.interrupted(run, view)
        self.discard_live()

    def interrupted(self, run: Run, view: RunView) -> None:
        """Cancel the cell's run, show how far it got, end the cell with ``RunInterrupted``."""
        self.cancel_after_interrupt(run, view)
        self.discard_live()
        self.display_final(view)
        raise RunInterrupted(f"run {run.id} was cancelled") from None

    def cancel_after_interrupt(self, run: Run, view: RunView) -> None:
        """Cancel the run and take in its last events, each wait bounded; a second interrupt
        meanwhile is held back (it would only abandon the cancel half-way)."""
        with interrupts_deferred():
            with contextlib.suppress(RunTerminal):
                self.agi.cancel(run.id, wait=CANCEL_WAIT)
            events = follow_with_dispatch(self.agi, run.id, self.ctx.dispatcher, wait=SETTLE_WAIT)
            for event in events:
                if event.get("type") in ("run.status", "error", "run.final", "tool.call.output"):
                    view.apply(event)

    def follow_in_background(self, run: Run) -> None:
        view, live = self.view, self.live
        if live is None:  # a terminal: no display handles, say where the answer will be
            print(f"agi: run {run.id} goes on in the background; `%agi wait` shows its answer")
        else:
            live.keep = True
        self.live = None  # the follower thread owns the area now

        def pump() -> None:
            for event in self.agi.follow(run.id):
                view.apply(event)
                if live is not None:
                    live.changed()
            if live is not None:
                live.close()

        thread = threading.Thread(target=pump, name=f"agi-follow-{run.id}", daemon=True)
        self.ctx.background[run.id] = thread
        thread.start()

    def replay(self, req: CellRequest, recorded: Run) -> CellResult:
        agent = req.agent if req.agent and req.agent != req.session.agent else None
        run = self.agi.replay(
            recorded.id,
            session=req.session.id,
            agent=agent,
            execution_mode="kernel",
            request_hash=req.request_hash,
            **self.ctx.run_fields(),
        )
        failed = []
        for code in recorded_python_calls(self.agi, run.id):
            report = run_in_namespace(code, self.shell.user_ns)
            if not report.ok:
                failed.append(report.error)
        view = self.view
        for event in self.agi.follow(run.id):
            view.apply(event)
        self.discard_live()  # the same outputs as the recorded execution left
        if is_terminal(self.shell):
            print(view.to_text())
            result = self.result(view)
        else:
            result = self.finish(view)
        for error in failed:  # after the answer: clearing the live area would hide them
            print(f"agi: replaying a python call failed: {error}", file=sys.stderr)
        return result

    # --- the answer ----------------------------------------------------------------------------

    def finish(self, view: RunView) -> CellResult:
        terminal = is_terminal(self.shell)
        value = self.value_of(view) if terminal else self.display_final(view)
        if view.status == "waiting_approval" and not terminal:
            from agi_jupyter.kernel._ipython import someone_can_answer
            from agi_jupyter.kernel.approvals import NobodyToApprove, waiting_on
            from agi_jupyter.kernel.decisions import DecisionArea

            if not someone_can_answer(self.shell):
                raise NobodyToApprove(view.run_id, waiting_on(self.ctx, view.run_id))
            fmt = "text" if self.fmt == "text" else "markdown"
            DecisionArea(self.ctx, view, self.answer, fmt).start()
        result = self.result(view, value)
        if self.fmt == "code" and isinstance(value, str) and value:
            self.shell.set_next_input(value, replace=False)
        return result

    def value_of(self, view: RunView) -> Any:
        if self.fmt == "code":
            return extract_code(view.text)
        if self.fmt == "json":
            try:
                return parse_json(view.text)
            except ValueError:
                return None
        return None

    def display_final(self, view: RunView) -> Any:
        from agi_jupyter.kernel._ipython import display

        value = self.value_of(view)
        if self.fmt == "json" and view.status == "succeeded":
            if value is None and view.text:
                print("agi: the answer is not valid JSON; showing it as text", file=sys.stderr)
            elif value is not None:
                pretty = json.dumps(value, indent=2, ensure_ascii=False)
                bundle = {"application/json": value, "text/plain": pretty}
                display(bundle, raw=True, metadata={"application/json": {"expanded": True}})
        shown = MarkdownView(view, "text" if self.fmt == "text" else "markdown")
        self.answer = display(shown, display_id=True)  # a decision taken later updates it
        return value

    def result(self, view: RunView, value: Any = None) -> CellResult:
        return cell_result(self.agi, view.run_id, value)


def cell_result(agi: Agi, run_id: str, value: Any = None, *, shown: bool = False) -> CellResult:
    """``agi.result(run_id)`` as a ``CellResult``; ``shown=False`` skips its first display."""
    base = agi.result(run_id)
    return CellResult(
        text=base.text,
        run=base.run,
        messages=base.messages,
        usage=base.usage,
        value=value,
        _shown=shown,
    )


def extract_code(text: str) -> str:
    """The code blocks of an answer joined, or the whole answer when it has none."""
    blocks = [b.strip("\n") for b in _CODE_BLOCK.findall(text)]
    return "\n\n".join(blocks) if blocks else text.strip()


def parse_json(text: str) -> Any:
    """The JSON value of an answer (a fenced block or the bare text); ``ValueError`` if none."""
    blocks = _CODE_BLOCK.findall(text)
    candidates = [*blocks, text]
    for candidate in candidates:
        try:
            return json.loads(candidate.strip())
        except ValueError:
            continue
    raise ValueError("no JSON value in the answer")
