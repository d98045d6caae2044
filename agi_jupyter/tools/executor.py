"""Run one tool call and turn whatever happens into a ``ToolOutcome`` the model can read.

``execute_tool_call`` never raises for a tool's problems: an unknown or forbidden tool is
``denied``; invalid arguments, exceptions and timeouts are ``failed`` with a message written
for the model. Only cancellation propagates (the runner cancels running tools on stop).

Outputs larger than ``config.artifact_threshold`` bytes are stored as ``tool_output``
artifacts and the model gets their head plus a note naming the artifact. Everything stored or
shown (arguments, outputs, data, errors) passes through the ``Redactor`` first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import ValidationError

from agi_jupyter.aio import complete
from agi_jupyter.errors import AgiError, ErrorCode, ToolError
from agi_jupyter.kinds import Verdict
from agi_jupyter.records import JSON, Artifact, utc_now
from agi_jupyter.tools.base import (
    AnyTool,
    ArtifactDraft,
    Emit,
    ImageDraft,
    ToolContext,
    ToolResult,
)
from agi_jupyter.tools.policy import ToolPolicy
from agi_jupyter.tools.redact import Redactor, StreamRedactor
from agi_jupyter.tools.registry import ToolRegistry, is_allowed

log = logging.getLogger(__name__)

OutcomeStatus = Literal["completed", "failed", "denied"]
MAX_HEAD_BYTES = 16 * 1024


@dataclass(kw_only=True)
class ToolOutcome:
    """The finished call: ``output`` is what the model sees, ``result`` goes to
    ``tool_calls.result``, ``arguments`` to ``tool_calls.args`` (both redacted)."""

    tool_call_id: str
    name: str
    status: OutcomeStatus
    ok: bool
    output: str
    result: JSON
    arguments: JSON
    artifact: Artifact | None = None
    images: list[Artifact] = field(default_factory=list)
    """The images the call showed, stored (kind ``image``)."""
    error: JSON | None = None
    started_at: str
    finished_at: str

    @property
    def is_error(self) -> bool:
        return not self.ok


@dataclass
class _Failure:
    status: OutcomeStatus
    code: str
    message: str


async def execute_tool_call(
    registry: ToolRegistry,
    *,
    name: str,
    arguments: Mapping[str, Any],
    raw_arguments_error: str | None = None,
    allowed: Collection[str],
    ctx: ToolContext,
    timeout: float,  # noqa: ASYNC109 - a per-call deadline, applied with asyncio.timeout
    redactor: Redactor | None = None,
    policy: ToolPolicy | None = None,
    approved: bool = False,
    record: Callable[[ToolOutcome], Awaitable[None]] | None = None,
) -> ToolOutcome:
    """Validate, run and record one call (see the module docstring). ``policy``: the
    session's tool policy (a denied tool is refused; a tool that asks is refused unless a
    person ``approved`` this call: callers that can wait for a decision ask before).
    ``record``: stores the outcome; once the tool has run, making its outcome and recording
    it is one piece a cancellation does not cut in half (a call that ran is never left
    unrecorded; the cancellation is delivered after)."""
    redactor = redactor or Redactor()
    started_at = utc_now()
    tool = registry.get(name)
    outcome: ToolResult | _Failure
    refusal = _refusal(registry, tool, name, allowed, ctx, policy, approved)
    if refusal is not None:
        outcome = _Failure("denied", ErrorCode.TOOL_DENIED, refusal)
    elif raw_arguments_error is not None:
        outcome = _Failure(
            "failed",
            ErrorCode.INVALID_ARGUMENTS,
            f"the arguments for {name} were not usable ({raw_arguments_error}); "
            "call the tool again with a JSON object matching its schema",
        )
    else:
        assert tool is not None
        live = _LiveOutput(ctx.emit, redactor)
        try:
            outcome = await _run(tool, arguments, live.context(ctx), timeout)
        finally:
            live.flush()
    finishing = _finish(
        name=name,
        arguments=arguments,
        outcome=outcome,
        ctx=ctx,
        redactor=redactor,
        started_at=started_at,
    )
    if record is None:
        return await finishing

    async def finish_and_record() -> ToolOutcome:
        finished = await finishing
        await record(finished)
        return finished

    return await complete(finish_and_record())


class _LiveOutput:
    """The call's ``emit``, redacted per channel as a stream: a tail that could be the start of
    a secret is held back until the next chunk shows it is not (or the call ends), so a secret
    split across two chunks never goes out in pieces."""

    def __init__(self, emit: Emit, redactor: Redactor) -> None:
        self._emit = emit
        self._redactor = redactor
        self._streams: dict[str, StreamRedactor[str]] = {}

    def context(self, ctx: ToolContext) -> ToolContext:
        if not self._redactor:
            return ctx
        return replace(ctx, emit=self._redacted_emit, redactor=self._redactor)

    def _redacted_emit(self, channel: str, chunk: str) -> None:
        stream = self._streams.get(channel)
        if stream is None:
            stream = self._streams[channel] = self._redactor.stream()
        safe = stream.feed(chunk)
        if safe:
            self._emit(channel, safe)

    def flush(self) -> None:
        for channel, stream in self._streams.items():
            rest = stream.flush()
            if rest:
                self._emit(channel, rest)


def _refusal(
    registry: ToolRegistry,
    tool: AnyTool | None,
    name: str,
    allowed: Collection[str],
    ctx: ToolContext,
    policy: ToolPolicy | None = None,
    approved: bool = False,
) -> str | None:
    agent = f"agent {ctx.agent!r}" if ctx.agent else "this agent"
    if tool is None or not is_allowed(name, allowed):
        tools = registry.offered(allowed, ctx.features, policy)
        offered = ", ".join(t.name for t in tools) or "none"
        reason = "does not exist" if tool is None else f"is not available to {agent}"
        return f"tool {name!r} {reason}; the tools you can call are: {offered}"
    missing = sorted(tool.requires - ctx.features)
    if missing:
        hint = " (it runs only where a notebook kernel is attached)" if "kernel" in missing else ""
        return (
            f"tool {name!r} needs {', '.join(missing)}, which this session does not provide{hint}"
        )
    if ctx.read_only and not tool.read_only:
        return f"tool {name!r} can change things, and {agent} may only read"
    if policy is not None:
        verdict = policy.decide(name, tool.trait, tool.default_verdict)
        if verdict == Verdict.DENY:
            return policy.denied_reason(name)
        if verdict == Verdict.ASK and not approved:
            return policy.ask_reason(name)
    return None


async def _run(
    tool: AnyTool, arguments: Mapping[str, Any], ctx: ToolContext, default_deadline: float
) -> ToolResult | _Failure:
    try:
        args = tool.validate(arguments)
    except ValidationError as e:
        return _Failure("failed", ErrorCode.INVALID_ARGUMENTS, _summarize_validation(tool.name, e))
    except ToolError as e:
        return _Failure("failed", ErrorCode.INVALID_ARGUMENTS, e.message)
    deadline = tool.call_timeout(args, default_deadline)
    scope = asyncio.timeout(deadline)
    try:
        async with scope:
            raw = await tool.execute(args, ctx)
    except TimeoutError as e:
        if scope.expired():
            return _Failure(
                "failed",
                ErrorCode.TOOL_TIMEOUT,
                f"tool {tool.name} timed out after {_seconds(deadline)} s and was stopped",
            )
        return _exception_failure(tool.name, e)
    except ToolError as e:
        return _Failure("failed", e.code, e.message)
    except Exception as e:
        return _exception_failure(tool.name, e)
    if isinstance(raw, str):
        return ToolResult(output=raw)
    if isinstance(raw, ToolResult):
        return raw
    return _Failure(  # type: ignore[unreachable]
        "failed",
        ErrorCode.TOOL_ERROR,
        f"tool {tool.name} returned {type(raw).__name__}, not a result",
    )


def _exception_failure(name: str, error: Exception) -> _Failure:
    log.debug("tool %s raised", name, exc_info=error)
    text = str(error)
    message = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return _Failure("failed", ErrorCode.TOOL_ERROR, message)


def _seconds(value: float) -> str:
    return f"{value:g}"


def _summarize_validation(name: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in item["loc"]) or "(arguments)"
        problems.append(f"{where}: {item['msg']}")
    return f"invalid arguments for {name}: " + "; ".join(problems)


async def _finish(
    *,
    name: str,
    arguments: Mapping[str, Any],
    outcome: ToolResult | _Failure,
    ctx: ToolContext,
    redactor: Redactor,
    started_at: str,
) -> ToolOutcome:
    if isinstance(outcome, _Failure):
        message = redactor.redact_text(outcome.message)
        error: JSON | None = {"code": outcome.code, "message": message}
        status: OutcomeStatus = outcome.status
        output, ok, data, draft = message, False, None, None
        images: list[ImageDraft] = []
    else:
        output, ok = redactor.redact_text(outcome.output), outcome.ok
        data = redactor.redact_json(outcome.data)
        draft, images = outcome.artifact, outcome.images
        status = "completed" if ok else "failed"
        error = None if ok else {"code": ErrorCode.TOOL_ERROR, "message": _first_line(output)}
    artifact = await asyncio.to_thread(_persist_draft, draft, ctx, redactor) if draft else None
    output, spilled = await asyncio.to_thread(_spill_if_large, name, output, ctx)
    shown = await asyncio.to_thread(_persist_images, images, ctx) if images else []
    result: JSON = {"ok": ok, "output": output}
    if shown:
        result["image_artifact_ids"] = [a.id for a in shown]
    if data is not None:
        result["data"] = data
    if artifact is not None:
        result["artifact_id"] = artifact.id
    if spilled is not None:
        result["output_artifact_id"] = spilled.id
    if error is not None:
        result["error"] = error
    return ToolOutcome(
        tool_call_id=ctx.tool_call_id,
        name=name,
        status=status,
        ok=ok,
        output=output,
        result=result,
        arguments=redactor.redact_json(dict(arguments)),
        artifact=artifact or spilled,
        images=shown,
        error=error,
        started_at=started_at,
        finished_at=utc_now(),
    )


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "the tool reported a failure"
    return line[:500]


def _persist_draft(draft: ArtifactDraft, ctx: ToolContext, redactor: Redactor) -> Artifact | None:
    try:
        return ctx.store.create_artifact(
            draft.kind,
            run_id=ctx.run_id,
            session_id=ctx.session_id,
            title=draft.title,
            mime=draft.mime,
            data=redactor.redact_json(draft.data),
            text=redactor.redact_text(draft.text) if draft.text is not None else None,
        )
    except Exception as e:  # storing a by-product must not fail the call
        log.warning("could not store the %s artifact of a tool call: %s", draft.kind, e)
        return None


def _persist_images(images: list[ImageDraft], ctx: ToolContext) -> list[Artifact]:
    stored = []
    for image in images:
        try:
            stored.append(
                ctx.store.create_artifact(
                    "image",
                    run_id=ctx.run_id,
                    session_id=ctx.session_id,
                    title=image.title,
                    mime=image.mime,
                    content=image.content,
                )
            )
        except Exception as e:  # an image the model cannot see must not fail the call
            log.warning("could not store an image of a tool call: %s", e)
    return stored


def _spill_if_large(name: str, output: str, ctx: ToolContext) -> tuple[str, Artifact | None]:
    threshold = ctx.config.artifact_threshold
    encoded = output.encode("utf-8")
    if len(encoded) <= threshold:
        return output, None
    head_size = min(MAX_HEAD_BYTES, threshold // 2)
    head = encoded[:head_size].decode("utf-8", errors="ignore")
    newline = head.rfind("\n")
    if newline > head_size // 2:
        head = head[: newline + 1]
    try:
        artifact = ctx.store.create_artifact(
            "tool_output",
            run_id=ctx.run_id,
            session_id=ctx.session_id,
            title=f"{name} output",
            mime="text/plain",
            text=output,
        )
    except Exception as e:
        log.warning("could not store the large output of %s: %s", name, e)
        note = f"[output truncated: {len(encoded)} bytes, only the first {len(head)} shown]"
        return f"{head}\n{note}", None
    note = (
        f"[output truncated: showing the first {len(head.encode())} of {len(encoded)} bytes; "
        f"the full output is stored as artifact {artifact.id} (kind tool_output)]"
    )
    return f"{head}\n{note}", artifact


async def preview_tool_call(
    registry: ToolRegistry, name: str, arguments: JSON, ctx: ToolContext, redactor: Redactor
) -> str | None:
    """The diff a waiting call would make (``Tool.preview``), redacted; None when the tool
    changes nothing it can show or the call could not run as given (its arguments do not
    validate, the cell or file is not there: the call itself will say so)."""
    tool = registry.get(name)
    if tool is None:
        return None
    try:
        diff = await tool.preview(tool.validate(arguments), ctx)
    except (ValidationError, AgiError, OSError, ValueError):
        return None
    return None if diff is None else redactor.redact_text(diff)
