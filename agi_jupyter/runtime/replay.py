"""Replaying a recorded run: a new run row that repeats a finished run without calling a model.

The new run's ``replayed_from`` names the original recording (the run that called the model),
also when the copy is made from an earlier replay of it.

``replay_run`` copies a succeeded run into a session as a new run marked ``replayed_from``: its
messages (user, assistant, tool results) are added to the target session, its tool-call rows are
copied, and its persisted events are emitted again under the new run (with the new session and
message ids), so every consumer — the magic's display, a widget, a stream follower — sees the
same output as the first time. Text deltas are not persisted by default, so each recorded
``output.text.done`` is preceded by one delta holding the whole text. Nothing is sent to a
provider and no tool is executed: re-executing side effects (the notebook's ``python`` tool) is
the caller's business, because only the caller knows where that code must run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agi_jupyter import events as ev
from agi_jupyter.errors import UsageError
from agi_jupyter.events import event_from_dict
from agi_jupyter.records import Message, Run, utc_now
from agi_jupyter.runtime.agent_loop import message_to_dict
from agi_jupyter.runtime.emitter import RunEmitter
from agi_jupyter.runtime.runs import run_to_dict

if TYPE_CHECKING:
    from agi_jupyter.runtime.deps import RuntimeDeps
    from agi_jupyter.store import Store


def replay_run(deps: RuntimeDeps, source_id: str, *, session_id: str, **run_fields: Any) -> Run:
    """Copy the succeeded run ``source_id`` into ``session_id`` as a finished new run."""
    store = deps.store
    source = store.get_run(source_id)
    if source.status != "succeeded":
        raise UsageError(
            f"run {source_id} did not succeed ({source.status}); it cannot be replayed"
        )
    store.get_session(session_id)
    now = utc_now()
    run = store.create_run(
        session_id,
        type=source.type,
        execution_mode=run_fields.pop("execution_mode", source.execution_mode),
        status="running",
        provider=source.provider,
        model=source.model,
        agent=run_fields.pop("agent", source.agent),
        thinking_level=source.thinking_level,
        system_prompt=source.system_prompt,
        attempt=1,
        max_attempts=1,
        usage=dict(source.usage),
        cost_usd=0.0,
        replayed_from=source.replayed_from or source.id,
        owner=deps.owner,
        started_at=now,
        heartbeat_at=now,
        **run_fields,
    )
    copies = _copy_messages(store, source, run)
    _copy_tool_calls(store, source, run, copies)
    input_message = copies.get(source.input_message_id or "")
    if input_message is not None:
        run = store.update_run(run.id, input_message_id=input_message.id)
    emitter = RunEmitter(
        store,
        deps.bus,
        run_id=run.id,
        session_id=session_id,
        persist_deltas=deps.config.persist_deltas,
        last_seq=0,
        redactor=deps.redactor,
    )
    _emit_recorded_events(store, source, emitter, copies)
    run = store.update_run(run.id, status="succeeded", completed_at=utc_now())
    emitter.emit(ev.RunFinal(run=run_to_dict(run)))
    return run


def _copy_messages(store: Store, source: Run, run: Run) -> dict[str, Message]:
    """The source run's messages added to the run's session, by source message id."""
    copies: dict[str, Message] = {}
    for message in store.list_messages(source.session_id):
        if message.run_id != source.id:
            continue
        meta = {**message.meta, "replayed_from": message.id}
        copies[message.id] = store.add_message(
            run.session_id, message.role, message.parts, run_id=run.id, meta=meta
        )
    return copies


def _copy_tool_calls(store: Store, source: Run, run: Run, copies: dict[str, Message]) -> None:
    for call in store.list_tool_calls(run_id=source.id):
        message = copies.get(call.message_id or "")
        row = store.create_tool_call(
            run.id,
            call.tool_call_id,
            call.name,
            call.args,
            message_id=message.id if message else None,
            status=call.status,
        )
        store.update_tool_call(
            row.id,
            result=call.result,
            is_error=call.is_error,
            started_at=call.started_at,
            finished_at=call.finished_at,
        )


def _emit_recorded_events(
    store: Store, source: Run, emitter: RunEmitter, copies: dict[str, Message]
) -> None:
    recorded = store.list_run_events(source.id)
    has_deltas = any(e.type == "output.text.delta" for e in recorded)
    for stored in recorded:
        payload = dict(stored.payload)
        if stored.type in ("run.final", "changes.undone", "changes.redone", "changes.kept"):
            continue  # (undo, redo and keep name the source run's changes, not the copy's)
        if stored.type == "run.meta":
            payload["session_id"] = emitter.session_id
        elif stored.type == "message.completed":
            original = str((payload.get("message") or {}).get("id", ""))
            copy = copies.get(original)
            if copy is not None:
                payload["message"] = message_to_dict(copy)
        elif stored.type == "output.text.done" and not has_deltas:
            emitter.emit(ev.TextDelta(delta=str(payload.get("text", ""))))
        emitter.emit(event_from_dict({"type": stored.type, **payload}))
