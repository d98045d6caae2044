"""The chat widget: ``agi_jupyter.chat(session=None, agent=None, model=None)``.

An anywidget (``static/chat.js``, a plain ES module, no bundler). The ``transcript`` trait is the
source of truth: a list of entries (user, assistant, tool, info, error) that the front end
renders. While an answer streams, text deltas travel as custom messages
(``{"type": "delta", "entry": id, "text": ...}``, coalesced to at most ``rate`` a second) and
the whole text is committed to the transcript when the message completes. Tool calls are
transcript entries updated as they start and finish.

Sending never blocks the kernel: the front end's ``send`` message starts a run with
``Agi.submit`` (it executes on the runtime's loop thread) and a daemon thread follows its events
and updates the widget; the ``python`` tool's code still runs on the kernel's main thread, in
the gaps when the kernel is idle. The stop button cancels the run; the pickers choose the
session (its history is loaded from the store), the model and the agent.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
from traitlets import Dict, List, Unicode

from agi_jupyter.amounts import UNKNOWN, context_gauge, stop_note, token_counts, usage_gauge, usd
from agi_jupyter.budget import describe
from agi_jupyter.kernel.decisions import decide_here, follow_across_waits
from agi_jupyter.kernel.interpolate import written_mentions
from agi_jupyter.kinds import DecisionDoor
from agi_jupyter.records import (
    ImagePart,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    decided_text,
)
from agi_jupyter.tools.diffs import DIFF_KINDS

if TYPE_CHECKING:
    from agi_jupyter.app import RunResult
    from agi_jupyter.kernel.context import KernelContext

STATIC = Path(__file__).parent / "static"
Entry = dict[str, Any]


class ChatWidget(anywidget.AnyWidget):
    _esm = STATIC / "chat.js"
    _css = STATIC / "chat.css"

    transcript = List(Dict()).tag(sync=True)
    session_id = Unicode("").tag(sync=True)
    sessions = List(Dict()).tag(sync=True)
    model = Unicode("").tag(sync=True)
    models = List(Unicode()).tag(sync=True)
    agent = Unicode("").tag(sync=True)
    agents = List(Unicode()).tag(sync=True)
    running = Unicode("").tag(sync=True)
    status = Unicode("").tag(sync=True)

    def __init__(
        self,
        ctx: KernelContext,
        *,
        session: str | None = None,
        agent: str | None = None,
        model: str | None = None,
        rate: float = 20.0,
    ) -> None:
        super().__init__()
        self._ctx = ctx
        self._lock = threading.RLock()
        self._followers: dict[str, threading.Thread] = {}
        self._parked: set[str] = set()  # runs waiting for a person (their followers wait too)
        self._closed = threading.Event()  # the widget was closed: its followers stop
        self._last_run_id: str | None = None
        self._interval = 1.0 / rate if rate > 0 else 0.0
        self._counter = 0
        agi = ctx.agi
        self.agents = sorted(agi.agents())
        self.observe(self._on_session_change, names="session_id")
        self.on_msg(self._on_front_end_message)
        if session is None:
            session = ctx.current_session().id if agent is None and model is None else None
        if session is None:
            session = ctx.new_session(agent=agent, model=model).id
        self.agent = agent or agi.session(session).agent
        self.refresh_pickers(model)
        self.session_id = session

    # --- pickers and history ---------------------------------------------------------------------

    def refresh_pickers(self, model: str | None = None) -> None:
        agi = self._ctx.agi
        self.sessions = [
            {"id": s.id, "label": f"{s.title or s.id} · {s.agent} · {s.message_count} msgs"}
            for s in agi.sessions(limit=50).items
        ]
        models = [agi.config.default_model]
        from agi_jupyter.providers import catalog

        for info in catalog.models():
            settings = agi.config.providers.get(info.vendor)
            if settings is not None and settings.configured:
                models.append(f"{info.vendor}:{info.model}")
        if model:
            models.insert(0, model)
        self.models = list(dict.fromkeys(models))
        self.model = model or self.model or ""

    def _on_session_change(self, change: dict[str, Any]) -> None:
        session_id = change["new"]
        if not session_id:
            return
        with self._lock:
            messages = self._ctx.agi.history(session_id, view="full", lazy=False)
            self.transcript = history_entries(messages)
        session = self._ctx.agi.session(session_id)
        self.agent = session.agent
        if not self.model:
            self.model = f"{session.provider}:{session.model}"
        if not any(s["id"] == session_id for s in self.sessions):
            self.refresh_pickers(self.model)

    def new_session(self) -> str:
        session = self._ctx.new_session(agent=self.agent or None, model=self.model or None)
        self.refresh_pickers(self.model)
        self.session_id = session.id
        return session.id

    # --- front-end messages ----------------------------------------------------------------------

    def _on_front_end_message(self, widget: Any, content: Any, buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        try:
            if kind == "send":  # pasted images come as the message's buffers
                images = [bytes(b) for b in buffers or []]
                self.send_message(str(content.get("text", "")), images=images)
            elif kind == "stop":
                self.stop()
            elif kind == "new_session":
                self.new_session()
            elif kind == "refresh":
                self.refresh_pickers(self.model)
            elif kind == "approval":
                self.decide(
                    str(content.get("decision", "")),
                    tool_call_id=content.get("tool_call_id") or None,
                    message=content.get("message") or None,
                    run_id=content.get("run_id") or None,
                )
        except Exception as e:  # a widget handler must never raise into the kernel
            self.status = f"error: {getattr(e, 'message', None) or e}"

    def _diff_of(self, artifact: Any) -> str:
        """The patch of a ``file_diff`` / ``notebook_diff`` artifact (else "")."""
        if not isinstance(artifact, dict) or artifact.get("kind") not in DIFF_KINDS:
            return ""
        try:
            data = self._ctx.agi.artifact(str(artifact.get("id"))).data or {}
        except Exception:  # a widget must never fail over a by-product
            return ""
        return str(data.get("patch") or "")

    def send_message(self, text: str, *, images: Sequence[bytes] = ()) -> str | None:
        """Send ``text`` as the user (what the Send button does), with ``images`` attached
        (pasted into the box: ``app.attachments``); returns the run id."""
        text = text.strip()
        if not text:
            return None
        self._ctx.dispatcher.capture_loop()
        agi = self._ctx.agi
        self._ctx.prepare_notebook()
        mentions = written_mentions(agi, text, self._ctx.shell.user_ns)
        run = agi.submit(
            [TextPart(text=text), *mentions],
            session=self.session_id,
            agent=self.agent or None,
            model=self.model or None,
            execution_mode="kernel",
            images=images,
            **self._ctx.run_fields(),
        )
        with self._lock:
            entry: Entry = {"id": f"u-{run.id}", "role": "user", "text": text}
            self._append({**entry, "images": len(images)} if images else entry)
        self.running = run.id
        self._last_run_id = run.id
        self.status = "running"
        follower = threading.Thread(
            target=self._follow, args=(run.id,), name=f"agi-chat-{run.id}", daemon=True
        )
        self._followers[run.id] = follower
        follower.start()
        return run.id

    def decide(
        self,
        decision: str,
        *,
        tool_call_id: str | None = None,
        message: str | None = None,
        run_id: str | None = None,
        budget: dict[str, Any] | None = None,
    ) -> None:
        """Decide a waiting tool call (what the Approve / Deny / Always buttons do; default:
        every call the newest run waits on) — or the budget question it waits on (``budget``:
        the session's new limits); once nothing is left undecided the run resumes
        in this kernel and streams on here."""
        run_id = run_id or self._last_run_id
        if not run_id:
            return
        agi = self._ctx.agi
        stored = agi.run_events(run_id)
        after = stored[-1].seq if stored else 0
        self._ctx.dispatcher.capture_loop()
        options = {"tool_call_id": tool_call_id, "message": message, "budget": budget}
        decide_here(agi, run_id, decision, DecisionDoor.WIDGET, **options)
        if agi.run(run_id).status == "waiting_approval":
            return  # other calls of the run still wait
        self._parked.discard(run_id)  # its follower, if alive, streams it on
        following = self._followers.get(run_id)
        if following is not None and following.is_alive():
            return
        self.running = run_id
        self._last_run_id = run_id
        self.status = "running"
        follower = threading.Thread(
            target=self._follow, args=(run_id, after), name=f"agi-chat-{run_id}", daemon=True
        )
        self._followers[run_id] = follower
        follower.start()

    def stop(self) -> None:
        """Cancel the running answer (what the Stop button does), without blocking the kernel."""
        run_id = self.running
        if not run_id:
            return

        def cancel() -> None:
            from agi_jupyter.errors import RunTerminal

            # RunTerminal: the run ended meanwhile. CancelledError: the kernel's runtime was
            # closed while the cancel was on its way (the close stops the run itself).
            with contextlib.suppress(RunTerminal, concurrent.futures.CancelledError):
                self._ctx.agi.cancel(run_id)

        threading.Thread(target=cancel, name=f"agi-cancel-{run_id}", daemon=True).start()

    def wait(self, timeout: float | None = 60) -> RunResult | None:
        """Wait for the answers being streamed (for scripts, tests and notebooks)."""
        from agi_jupyter.kernel.agi_cell import cell_result
        from agi_jupyter.kernel.dispatch import join_with_dispatch

        for run_id, thread in list(self._followers.items()):
            join_with_dispatch(
                thread,
                self._ctx.dispatcher,
                timeout,
                settled=functools.partial(self._waits, run_id),
            )
        # The newest run, even when its follower already ended (and left ``_followers``).
        last = self._last_run_id
        return cell_result(self._ctx.agi, last, shown=True) if last else None

    def _waits(self, run_id: str) -> bool:
        """Whether the run waits for a person (its follower goes on only after a decision):
        its follower stopped at the question, and no decision (from any door) moved it on."""
        return run_id in self._parked and self._ctx.agi.run(run_id).status == "waiting_approval"

    def close(self) -> None:
        """Close the widget; its followers stop (also those waiting for a decision)."""
        self._closed.set()
        super().close()

    # --- following a run (daemon thread) ---------------------------------------------------------

    def _follow(self, run_id: str, after_seq: int = 0) -> None:
        """Follow the run until it ends, past its waits for a person: a decision taken in any
        door (the panel, a cell, the CLI) takes the buttons away and the run streams on here."""
        stream = _Stream(self, run_id)
        try:
            for event in follow_across_waits(self._ctx.agi, run_id, after_seq, self._closed):
                stream.apply(event)
        except Exception as e:
            with self._lock:
                self._append({"id": self._new_id("e"), "role": "error", "text": str(e)})
        finally:
            stream.flush()
            if self.running == run_id:
                self.running = ""
            self._followers.pop(run_id, None)

    def _new_id(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}-{self._counter}"

    def _append(self, entry: Entry) -> None:
        self.transcript = [*self.transcript, entry]

    def _update(self, entry_id: str, **changes: Any) -> None:
        self.transcript = [
            {**e, **changes} if e.get("id") == entry_id else e for e in self.transcript
        ]


class _Stream:
    """Folds one run's events into the widget: deltas as messages, the rest as transcript."""

    def __init__(self, widget: ChatWidget, run_id: str) -> None:
        self.w = widget
        self.run_id = run_id
        self.entry: str | None = None
        self.text = ""  # the open entry's text so far: kept if the run stops mid-answer
        self.buffer = ""
        self.last_flush = 0.0
        self.tokens = [0, 0, 0]  # in, out, of the input read from a prompt cache
        self.context: dict[str, Any] | None = None  # the last request's context gauge
        self.budgets: dict[str, dict[str, Any]] = {}  # the last ``budget`` event per scope
        self.meta: dict[str, Any] = {}
        self.error = ""
        self.unknown: set[str] = set()  # "usage", "cost_usd": an answer's meta did not know
        self.cost = 0.0  # of the answers whose cost is known
        self.stop: str | None = None  # why an answer stopped short (``amounts.stop_note``)
        self.last_entry: str | None = None  # the entry of the last answer's text
        self.waiting_entry: str | None = None  # the info entry of the last wait
        self.decisions: list[str] = []  # who decided the calls of the last wait

    def apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "output.text.delta":
            self._delta(str(event.get("delta", "")))
        elif kind == "output.text.done":
            self._text_done(str(event.get("text", "")))
        elif kind == "output.text.reset":
            self._reset()
        elif kind in ("iteration", "run.meta", "notice"):
            self._turn_event(event)
        elif kind in (
            "tool.call.started",
            "tool.call.arguments.done",
            "tool.call.output",
            "approval.requested",
            "approval.decided",
        ):
            self._tool(event)
        elif kind == "run.status" and event.get("status") == "waiting_approval":
            self._waiting()
        elif kind == "run.status":
            self._moved_on()
        elif kind in ("usage", "budget"):
            self._tally(event)
        elif kind == "message.completed":
            self._message(event.get("message") or {})
        elif kind == "error" and not event.get("retryable"):
            self.error = f"{event.get('code')}: {event.get('message')}"
        elif kind == "run.final":
            self._final(event)

    def _turn_event(self, event: dict[str, Any]) -> None:
        """``run.meta`` is kept for the footer; ``iteration`` ends the open entry; a
        ``notice`` is a line of its own in the transcript."""
        if event.get("type") == "run.meta":
            self.meta = event
            return
        self.close_entry()
        if event.get("type") == "notice":
            text = f"warning: {event.get('message')} [{event.get('code')}]"
            with self.w._lock:
                self.w._append({"id": self.w._new_id("i"), "role": "info", "text": text})

    def _tally(self, event: dict[str, Any]) -> None:
        """A ``usage`` event adds to the tokens; a ``budget`` event is its scope's last."""
        if event.get("type") == "usage":
            self.tokens[0] += int(event.get("input_tokens") or 0)
            self.tokens[1] += int(event.get("output_tokens") or 0)
            self.tokens[2] += int(event.get("cached_input_tokens") or 0)
            self.context = usage_gauge(event) or self.context
            self.cost += float(event.get("cost_usd") or 0.0)
        else:
            self.budgets[str(event.get("scope"))] = event

    def _text_done(self, text: str) -> None:
        self.flush()
        with self.w._lock:
            if self.entry is None:
                self._open_entry()
            assert self.entry is not None
            self.w._update(self.entry, text=text, streaming=False)
        self.last_entry, self.entry = self.entry, None

    def _message(self, message: dict[str, Any]) -> None:
        """A model answer: what its meta says is unknown (usage, cost) or why it stopped short
        (marked on its entry); a partial answer (the run ended mid-answer) is committed to the
        entry streamed so far, which would otherwise end with no text in the transcript."""
        meta = message.get("meta") or {}
        if message.get("role") != "assistant":
            return
        self.unknown.update(k for k in ("usage", "cost_usd") if k in meta and meta[k] is None)
        stop = stop_note(meta)
        if stop and self.last_entry is not None:
            with self.w._lock:
                self.w._update(self.last_entry, stop=stop)
            self.stop = stop
        if not meta.get("partial"):
            return
        self.flush()
        with self.w._lock:
            if self.entry is None:
                self._open_entry()
            assert self.entry is not None
            text = str(message.get("text") or "")
            self.w._update(self.entry, text=text, streaming=False, partial=True)
        self.entry = None

    def _reset(self) -> None:
        """The next attempt streams the unfinished turn again: the entry streamed so far is
        taken out of the transcript (its text is discarded, not the answer)."""
        self.buffer = self.text = ""
        if self.entry is not None:
            entry, self.entry = self.entry, None
            with self.w._lock:
                self.w.transcript = [e for e in self.w.transcript if e.get("id") != entry]

    def _open_entry(self) -> None:
        self.text = ""
        self.entry = self.w._new_id(f"a-{self.run_id}")
        self.w._append(
            {
                "id": self.entry,
                "role": "assistant",
                "text": "",
                "streaming": True,
                "run_id": self.run_id,
            }
        )

    def _delta(self, text: str) -> None:
        if self.entry is None:
            with self.w._lock:
                self._open_entry()
        self.buffer += text
        self.text += text
        if time.monotonic() - self.last_flush >= self.w._interval:
            self.flush()

    def close_entry(self) -> None:
        """Commit the open entry's streamed text (the answer stops without a ``done``)."""
        self.flush()
        if self.entry is not None:
            with self.w._lock:
                self.w._update(self.entry, text=self.text, streaming=False)
        self.entry = None

    def flush(self) -> None:
        if self.buffer and self.entry is not None:
            self.w.send({"type": "delta", "entry": self.entry, "text": self.buffer})
        self.buffer = ""
        self.last_flush = time.monotonic()

    def _tool(self, event: dict[str, Any]) -> None:
        self.close_entry()
        w = self.w
        call_id = str(event.get("tool_call_id"))
        kind = event.get("type")
        with w._lock:
            exists = any(e.get("id") == call_id for e in w.transcript)
            if not exists:
                w._append(_tool_entry(call_id, str(event.get("name", "")), None))
            if kind == "tool.call.arguments.done":
                w._update(call_id, arguments=_dump(event.get("arguments")))
            elif kind == "approval.requested":
                asking: dict[str, Any] = {"status": "waiting_approval", "run_id": self.run_id}
                if event.get("diff"):  # what it would change, shown like a done call's diff
                    asking["diff"] = str(event["diff"])
                w._update(call_id, **asking)
            elif kind == "approval.decided":  # decided anywhere: the buttons give way
                decided: dict[str, Any] = {"decided": decided_text(event)}
                if event.get("decision") != "deny":
                    decided["status"] = "running"  # a denial comes as its output
                w._update(call_id, **decided)
                self.decisions.append(f"{event.get('name')} {decided['decided']}")
                self._answered()
            elif kind == "tool.call.output":
                status = str(event.get("status") or ("completed" if event.get("ok") else "failed"))
                w._update(
                    call_id,
                    status=status,
                    output=str(event.get("output", "")),
                    ok=bool(event.get("ok")),
                    diff=w._diff_of(event.get("artifact")),
                )

    def _waiting(self) -> None:
        """The run stopped to wait for a decision (the buttons are on its tool entries)."""
        self.close_entry()
        w = self.w
        with w._lock:
            w.transcript = [
                {**e, "streaming": False} if e.get("streaming") else e for e in w.transcript
            ]
            text = f"waiting for your approval · {self.run_id}"
            asking = [b for b in self.budgets.values() if b.get("asking")]
            if asking:
                spent = "; ".join(describe(b) for b in asking)
                text = (
                    f"waiting for a larger budget ({spent}) · {self.run_id}: "
                    f"%agi approve {self.run_id} --max-tokens N [--max-usd X] or "
                    f"%agi deny {self.run_id}"
                )
            self.waiting_entry = w._new_id("i")
            self.decisions = []
            w._append({"id": self.waiting_entry, "role": "info", "text": text})
            w._parked.add(self.run_id)
        w.status = "waiting_approval"

    def _moved_on(self) -> None:
        """The run goes on after a wait: decided, wherever it was (``approval.decided``, which
        comes after this, names who decided each call)."""
        self.w._parked.discard(self.run_id)
        if self.waiting_entry is not None:
            self._answered()

    def _answered(self) -> None:
        """The entry that said the run waits says who answered instead."""
        w, entry = self.w, self.waiting_entry
        if entry is None:
            return
        answered = "; ".join(self.decisions) or "the question was answered"
        with w._lock:
            w._update(entry, text=f"{answered} · {self.run_id}")

    def _final(self, event: dict[str, Any]) -> None:
        self.close_entry()  # a stopped answer keeps what it said
        w = self.w
        run = event.get("run") or {}
        status = str(run.get("status", ""))
        model = f"{self.meta.get('provider', '')}:{self.meta.get('model', '')}"
        tokens = token_counts(*self.tokens)
        if "usage" in self.unknown:
            tokens = "usage unknown (the server sent none)"
        cost = f"cost {UNKNOWN}" if self.unknown else usd(self.cost)
        footer = f"{model} · {tokens} · {cost} · {self.run_id}"
        if self.stop:
            footer += f" · {self.stop}"
        gauge = context_gauge(self.context)
        if gauge:
            footer += f" · {gauge}"
        for budget in self.budgets.values():
            footer += f" · {describe(budget)}"
        if status != "succeeded":
            footer += f" · {status}"
        with w._lock:
            w.transcript = [
                {**e, "streaming": False} if e.get("streaming") else e for e in w.transcript
            ]
            if self.error and status != "cancelled":
                w._append({"id": w._new_id("e"), "role": "error", "text": self.error})
            w._append({"id": w._new_id("i"), "role": "info", "text": footer})
        w.status = status
        w.refresh_pickers(w.model)  # the session's message count changed


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1) if value is not None else ""


def _tool_entry(call_id: str, name: str, arguments: Any) -> Entry:
    return {
        "id": call_id,
        "role": "tool",
        "name": name,
        "arguments": _dump(arguments),
        "status": "running",
        "output": "",
        "ok": True,
        "diff": "",
    }


def history_entries(messages: list[Message]) -> list[Entry]:
    """Transcript entries for a session's stored messages (full view)."""
    entries: list[Entry] = []
    tools: dict[str, Entry] = {}
    for message in messages:
        first = len(entries)
        images = sum(isinstance(p, ImagePart) for p in message.parts)
        for index, part in enumerate(message.parts):
            if isinstance(part, TextPart) and message.role in ("user", "assistant") and part.text:
                entry_id = f"{message.id}-{index}"
                entries.append({"id": entry_id, "role": message.role, "text": part.text})
                if message.role == "assistant":
                    entries[-1].update(streaming=False, run_id=message.run_id or "")
                    if message.meta.get("partial"):
                        entries[-1]["partial"] = True
            elif isinstance(part, ToolCallPart):
                entry = _tool_entry(part.tool_call_id, part.name, part.arguments)
                tools[part.tool_call_id] = entry
                entries.append(entry)
            elif isinstance(part, ToolResultPart) and part.tool_call_id in tools:
                tools[part.tool_call_id].update(
                    status=part.status or ("failed" if part.is_error else "completed"),
                    output=part.output,
                    ok=not part.is_error,
                )
        if message.role == "user" and images and len(entries) > first:
            entries[first]["images"] = images  # attached to the message: shown as a count
    return entries


def chat(
    session: str | None = None, agent: str | None = None, model: str | None = None
) -> ChatWidget:
    """Open the chat widget in a notebook: on ``session``, else the notebook's session (or a new
    one with ``agent``/``model``)."""
    from IPython import get_ipython

    from agi_jupyter.errors import UsageError
    from agi_jupyter.kernel.context import context_for
    from agi_jupyter.kernel.warmup import ready

    shell = get_ipython()
    if shell is None:
        raise UsageError("agi_jupyter.chat() needs a notebook (an IPython kernel)")
    ctx = context_for(shell)
    ready(ctx)
    return ChatWidget(ctx, session=session, agent=agent, model=model)
