"""How a run looks in a notebook: a view folded from its events, rendered as Markdown or text.

``RunView.apply(event)`` folds the section-4 events of one run into text segments and tool
blocks in order, plus the footer facts (model, tokens, cost, run id). ``to_markdown`` renders
tool calls as collapsible ``<details>`` blocks (name, arguments, status, output or error, and a
diff view for ``file_diff`` and ``notebook_diff`` artifacts); ``to_text`` is the plain form for
terminals and for ``text/plain``. Showing a view while the run streams is ``live.py``'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agi_jupyter.events import HOSTED_TOOL_TYPE
from agi_jupyter.kinds import SdkName
from agi_jupyter.records import decided_text

MAX_BLOCK_CHARS = 4_000
DIFF_KINDS = ("file_diff", "notebook_diff")  # as tools.diffs (not imported: %load_ext stays light)

ArtifactLoader = Callable[[str], str | None]


@dataclass
class TextSegment:
    text: str = ""


@dataclass
class ToolBlock:
    tool_call_id: str
    name: str
    arguments: dict[str, Any] | None = None
    status: str = "running"
    ok: bool | None = None
    output: str | None = None
    live: str = ""
    artifact: dict[str, Any] | None = None
    diff: str | None = None
    decided: str = ""  # who decided it, once it waited ("approved in the panel by alice")
    by: str = ""  # who ran it when not us ("run by the provider": a hosted tool)


STOP_KEYS = ("truncated", "context_full", "context_window", "context_tokens")


@dataclass
class RunView:
    """Everything shown for one run, folded from its events."""

    run_id: str = ""
    session_id: str = ""
    agent: str = ""
    provider: str = ""
    model: str = ""
    status: str = "queued"
    segments: list[TextSegment | ToolBlock] = field(default_factory=list)
    reasoning: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0  # of the input tokens, read from a prompt cache
    context: dict[str, Any] | None = None  # the last request's context gauge
    cost_usd: float | None = None
    error: str | None = None
    replayed_from: str | None = None
    partial: bool = False  # the answer was cut short (the run was cancelled or failed)
    usage_unknown: bool = False  # a model turn's server sent no usage (unknown, not zero)
    cost_unknown: bool = False  # a model turn's cost is unknown (no catalog price)
    # Why a model turn stopped short: ``truncated`` (output token limit) or ``context_full``
    # with its tokens, from the answer's stored meta (``amounts.stop_note``).
    stop: dict[str, Any] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)  # ``notice`` events (once per session)
    load_artifact: ArtifactLoader | None = None
    budgets: dict[str, dict[str, Any]] = field(default_factory=dict)  # last event per scope
    seq: int = 0  # the last event's (a follower that goes on later starts after it)
    _turn_text: TextSegment | None = None

    @property
    def text(self) -> str:
        """The answer: the text of the last turn that had text."""
        texts = [s.text for s in self.segments if isinstance(s, TextSegment) and s.text]
        return texts[-1] if texts else ""

    @property
    def recorded_run_id(self) -> str:
        """The run whose answer this is: the original recording of a replayed run, so that a
        replay shows exactly what the first execution showed."""
        return self.replayed_from or self.run_id

    @property
    def done(self) -> bool:
        return self.status in ("succeeded", "failed", "cancelled")

    def apply(self, event: dict[str, Any]) -> None:
        handler = _HANDLERS.get(str(event.get("type")))
        self.run_id = self.run_id or str(event.get("run_id", ""))
        self.seq = max(self.seq, int(event.get("seq") or 0))
        if handler is not None:
            handler(self, event)

    # --- event handlers ------------------------------------------------------------------------

    def _meta(self, e: dict[str, Any]) -> None:
        self.session_id = str(e.get("session_id", ""))
        self.agent, self.provider, self.model = (
            str(e.get("agent", "")),
            str(e.get("provider", "")),
            str(e.get("model", "")),
        )

    def _status(self, e: dict[str, Any]) -> None:
        self.status = str(e.get("status", self.status))

    def _iteration(self, e: dict[str, Any]) -> None:
        self._turn_text = None

    def _text_delta(self, e: dict[str, Any]) -> None:
        self._current_text().text += str(e.get("delta", ""))

    def _text_done(self, e: dict[str, Any]) -> None:
        self._current_text().text = str(e.get("text", ""))

    def _text_reset(self, e: dict[str, Any]) -> None:
        """The next attempt streams the unfinished turn again: its text so far goes."""
        text = int(e.get("discarded_chars") or 0)
        reasoning = int(e.get("discarded_reasoning_chars") or 0)
        if text and self._turn_text is not None:
            self._turn_text.text = self._turn_text.text[:-text]
        if reasoning:
            self.reasoning = self.reasoning[:-reasoning]

    def _current_text(self) -> TextSegment:
        if self._turn_text is None:
            self._turn_text = TextSegment()
            self.segments.append(self._turn_text)
        return self._turn_text

    def _reasoning(self, e: dict[str, Any]) -> None:
        self.reasoning += str(e.get("delta", ""))

    def _reasoning_done(self, e: dict[str, Any]) -> None:
        self.reasoning = str(e.get("text", ""))

    def _tool_started(self, e: dict[str, Any]) -> None:
        by = "run by the provider" if e.get("tool_type") == HOSTED_TOOL_TYPE else ""
        self.segments.append(ToolBlock(str(e.get("tool_call_id")), str(e.get("name")), by=by))
        self._turn_text = None

    def _tool(self, tool_call_id: Any) -> ToolBlock | None:
        for segment in reversed(self.segments):
            if isinstance(segment, ToolBlock) and segment.tool_call_id == tool_call_id:
                return segment
        return None

    def _tool_args(self, e: dict[str, Any]) -> None:
        block = self._tool(e.get("tool_call_id"))
        if block is not None:
            block.arguments = dict(e.get("arguments") or {})

    def _tool_delta(self, e: dict[str, Any]) -> None:
        block = self._tool(e.get("tool_call_id"))
        if block is not None:
            block.live += str(e.get("chunk", ""))

    def _tool_output(self, e: dict[str, Any]) -> None:
        block = self._tool(e.get("tool_call_id"))
        if block is None:
            block = ToolBlock(str(e.get("tool_call_id")), str(e.get("name")))
            self.segments.append(block)
        block.status = str(e.get("status") or ("completed" if e.get("ok") else "failed"))
        block.ok = bool(e.get("ok"))
        block.output = str(e.get("output", ""))
        block.artifact = e.get("artifact") or None
        if block.artifact and block.artifact.get("kind") in DIFF_KINDS and self.load_artifact:
            block.diff = self.load_artifact(str(block.artifact.get("id")))

    def _message(self, e: dict[str, Any]) -> None:
        """A partial answer stored when the run ended mid-answer: its text is what was shown
        (and all there is to show when deltas were not stored)."""
        message = e.get("message") or {}
        meta = message.get("meta") or {}
        if message.get("role") != "assistant":
            return
        if meta.get("sdk") == SdkName.NATIVE and "usage" in meta and meta["usage"] is None:
            self.usage_unknown = True
        if meta.get("truncated") and not self.stop.get("context_full"):
            self.stop = {k: meta.get(k) for k in STOP_KEYS if k in meta}
        if not meta.get("partial"):
            return
        self.partial = True
        text = str(message.get("text") or "")
        if text and len(text) >= len(self._current_text().text):
            self._current_text().text = text

    def _usage(self, e: dict[str, Any]) -> None:
        self.input_tokens += int(e.get("input_tokens") or 0)
        self.output_tokens += int(e.get("output_tokens") or 0)
        self.cached_input_tokens += int(e.get("cached_input_tokens") or 0)
        from agi_jupyter.amounts import usage_gauge

        self.context = usage_gauge(e) or self.context
        cost = e.get("cost_usd")
        if cost is None:
            self.cost_unknown = True  # a model without a catalog price: never added as 0
        else:
            self.cost_usd = (self.cost_usd or 0.0) + float(cost)

    def _budget(self, e: dict[str, Any]) -> None:
        self.budgets[str(e.get("scope"))] = e

    def _notice(self, e: dict[str, Any]) -> None:
        self.notices.append(f"{e.get('message')} [{e.get('code')}]")

    def _error(self, e: dict[str, Any]) -> None:
        if not e.get("retryable"):
            self.error = f"{e.get('code')}: {e.get('message')}"

    def _approval_requested(self, e: dict[str, Any]) -> None:
        block = self._tool(e.get("tool_call_id"))
        if block is None:
            block = ToolBlock(str(e.get("tool_call_id")), str(e.get("name")))
            self.segments.append(block)
        block.arguments = e.get("arguments") or block.arguments
        block.diff = e.get("diff") or block.diff  # what it would change: shown instead
        block.status = "waiting_approval"

    def _approval_decided(self, e: dict[str, Any]) -> None:
        block = self._tool(e.get("tool_call_id"))
        if block is None:
            return
        block.decided = decided_text(e)
        if e.get("decision") != "deny":
            block.status = "running"  # its output follows; a denial comes as its output

    @property
    def waiting(self) -> list[ToolBlock]:
        """The tool calls waiting for a person's decision."""
        return [
            s for s in self.segments if isinstance(s, ToolBlock) and s.status == "waiting_approval"
        ]

    def _final(self, e: dict[str, Any]) -> None:
        run = e.get("run") or {}
        self.status = str(run.get("status", self.status))
        self.replayed_from = run.get("replayed_from") or self.replayed_from
        if run.get("error") and not self.error:
            error = run["error"]
            self.error = f"{error.get('code')}: {error.get('message')}"

    # --- rendering -----------------------------------------------------------------------------

    def footer(self) -> str:
        if not self.run_id:
            return STARTING
        from agi_jupyter.amounts import UNKNOWN, context_gauge, stop_note, token_counts, usd

        model = f"{self.provider}:{self.model}" if self.provider else self.model
        unknown = self.cost_usd is None or self.cost_unknown or self.usage_unknown
        cost = f"cost {UNKNOWN}" if unknown else usd(self.cost_usd)
        tokens = token_counts(self.input_tokens, self.output_tokens, self.cached_input_tokens)
        if self.usage_unknown:
            tokens = "usage unknown (the server sent none)"
        parts = [model or "model ?", self.agent or "agent ?", tokens, cost, self.recorded_run_id]
        if self.budgets:
            from agi_jupyter.budget import describe  # pydantic: not on %load_ext's path

            parts.extend(describe(status) for status in self.budgets.values())
        if not self.done:
            parts.append(_LIVE_STATUS.get(self.status, self.status + "…"))
        elif self.status != "succeeded":
            parts.append(self.status)
        if self.partial:
            parts.append("partial answer")
        stop = stop_note(self.stop)
        if stop:
            parts.append(stop)
        gauge = context_gauge(self.context)
        if gauge:
            parts.append(gauge)
        return " · ".join(parts)

    def to_markdown(self, *, status_only: bool = False) -> str:
        if status_only:
            return f"<sub>{_escape_html(self.footer())}</sub>"
        chunks: list[str] = []
        if self.reasoning:
            chunks.append(_details("thinking", _fenced(self.reasoning, "")))
        for segment in self.segments:
            if isinstance(segment, TextSegment):
                if segment.text:
                    chunks.append(segment.text)
            else:
                chunks.append(_tool_markdown(segment))
        chunks.extend(f"**Warning** — {_escape_md(n)}" for n in self.notices)
        if self.error:
            chunks.append(f"**Error** — {_escape_md(self.error)}")
        if self.status == "waiting_approval":
            chunks.append(approval_hint(self, markdown=True))
        chunks.append(f"<sub>{_escape_html(self.footer())}</sub>")
        return "\n\n".join(chunks)

    def to_text(self) -> str:
        chunks: list[str] = []
        for segment in self.segments:
            if isinstance(segment, TextSegment):
                if segment.text:
                    chunks.append(segment.text)
            else:
                chunks.append(tool_text(segment))
        chunks.extend(f"Warning — {n}" for n in self.notices)
        if self.error:
            chunks.append(f"Error — {self.error}")
        if self.status == "waiting_approval":
            chunks.append(approval_hint(self))
        chunks.append(f"[{self.footer()}]")
        return "\n\n".join(chunks)


_HANDLERS: dict[str, Callable[[RunView, dict[str, Any]], None]] = {
    "run.meta": RunView._meta,
    "run.status": RunView._status,
    "iteration": RunView._iteration,
    "output.text.delta": RunView._text_delta,
    "output.text.done": RunView._text_done,
    "output.text.reset": RunView._text_reset,
    "reasoning.delta": RunView._reasoning,
    "reasoning.done": RunView._reasoning_done,
    "tool.call.started": RunView._tool_started,
    "tool.call.arguments.done": RunView._tool_args,
    "tool.call.delta": RunView._tool_delta,
    "tool.call.output": RunView._tool_output,
    "approval.requested": RunView._approval_requested,
    "approval.decided": RunView._approval_decided,
    "usage": RunView._usage,
    "budget": RunView._budget,
    "message.completed": RunView._message,
    "notice": RunView._notice,
    "error": RunView._error,
    "run.final": RunView._final,
}

# Text symbols every common font has (emoji render as empty boxes without an emoji font).
_ICONS = {
    "running": "…",
    "completed": "✓",
    "failed": "✗",
    "denied": "⊘",
    "skipped": "↷",
    "cancelled": "■",
    "waiting_approval": "?",
}
STARTING = "agi · starting…"
_LIVE_STATUS = {
    "queued": "starting…",
    "running": "running…",
    "waiting_approval": "waiting for your approval",
    "waiting_execution": "waiting for its cells to finish",
}


def approval_hint(view: RunView, *, markdown: bool = False) -> str:
    """How to decide the calls the run waits on (the buttons do the same), or the budget
    question it waits on (a ``budget`` event with ``asking``)."""
    tick = "`" if markdown else ""
    asking = [b for b in view.budgets.values() if b.get("asking")]
    if asking and not view.waiting:
        from agi_jupyter.budget import describe

        spent = "; ".join(describe(b) for b in asking)
        reason = str(asking[0].get("reason") or "")
        raise_it = f"{tick}%agi approve {view.run_id} --max-tokens N --max-usd X{tick}"
        deny = f"{tick}%agi deny {view.run_id}{tick}"
        text = (
            f"Waiting for a larger budget ({spent}; {reason}): {raise_it} (either limit) or "
            f"{deny}. The run waits, also across kernel restarts, until you decide."
        )
        return text
    names = ", ".join(b.name for b in view.waiting) or "a tool call"
    approve = f"{tick}%agi approve {view.run_id}{tick}"
    deny = f"{tick}%agi deny {view.run_id} -m 'why'{tick}"
    if markdown:
        names = _escape_md(names)
    return (
        f"Waiting for your approval of {names}: {approve} (--always: for the rest of the "
        f"session) or {deny}. The run waits, also across kernel restarts, until you decide."
    )


def _clip(text: str, limit: int = MAX_BLOCK_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more)"


def _fenced(text: str, lang: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{lang}\n{_clip(text)}\n{fence}"


def _escape_html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _escape_md(text: str) -> str:
    return _escape_html(text).replace("*", "\\*").replace("_", "\\_")


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def _tool_markdown(block: ToolBlock) -> str:
    icon = _ICONS.get(block.status, "•")
    summary = f"{icon} <code>{_escape_html(block.name)}</code> {block.status}"
    for said in (block.by, block.decided):
        if said:
            summary += f" · {_escape_html(said)}"
    body: list[str] = []
    asking_with_diff = block.status == "waiting_approval" and bool(block.diff)
    if block.arguments is not None and not asking_with_diff:
        code = block.arguments.get("code") if block.name == "python" else None
        if isinstance(code, str):
            body.append(_fenced(code, "python"))
        else:
            body.append(_fenced(json.dumps(block.arguments, indent=2, ensure_ascii=False), "json"))
    if block.diff:
        body.append(_fenced(block.diff, "diff"))
    if block.output is not None:
        label = "output" if block.ok else "error"
        body.append(f"**{label}**\n\n{_fenced(block.output, '')}")
    elif block.live:
        body.append(_fenced(block.live, ""))
    return _details(summary, "\n\n".join(body) or "…")


def tool_text(block: ToolBlock) -> str:
    shown = block.arguments is not None and not (block.status == "waiting_approval" and block.diff)
    args = json.dumps(block.arguments, ensure_ascii=False) if shown else ""
    decided = "".join(f" · {said}" for said in (block.by, block.decided) if said)
    lines = [f"[tool {block.name} {block.status}{decided}] {args}".rstrip()]
    if block.diff:
        lines.append(_clip(block.diff))
    if block.output is not None:
        lines.extend("  " + line for line in _clip(block.output).splitlines())
    return "\n".join(lines)
