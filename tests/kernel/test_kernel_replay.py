"""Replay: the same rendered request after a kernel restart repeats the recorded run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agi_jupyter.kernel.context import context_for
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.kernel.conftest import RunCell

NOTEBOOK = [
    "x = 3",
    "%%agi\nWhat is {x}?",
    '%%agi -a build\n/tool python {"code": "y = x * 2\\nprint(y)"}',
    "%%agi -f json\nGive me JSON",
]


def _run_all(cell: RunCell, sources: list[str]) -> list[Any]:
    return [cell(source) for source in sources]


def _answers(runs: list[Any]) -> list[str]:
    return [r.value.text for r in runs if r.value is not None and hasattr(r.value, "text")]


def _shown(runs: list[Any]) -> list[list[Any]]:
    """What each cell leaves in the notebook: its outputs' data and metadata."""
    return [[(o["data"], o["metadata"]) for o in run.outputs] for run in runs]


def test_restart_and_run_all_replays_every_agent_cell(
    cell: RunCell, shell: Any, ctx: Any, restart: Callable[[], None], fake_llm: FakeLLMServer
) -> None:
    first = _run_all(cell, NOTEBOOK)
    calls = len(fake_llm.requests)
    assert calls == 4  # one, two (tool call + answer), one
    first_session = ctx.session_id

    restart()
    shell.user_ns.pop("y")
    second = _run_all(cell, NOTEBOOK)

    assert len(fake_llm.requests) == calls  # zero model calls
    assert _answers(second) == _answers(first)
    assert _shown(second) == _shown(first)  # identical outputs, recorded run ids included
    assert shell.user_ns["y"] == 6  # the python tool call was executed again
    ctx = context_for(shell)
    agi = ctx.agi
    assert ctx.session_id != first_session
    originals = [r.value.run for r in first[1:]]
    replays = [r.value.run for r in second[1:]]
    for original, replay in zip(originals, replays, strict=True):
        assert replay.replayed_from == original.id
        assert replay.status == "succeeded"
        assert replay.request_hash == original.request_hash
        assert replay.cost_usd == 0.0
    # the outputs name the recorded run (the replay's own id is in the store only)
    assert second[1].outputs == first[1].outputs
    assert second[1].outputs[-1]["metadata"]["agi"] == {"run_id": originals[0].id}
    # the replayed session holds the same conversation
    roles = [m.role for m in agi.history(ctx.session_id, view="full")]
    assert roles == [m.role for m in agi.history(first_session, view="full")]
    (call,) = agi.store.list_tool_calls(run_id=replays[1].id)
    assert (call.name, call.status) == ("python", "completed")
    assert second[3].value.value == first[3].value.value


def test_an_edited_prompt_calls_the_model_for_that_cell_and_the_ones_after(
    cell: RunCell, restart: Callable[[], None], fake_llm: FakeLLMServer
) -> None:
    cells = ["%%agi\nfirst", "%%agi\nsecond", "%%agi\nthird"]
    _run_all(cell, cells)
    assert len(fake_llm.requests) == 3

    restart()
    edited = ["%%agi\nfirst", "%%agi\nsecond, edited", "%%agi\nthird"]
    runs = _run_all(cell, edited)
    # the first replays; the edited one is new; the third's history changed, so it is new too
    assert len(fake_llm.requests) == 5
    assert runs[0].value.run.replayed_from is not None
    assert runs[1].value.run.replayed_from is None
    assert runs[2].value.run.replayed_from is None

    restart()
    _run_all(cell, edited)
    assert len(fake_llm.requests) == 5  # the edited notebook now replays completely


def test_fresh_and_the_replay_setting_bypass_replay(
    cell: RunCell, shell: Any, restart: Callable[[], None], fake_llm: FakeLLMServer
) -> None:
    cell("%%agi\nsame")
    restart()
    assert cell("%%agi --fresh\nsame").value.run.replayed_from is None
    restart()
    shell.magics_manager.registry["AgiMagics"].replay = False
    assert cell("%%agi\nsame").value.run.replayed_from is None
    assert len(fake_llm.requests) == 3


def test_failed_runs_are_not_replayed(
    cell: RunCell, restart: Callable[[], None], fake_llm: FakeLLMServer
) -> None:
    from agi_jupyter.testing import Fault

    failing = Turn(fault=Fault(status=400, body={"error": {"message": "bad request"}}))
    fake_llm.enqueue(failing)
    run = cell("%%agi\nfails")
    assert run.value.run.status == "failed"
    restart()
    again = cell("%%agi\nfails")
    assert again.value.run.status == "succeeded"
    assert again.value.run.replayed_from is None


def test_agi_replay_copies_messages_tool_calls_and_events(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})]),
        Turn(text="Listed."),
    )
    original = cell("%%agi -a build\nlist").value.run
    agi = ctx.agi
    target = agi.new_session(agent="build")
    events = []
    unsubscribe = agi.bus.subscribe_run("", events.append)  # nothing: ids are new
    replay = agi.replay(original.id, session=target.id, request_hash="h", cell_id="c9")
    unsubscribe()
    assert (replay.replayed_from, replay.request_hash, replay.cell_id) == (original.id, "h", "c9")
    copied = [m for m in agi.store.list_messages(target.id) if m.run_id == replay.id]
    assert [m.role for m in copied] == ["user", "assistant", "tool", "assistant"]
    assert copied[0].id == replay.input_message_id
    assert copied[1].meta["replayed_from"]
    (call,) = agi.store.list_tool_calls(run_id=replay.id)
    assert (call.name, call.status, call.message_id) == ("fs.list", "completed", copied[1].id)
    stored = [e.type for e in agi.store.list_run_events(replay.id)]
    source = [e.type for e in agi.store.list_run_events(original.id)]
    assert stored == source
    followed = list(agi.follow(replay.id))
    deltas = [e for e in followed if e["type"] == "output.text.delta"]
    assert "".join(e["delta"] for e in deltas) == "Listed."  # persisted (persist_deltas)
    assert followed[0]["session_id"] == target.id
    assert followed[-1]["run"]["status"] == "succeeded"
    assert len(fake_llm.requests) == 2
