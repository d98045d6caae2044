"""Runs whose state was stored before it had a version resume where they were; a queued prompt
is redacted before it is stored (the run state goes through the redactor in its JSON form)."""

from __future__ import annotations

import json

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, Turn
from tests.runtime.conftest import MakeAgi

MODEL = "openai-chat:gpt-4o-mini"


def _write_raw_state(agi: Agi, run_id: str, state: dict[str, object]) -> None:
    """Store ``state`` as the run's ``loop_state`` column text, as an older version wrote it."""
    inner = agi.store.inner if hasattr(agi.store, "inner") else agi.store
    with inner._write() as conn:  # type: ignore[attr-defined]  (``?`` on both backends)
        conn.execute("UPDATE runs SET loop_state = ? WHERE id = ?", [json.dumps(state), run_id])


def _raw_state(agi: Agi, run_id: str) -> dict[str, object]:
    rows = agi.store.query("SELECT loop_state FROM runs WHERE id = ?", [run_id]).rows
    return dict(json.loads(rows[0][0]))


def test_a_run_stored_mid_loop_without_a_version_resumes_after_its_turn(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="done", usage=(7, 3)))
    agi = make_agi()
    session = agi.new_session(model=MODEL)
    run = agi.submit("ignored", session=session.id, start=False)
    _write_raw_state(
        agi,
        run.id,
        {
            "input": [{"type": "text", "text": "hello from before"}],
            "iteration": 1,
            "max_iterations": 3,
            "usage": {"input_tokens": 10, "output_tokens": 2},
            "cost_usd": 0.5,
            "last_input_tokens": 10,
        },
    )

    agi.tick()

    done = agi.run(run.id)
    assert done.status == "succeeded"
    assert [m.text for m in agi.store.list_messages(session.id)] == ["hello from before", "done"]
    iterations = [e.payload for e in agi.store.list_run_events(run.id) if e.type == "iteration"]
    assert [(i["iteration"], i["max_iterations"]) for i in iterations] == [(2, 3)]
    assert done.usage == {"input_tokens": 17, "output_tokens": 5}
    assert done.cost_usd > 0.5
    assert done.loop_state is not None
    assert done.loop_state.iteration == 2
    assert done.loop_state.input == ()
    assert _raw_state(agi, run.id)["version"] == 1


def test_a_queued_prompt_is_stored_redacted(make_agi: MakeAgi) -> None:
    agi = make_agi()
    session = agi.new_session(model=MODEL)
    run = agi.submit("my key is sk-test-openai-secret-0001", session=session.id, start=False)
    assert "sk-test-openai-secret-0001" not in json.dumps(_raw_state(agi, run.id))
    state = agi.run(run.id).loop_state
    assert state is not None
    assert state.input[0].text.startswith("my key is ")  # type: ignore[union-attr]
