"""``CanonicalHistory`` writes on the store thread: a step whose write waits for a blocked store
runs whole when its task is cancelled meanwhile (what an adapter reported stays reported)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.runtime.bus import EventBus
from agi_jupyter.runtime.emitter import RunEmitter
from agi_jupyter.runtime.store_thread import StoreThread
from agi_jupyter.sdk.base import AssistantText, ToolCallEvent, ToolResultEvent, TurnDone
from agi_jupyter.sdk.history import CanonicalHistory
from agi_jupyter.store import open_store
from agi_jupyter.tools import Redactor
from tests.runtime.blocked_store import sqlite_write_lock


@pytest.mark.asyncio
async def test_a_step_cancelled_while_its_write_waits_is_made_whole(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    store = open_store(project)
    threads = StoreThread()
    try:
        session = store.create_session(sdk="scripted", provider="p", model="m")
        run = store.create_run(session.id, provider="p", model="m")
        bus = EventBus()
        published: list[dict[str, Any]] = []
        bus.subscribe_run(run.id, published.append)
        emitter = RunEmitter(
            store,
            bus,
            run_id=run.id,
            session_id=session.id,
            persist_deltas=False,
            last_seq=0,
            writer=threads,
        )
        history = CanonicalHistory(
            store,
            emitter,
            run,
            stored=threads.call,
            sdk="scripted",
            redactor=Redactor({}),
            max_iterations=5,
        )
        await history(AssistantText(text="Reading."))
        await history(ToolCallEvent(id="t1", name="fs.read", arguments={"path": "a"}))
        with sqlite_write_lock(project):
            result = ToolResultEvent(id="t1", name="fs.read", output="contents of a")
            step = asyncio.ensure_future(history(result))
            for _ in range(3):
                await asyncio.sleep(0)  # the step starts: its writes wait for the lock
            step.cancel()
            await asyncio.sleep(0.05)
            assert not step.done(), "a cancelled step waits for its writes"
        with pytest.raises(asyncio.CancelledError):
            await step  # delivered once the step is whole
        await emitter.drain()

        messages = store.list_messages(session.id)
        assert [m.role for m in messages] == ["assistant", "tool"]
        (call,) = store.list_tool_calls(run_id=run.id)
        assert (call.status, call.message_id) == ("completed", messages[0].id)
        types = [e["type"] for e in published]
        assert types[-2:] == ["message.completed", "tool.call.output"]
        coarse = [e["seq"] for e in published if e["type"] != "output.text.delta"]
        assert [e.seq for e in store.list_run_events(run.id)] == coarse
        # The history goes on after it.
        await history(AssistantText(text="Done."))
        await history(TurnDone())
        assert [m.text for m in store.list_messages(session.id)][-1] == "Done."
    finally:
        threads.close()
        store.close()
