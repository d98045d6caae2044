"""Decided once, shown everywhere: a ``%%agi`` cell whose run waits follows the decision taken
in another door (here another process's ``Agi``, as the server's REST handler decides for the
side panel): its buttons give way to who decided, the run streams on in place, and what a
front end saves of the cell is the final state, never a stale "waiting"."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from IPython.utils.capture import capture_output

from agi_jupyter import Agi
from agi_jupyter.errors import NoPendingApproval
from agi_jupyter.kinds import DecisionDoor
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn

WIDGET = "application/vnd.jupyter.widget-view+json"


def saved_outputs(published: list[Any]) -> list[dict[str, Any]]:
    """What a front end keeps of a cell: its displays, each updated in place by display id."""
    outputs: list[dict[str, Any]] = []
    for output in published:
        display_id = (output.transient or {}).get("display_id")
        if output.update:
            for kept in outputs:
                if display_id is not None and kept["display_id"] == display_id:
                    kept["data"] = output.data
            continue
        outputs.append({"display_id": display_id, "data": output.data})
    return outputs


def asks_to_write(shell: Any, fake_llm: FakeLLMServer, name: str) -> None:
    """The notebook's session asks before every call; the model will write ``name``.txt."""
    shell.run_cell("%agi new --agent build --review-mode ask")
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_write", {"path": f"{name}.txt", "content": name})]),
        Turn(text=f"Wrote {name}.txt."),
    )


def decision_thread(run_id: str) -> threading.Thread:
    (thread,) = [t for t in threading.enumerate() if t.name == f"agi-decision-{run_id}"]
    return thread


def test_a_decision_in_the_panel_replaces_the_cells_buttons_and_the_run_streams_on(
    shell: Any, ctx: Any, project: Path, fake_llm: FakeLLMServer
) -> None:
    asks_to_write(shell, fake_llm, "a")
    with capture_output() as captured:  # kept open: the cell's later updates land here too
        shell.run_cell("%%agi\nwrite a.txt")
        (run,) = ctx.agi.runs(limit=1).items
        assert run.status == "waiting_approval"
        waiting = saved_outputs(captured.outputs)
        assert any(WIDGET in o["data"] for o in waiting)  # Approve / Deny / Always
        thread = decision_thread(run.id)

        with Agi(project) as panel:  # another process deciding, as the server does
            panel.decide(run.id, "approve", door=DecisionDoor.PANEL, by="alice")
            events = list(panel.follow(run.id))
        thread.join(30)
        assert not thread.is_alive()

    decided = next(e for e in events if e["type"] == "approval.decided")
    assert (decided["door"], decided["by"]) == ("panel", "alice")
    saved = saved_outputs(captured.outputs)
    assert not any(WIDGET in o["data"] for o in saved)  # no buttons left
    texts = "\n".join(str(o["data"].get("text/plain", "")) for o in saved)
    assert "fs.write approved in the panel by alice" in texts
    assert "Wrote a.txt." in texts
    assert "waiting for your approval" not in texts.lower()
    assert (project / "a.txt").read_text() == "a"
    (call,) = ctx.agi.tool_calls(run.id)
    assert call.decided == "approved in the panel by alice"


def test_the_same_question_decided_in_two_doors_at_once_has_one_winner(
    shell: Any, ctx: Any, project: Path, fake_llm: FakeLLMServer
) -> None:
    asks_to_write(shell, fake_llm, "b")
    with capture_output() as captured:
        shell.run_cell("%%agi\nwrite b.txt")
        (run,) = ctx.agi.runs(limit=1).items
        thread = decision_thread(run.id)
        start = threading.Barrier(2)
        answers: dict[str, Any] = {}

        def decide(agi: Agi, door: DecisionDoor, decision: str, by: str) -> None:
            start.wait(10)
            try:
                answers[door] = agi.decide(run.id, decision, door=door, by=by, resume=False)
            except NoPendingApproval as e:
                answers[door] = e

        with Agi(project) as panel:
            doors = [
                threading.Thread(target=decide, args=(panel, DecisionDoor.PANEL, "deny", "alice")),
                threading.Thread(
                    target=decide, args=(ctx.agi, DecisionDoor.CELL, "approve", "bob")
                ),
            ]
            for door in doors:
                door.start()
            for door in doors:
                door.join(30)
            won = [d for d, answer in answers.items() if isinstance(answer, list)]
            lost = [d for d, answer in answers.items() if isinstance(answer, NoPendingApproval)]
            assert len(won) == 1
            assert len(lost) == 1
            (call,) = ctx.agi.tool_calls(run.id)
            winner = call.decided  # as stored: the only decision
            assert str(answers[lost[0]]).endswith(f"was decided already: fs.write {winner}")
            assert winner.split(" ", 1)[1].startswith(
                "in the panel by alice" if won == ["panel"] else "in the notebook cell by bob"
            )
            ctx.agi.tick()  # the run resumes here (any process that ticks could)
        thread.join(30)

    texts = "\n".join(str(o["data"].get("text/plain", "")) for o in saved_outputs(captured.outputs))
    assert f"fs.write {winner}" in texts  # the cell names the winner


@pytest.mark.parametrize(
    ("approval", "words"),
    [
        ({"decision": "approve", "door": "panel", "by": "alice"}, "approved in the panel by alice"),
        ({"decision": "deny", "door": "cli"}, "denied from the command line"),
        ({"decision": "approve_always", "door": "widget"}, "always approved in the chat widget"),
        ({"decision": "approve"}, "approved"),  # decided before doors were recorded
    ],
)
def test_a_decision_in_words(approval: dict[str, Any], words: str) -> None:
    from agi_jupyter.records import decided_text

    assert decided_text(approval) == words
