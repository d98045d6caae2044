"""A ``Store`` whose writes pass through the project's ``Redactor`` first.

``Agi`` hands this wrapper to the whole runtime, so nothing reaches the database or the artifact
files with a known secret in it, whoever writes: messages (user prompts too: what is stored is
what is later sent to a provider), runs (their state, in its JSON form, and errors), tool
calls, artifacts, sessions, tasks, capabilities and compactions. Run events are redacted by
``RunEmitter`` (before they are also published), webhook payloads are stored as received (they
come from the provider and carry no secret of ours). Reads and everything else go to the
wrapped store unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from agi_jupyter import run_state_codec
from agi_jupyter.records import (
    JSON,
    Artifact,
    Capability,
    Compaction,
    ExecutionStatus,
    KernelExecution,
    Message,
    MessageStatus,
    Part,
    Role,
    Run,
    RunFence,
    Session,
    Task,
    ToolCall,
    ToolCallStatus,
    part_from_dict,
    part_to_dict,
)
from agi_jupyter.run_state import LoopState

if TYPE_CHECKING:
    from agi_jupyter.store import ArtifactWriter, Store
    from agi_jupyter.tools.redact import Redactor


class RedactedStore:
    def __init__(self, inner: Store, redactor: Redactor) -> None:
        self.inner = inner
        self.redactor = redactor

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __enter__(self) -> RedactedStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.inner.close()

    def end_execution(
        self,
        id: str,
        *,
        status: ExecutionStatus,
        execution_count: int | None = None,
        summary: str | None = None,
    ) -> KernelExecution:
        """An execution's end, its output summary redacted."""
        text = None if summary is None else self.redactor.redact_text(summary)
        return self.inner.end_execution(
            id, status=status, execution_count=execution_count, summary=text
        )

    def _json(self, value: Any) -> Any:
        return self.redactor.redact_json(value)

    def _run_fields(self, fields: dict[str, Any]) -> dict[str, Any]:
        """A run's fields redacted, its state through its JSON form (``run_state_codec``)."""
        out: dict[str, Any] = self._json(fields)
        state = fields.get("loop_state")
        if isinstance(state, LoopState):
            out["loop_state"] = run_state_codec.redacted(state, self.redactor.redact_json)
        return out

    def _parts(self, parts: Sequence[Part]) -> list[Part]:
        return [part_from_dict(self._json(part_to_dict(p))) for p in parts]

    # --- writes --------------------------------------------------------------------------------

    def create_session(self, **fields: Any) -> Session:
        return self.inner.create_session(**self._json(fields))

    def update_session(self, id: str, /, **changes: Any) -> Session:
        return self.inner.update_session(id, **self._json(changes))

    def add_message(
        self,
        session_id: str,
        role: Role,
        parts: Sequence[Part],
        *,
        run_id: str | None = None,
        status: MessageStatus = "complete",
        meta: JSON | None = None,
        fence: RunFence | None = None,
    ) -> Message:
        return self.inner.add_message(
            session_id,
            role,
            self._parts(parts),
            run_id=run_id,
            status=status,
            meta=self._json(meta),
            fence=fence,
        )

    def update_message(
        self,
        id: str,
        *,
        parts: Sequence[Part] | None = None,
        status: MessageStatus | None = None,
        meta: JSON | None = None,
        fence: RunFence | None = None,
    ) -> Message:
        redacted = None if parts is None else self._parts(parts)
        return self.inner.update_message(
            id, parts=redacted, status=status, meta=self._json(meta), fence=fence
        )

    def create_run(self, session_id: str, /, **fields: Any) -> Run:
        return self.inner.create_run(session_id, **self._run_fields(fields))

    def update_run(self, id: str, /, *, fence: RunFence | None = None, **changes: Any) -> Run:
        return self.inner.update_run(id, fence=fence, **self._run_fields(changes))

    def update_run_if(self, id: str, expected_version: int, /, **changes: Any) -> bool:
        return self.inner.update_run_if(id, expected_version, **self._run_fields(changes))

    def create_tool_call(
        self,
        run_id: str,
        tool_call_id: str,
        name: str,
        args: JSON,
        *,
        message_id: str | None = None,
        status: ToolCallStatus = "pending",
        fence: RunFence | None = None,
    ) -> ToolCall:
        return self.inner.create_tool_call(
            run_id,
            tool_call_id,
            name,
            self._json(args),
            message_id=message_id,
            status=status,
            fence=fence,
        )

    def update_tool_call(
        self, id: str, /, *, fence: RunFence | None = None, **changes: Any
    ) -> ToolCall:
        return self.inner.update_tool_call(id, fence=fence, **self._json(changes))

    def decide_tool_calls(
        self, run_id: str, decision: JSON, *, tool_call_id: str | None = None
    ) -> list[ToolCall]:
        return self.inner.decide_tool_calls(run_id, self._json(decision), tool_call_id=tool_call_id)

    def create_artifact(
        self, kind: str, *, content: bytes | None = None, **fields: Any
    ) -> Artifact:
        if content is not None:
            content = self.redactor.redact_bytes(content)
        return self.inner.create_artifact(kind, content=content, **self._json(fields))

    def open_artifact(self, kind: str, **fields: Any) -> ArtifactWriter:
        return _RedactedWriter(self.inner.open_artifact(kind, **self._json(fields)), self.redactor)

    def create_task(
        self, title: str, *, details: str | None = None, due_at: str | None = None
    ) -> Task:
        return self.inner.create_task(
            self.redactor.redact_text(title), details=self._json(details), due_at=due_at
        )

    def update_task(self, id: str, /, **changes: Any) -> Task:
        return self.inner.update_task(id, **self._json(changes))

    def upsert_capability(
        self, name: str, *, description: str, file_path: str, tool_schema: JSON
    ) -> Capability:
        return self.inner.upsert_capability(
            name,
            description=self.redactor.redact_text(description),
            file_path=file_path,
            tool_schema=self._json(tool_schema),
        )

    def add_compaction(self, session_id: str, *, summary: str, **fields: Any) -> Compaction:
        return self.inner.add_compaction(
            session_id, summary=self.redactor.redact_text(summary), **fields
        )


class _RedactedWriter:
    """Redacts the bytes as a stream (a secret split across two writes is still caught)."""

    def __init__(self, inner: ArtifactWriter, redactor: Redactor) -> None:
        self.inner = inner
        self.stream = redactor.byte_stream()

    def write(self, data: bytes) -> None:
        safe = self.stream.feed(data)
        if safe:
            self.inner.write(safe)

    def commit(self) -> Artifact:
        rest = self.stream.flush()
        if rest:
            self.inner.write(rest)
        return self.inner.commit()

    def abort(self) -> None:
        self.inner.abort()


def redacted_store(inner: Store, redactor: Redactor) -> Store:
    """``inner`` itself when there is nothing to redact, else the redacting wrapper."""
    if not redactor:
        return inner
    return cast("Store", RedactedStore(inner, redactor))
