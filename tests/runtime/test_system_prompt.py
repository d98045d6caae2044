"""What a run is told: the system prompt is snapshotted on the run (seed 001 §7.3), also when
part of it comes from the session, and it lists the tasks due soon or overdue (seed 002)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from agi_jupyter.testing import FakeLLMServer, Turn
from tests.runtime.conftest import MakeAgi

MODEL = "openai-chat:gpt-4o-mini"


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _system(fake_llm: FakeLLMServer) -> str:
    messages = fake_llm.requests[-1].body["messages"]
    return "\n".join(m["content"] for m in messages if m["role"] == "system")


def test_a_run_records_the_system_prompt_its_session_gave_it(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_agi()
    session = agi.new_session(model=MODEL, system_prompt="Answer like a pirate.")
    fake_llm.enqueue(Turn(text="arr"))
    run = agi.ask("hello", session=session.id).run
    assert run.system_prompt is not None
    assert "Answer like a pirate." in run.system_prompt
    assert run.system_prompt == _system(fake_llm), "what was sent is what was recorded"
    agi.update_session(session.id, system_prompt="Answer like a poet.")
    fake_llm.enqueue(Turn(text="o"))
    later = agi.ask("again", session=session.id).run
    assert "Answer like a poet." in (later.system_prompt or "")
    assert "Answer like a pirate." in (agi.run(run.id).system_prompt or ""), "kept as it was"


def test_due_and_overdue_tasks_are_in_every_runs_system_prompt(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    agi = make_agi()
    now = datetime.now(UTC)
    soon = agi.store.create_task("Water the plants", due_at=_iso(now + timedelta(minutes=2)))
    late = agi.store.create_task("Send the report", due_at=_iso(now - timedelta(hours=1)))
    later = agi.store.create_task("Renew the domain", due_at=_iso(now + timedelta(days=3)))
    session = agi.new_session(model=MODEL)
    fake_llm.enqueue(Turn(text="noted"))
    agi.ask("what is on?", session=session.id)
    system = _system(fake_llm)
    assert f"[{soon.id}] Water the plants (due " in system
    assert f"[{late.id}] Send the report (overdue " in system
    assert later.id not in system
    assert system.index(late.id) < system.index(soon.id), "soonest first"
    agi.store.update_task(late.id, status="done")
    fake_llm.enqueue(Turn(text="ok"))
    agi.ask("and now?", session=session.id)
    assert late.id not in _system(fake_llm)
    assert json.dumps(fake_llm.requests[-1].body).count("Water the plants") == 1
