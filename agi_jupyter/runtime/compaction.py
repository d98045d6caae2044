"""Compaction: the model folds a session's older messages into a summary sent in their place.

When older turns no longer fit a request (``context.RequestContext.overflow``), the agent loop
asks ``Compactor.compact`` for a summary before its model call: the units to fold (all older
ones but the newest that fill half the budget, ``context.KEEP_AFTER_COMPACTION``, so the
following requests have room to grow and keep a stable, cacheable prefix) are rendered as a
transcript, with the previous summary first, and the session's own model writes the new
summary. It is stored as a ``Compaction`` record saying which messages it covers, with its
usage and cost (added to the session's, and to the run's); the history is never changed.
``agi compact`` / ``%agi compact`` / ``POST /sessions/{id}/compact`` fold everything before the
last turn on demand (``keep=0``).

A compaction that fails (a provider error, an empty summary) is reported by the caller (the
loop emits a ``notice`` and goes on with the plain window), never a failed run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agi_jupyter.errors import ProviderError, UsageError
from agi_jupyter.providers import base as pb
from agi_jupyter.providers.catalog import cost_usd, lookup
from agi_jupyter.records import (
    ChatMessage,
    Compaction,
    Message,
    RunFence,
    Session,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from agi_jupyter.runtime.context import CHARS_PER_TOKEN, ContextAssembler, ContextLimits, Unit

if TYPE_CHECKING:
    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.store import Store

COMPACTION_FAILED = "COMPACTION_FAILED"
SUMMARY_SYSTEM = (
    "You write the summary of the earlier part of a working session between a person and an "
    "AI agent, which will replace that part in the agent's context. Keep what the agent needs "
    "to go on: the person's goals and requests, decisions made, facts learned (file, variable "
    "and function names, numbers, results, errors), what was done and what is still open. Be "
    "concise and factual; write only the summary."
)
SUMMARY_MAX_TOKENS = 2048
TOOL_OUTPUT_CHARS = 600  # of each tool output in the transcript
TEXT_CHARS = 6000  # of each message's text in the transcript
ARGUMENT_CHARS = 300


@dataclass(frozen=True)
class CompactionOutcome:
    """A stored compaction and the usage of the model call that wrote it."""

    record: Compaction
    usage: pb.Usage | None
    cost_usd: float | None

    @property
    def tokens(self) -> tuple[int, int] | None:
        """(input, output) tokens of the call, None when its server sent no usage."""
        usage = self.usage
        return None if usage is None else (usage.input_tokens, usage.output_tokens)


class Compactor:
    """Makes and stores compactions with a session's model (one per ``AgentLoop``)."""

    def __init__(self, deps: RuntimeDeps) -> None:
        self.deps = deps

    async def compact(
        self,
        *,
        session_id: str,
        provider_name: str,
        model: str,
        assembler: ContextAssembler,
        history: list[Message],
        previous: Compaction | None,
        keep: float,
        run_id: str | None = None,
        fence: RunFence | None = None,
    ) -> CompactionOutcome | None:
        """Fold the older units of ``history`` (see the module's docstring) into a new
        compaction; None when there is nothing to fold. Raises ``ProviderError``."""
        units = assembler.to_fold(history, previous, keep=keep)
        if not units:
            return None
        budget = assembler.budget
        limit = None if budget is None else max(2000, budget - SUMMARY_MAX_TOKENS)
        transcript = render_transcript(previous, units, limit)
        provider = await self.deps.providers.aget(provider_name)
        summary, usage = await summarize(provider, model, transcript)
        cost = None if usage is None else cost_usd(provider_name, model, usage)
        count = sum(len(u.messages) for u in units) + (previous.message_count if previous else 0)
        store = self.deps.store

        def write() -> Compaction:  # (store thread)
            record = store.add_compaction(
                session_id,
                first_message_id=previous.first_message_id if previous else units[0].message_id,
                through_message_id=units[-1].message_id,
                message_count=count,
                summary=summary,
                run_id=run_id,
                provider=provider_name,
                model=model,
                input_tokens=None if usage is None else usage.input_tokens,
                output_tokens=None if usage is None else usage.output_tokens,
                cost_usd=cost,
            )
            if usage is not None:
                store.add_session_usage(
                    session_id,
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    cached_input_tokens=usage.cached_input_tokens,
                    cost_usd=cost or 0.0,
                    fence=fence,
                )
            return record

        return CompactionOutcome(await self.deps.stored(write), usage, cost)

    async def compact_session(self, session: Session) -> CompactionOutcome | None:
        """Compact ``session`` on demand (``Agi.compact``): everything before its last turn is
        folded with its model (None: nothing to fold)."""
        deps = self.deps
        provider, model = deps.config.resolve_model(
            f"{session.provider}:{session.model}" if session.provider else session.model
        )
        limits = ContextLimits.of(
            deps.config, provider, model, await known_window(deps, provider, model)
        )
        history, previous = await deps.stored(_history_of, deps.store, session.id)
        return await self.compact(
            session_id=session.id,
            provider_name=provider,
            model=model,
            assembler=ContextAssembler(limits),
            history=history,
            previous=previous,
            keep=0.0,
        )


def _history_of(store: Store, session_id: str) -> tuple[list[Message], Compaction | None]:
    """A session's messages and its compaction in use (store thread)."""
    return store.list_messages(session_id), store.latest_compaction(session_id)


async def known_window(deps: RuntimeDeps, provider: str, model: str) -> int | None:
    """The model's context window as its local server (``n_ctx``) or the catalog says (None:
    neither knows it)."""
    try:
        caps = await deps.providers.server_caps(provider, model)
    except UsageError:
        caps = None
    if caps is not None and caps.context_window:
        return caps.context_window
    info = lookup(provider, model)
    return info.context_window if info is not None else None


async def summarize(
    provider: pb.Provider, model: str, transcript: str
) -> tuple[str, pb.Usage | None]:
    """The summary the model writes of ``transcript``, and the usage of the call."""
    request = pb.ProviderRequest(
        model=model,
        system=SUMMARY_SYSTEM,
        messages=[ChatMessage(role="user", parts=[TextPart(text=transcript)])],
        max_output_tokens=SUMMARY_MAX_TOKENS,
    )
    chunks: list[str] = []
    usage: pb.Usage | None = None
    async for event in provider.stream(request):
        if isinstance(event, pb.TextDelta):
            chunks.append(event.text)
        elif isinstance(event, pb.Usage):
            usage = event
    summary = "".join(chunks).strip()
    if not summary:
        raise ProviderError(f"{provider.name}: the model wrote no summary")
    return summary, usage


def render_transcript(previous: Compaction | None, units: list[Unit], limit: int | None) -> str:
    """The messages to fold as a plain transcript, after the previous summary; at most
    ``limit`` tokens (the oldest lines go first)."""
    lines: list[str] = []
    for unit in units:
        for message in unit.messages:
            lines.extend(_lines(message))
    head = "Summarize this part of the session"
    if previous is not None:
        head += f", continuing the summary of what came before it:\n\n{previous.summary}\n"
    head += "\n\nThe part to summarize:\n"
    if limit is not None:
        room = limit * CHARS_PER_TOKEN - len(head)
        while lines and sum(len(line) + 1 for line in lines) > room:
            lines.pop(0)
    return head + "\n".join(lines)


def _lines(message: ChatMessage) -> list[str]:
    out: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            out.append(f"{message.role}: {_cut(part.text, TEXT_CHARS)}")
        elif isinstance(part, ToolCallPart):
            arguments = _cut(json.dumps(part.arguments, ensure_ascii=False), ARGUMENT_CHARS)
            out.append(f"assistant called {part.name}({arguments})")
        elif isinstance(part, ToolResultPart):
            state = "error" if part.is_error else "result"
            out.append(f"{part.name} {state}: {_cut(part.output, TOOL_OUTPUT_CHARS)}")
    return out


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]} [... {len(text) - limit} more]"
