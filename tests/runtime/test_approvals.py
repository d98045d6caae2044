"""Durable approvals in one process: a ``build`` session in *ask* mode parks its run in
``waiting_approval`` with the call stored, a decision resumes it without asking the model
again for that turn, and the tool policy decides what is offered and what asks.
(The cross-process bar is tests/cli/test_cli_approvals.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from agi_jupyter.agents import BUILTIN_AGENTS
from agi_jupyter.config import load_config
from agi_jupyter.errors import NoPendingApproval, UsageError
from agi_jupyter.kinds import DecisionDoor, ToolTrait
from agi_jupyter.notebook import tools as notebook_tools
from agi_jupyter.records import Session, ToolResultPart
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from agi_jupyter.tools.builtins import builtin_tools
from agi_jupyter.tools.policy import ToolPolicy
from tests.runtime.conftest import MakeAgi

COUNT = "echo ran >> count.txt; echo done"


def _session(**tool_config: object) -> Session:
    return Session(id="ses_x", agent="build", tool_config=dict(tool_config))


NOTEBOOK_TOOLS = (
    notebook_tools.NotebookRead,
    notebook_tools.NotebookInsert,
    notebook_tools.NotebookEdit,
    notebook_tools.NotebookDelete,
    notebook_tools.NotebookRun,
)


def _trait(name: str) -> ToolTrait:
    """The trait the named built-in tool declares (the kernel's ``python``: the default)."""
    tools = [*builtin_tools(), *NOTEBOOK_TOOLS]
    return next((t.trait for t in tools if t.name == name), ToolTrait.SHELL)


def test_the_edit_tools_are_the_ones_that_edit_files_and_cells() -> None:
    tools = [*builtin_tools(), *NOTEBOOK_TOOLS]
    assert {t.name for t in tools if t.trait == ToolTrait.EDIT} == {
        "fs.write",
        "apply_patch",
        "notebook.edit",
        "notebook.insert",
        "notebook.delete",
    }
    assert {t.name for t in tools if t.trait == ToolTrait.READ} == {
        "fs.read",
        "fs.list",
        "fs.search",
        "notebook.read",
    }


def test_the_build_agent_asks_for_commands_code_and_edits_and_plan_never_asks(
    tmp_path: Path,
) -> None:
    config = load_config(tmp_path, env={"HOME": str(tmp_path)})
    assert config.review_mode == "ask"  # the product default
    build = ToolPolicy.for_session(BUILTIN_AGENTS["build"], _session(), config)
    for name in ("shell.run", "python", "apply_patch", "fs.write", "notebook.edit", "notebook.run"):
        assert build.decide(name, _trait(name)) == "ask", name
    assert build.decide("fs.read", _trait("fs.read")) == "allow"
    plan = ToolPolicy.for_session(BUILTIN_AGENTS["plan"], _session(), config)
    assert {
        plan.decide(n, _trait(n)) for n in ("fs.read", "fs.list", "sql.query", "notebook.read")
    } == {"allow"}

    edit = ToolPolicy.for_session(
        BUILTIN_AGENTS["build"], _session(review_mode="auto-edit"), config
    )
    assert [
        edit.decide(n, _trait(n)) for n in ("fs.write", "notebook.edit", "shell.run", "python")
    ] == [
        "allow",
        "allow",
        "ask",
        "ask",
    ]
    auto = ToolPolicy.for_session(BUILTIN_AGENTS["build"], _session(review_mode="auto"), config)
    assert auto.decide("shell.run", _trait("shell.run")) == "allow"
    env_auto = load_config(tmp_path, env={"HOME": str(tmp_path), "AGI_REVIEW_MODE": "auto"})
    assert ToolPolicy.for_session(BUILTIN_AGENTS["build"], _session(), env_auto).decide(
        "python", _trait("python")
    ) == ("allow")


def test_session_rules_win_and_the_most_specific_pattern_decides(tmp_path: Path) -> None:
    config = load_config(tmp_path, env={"HOME": str(tmp_path), "AGI_REVIEW_MODE": "auto"})
    policy = ToolPolicy.for_session(
        BUILTIN_AGENTS["build"],
        _session(permissions={"notebook.*": "deny", "notebook.read": "allow", "shell.run": "deny"}),
        config,
    )
    assert (
        policy.decide("notebook.edit", _trait("notebook.edit")) == "deny"
    )  # deny is never relaxed, even in auto
    assert policy.decide("notebook.read", _trait("notebook.read")) == "allow"
    assert policy.decide("shell.run", _trait("shell.run")) == "deny"
    assert not policy.offers("notebook.run")
    assert policy.offers("fs.read")
    approved = ToolPolicy.for_session(
        BUILTIN_AGENTS["build"], _session(review_mode="ask", approved_tools=["python"]), config
    )
    assert (
        approved.decide("python", _trait("python")),
        approved.decide("shell.run", _trait("shell.run")),
    ) == ("allow", "ask")


def test_agents_json_sets_permissions_and_denied_tools_are_not_offered(
    make_agi: MakeAgi, project: Path
) -> None:
    (project / ".agi" / "agents.json").write_text(
        '{"build": {"permissions": {"shell.run": "deny", "fs.write": "allow"}}}'
    )
    agi = make_agi()
    agent = agi.agents()["build"]
    assert agent.permissions["shell.run"] == "deny"
    assert agent.permissions["python"] == "ask"  # merged over the built-in rules
    offered = {t.name for t in agi.tools("build")}
    assert "fs.write" in offered
    with pytest.raises(UsageError):
        agi.new_session(agent="build", review_mode="sometimes")


def _park(make_agi: MakeAgi, fake_llm: FakeLLMServer, *calls: FakeToolCall) -> tuple[str, str]:
    fake_llm.enqueue(Turn(text="Let me run it.", tool_calls=list(calls)))
    agi = make_agi()
    session = agi.new_session(agent="build", review_mode="ask")
    events = list(agi.stream("count", session=session.id))
    assert events[-1]["type"] == "run.status"
    assert events[-1]["status"] == "waiting_approval"
    asked = [e for e in events if e["type"] == "approval.requested"]
    assert [e["name"] for e in asked] == [c.name.replace("_", ".", 1) for c in calls]
    run = agi.run(events[-1]["run_id"])
    assert (run.status, run.owner) == ("waiting_approval", None)
    assert agi.store.due_runs() == []  # no tick claims it until it is decided
    return run.id, session.id


def test_an_approved_call_runs_once_and_the_run_continues_without_repeating_the_turn(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    run_id, _ = _park(make_agi, fake_llm, FakeToolCall("shell_run", {"command": COUNT}))
    assert not (project / "count.txt").exists()
    assert len(fake_llm.requests) == 1
    fake_llm.enqueue(Turn(text="It ran."))
    agi = make_agi()  # another Agi: nothing of the first one is needed to go on

    (decided,) = agi.decide(run_id, "approve")
    assert decided.approval is not None
    assert decided.approval["decision"] == "approve"
    events = list(agi.follow(run_id))

    assert events[-1]["type"] == "run.final"
    assert agi.run(run_id).status == "succeeded"
    assert (project / "count.txt").read_text() == "ran\n"
    assert len(fake_llm.requests) == 2  # one model call per turn: the first was not repeated
    assert agi.result(run_id).text == "It ran."
    (call,) = agi.store.list_tool_calls(run_id=run_id)
    assert call.status == "completed"
    with pytest.raises(NoPendingApproval):
        agi.decide(run_id, "approve")


def test_a_denied_call_returns_the_denial_and_the_message_to_the_model(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    run_id, session_id = _park(make_agi, fake_llm, FakeToolCall("shell_run", {"command": COUNT}))
    fake_llm.enqueue(Turn(text="Understood, not running it."))
    agi = make_agi()

    agi.decide(run_id, "deny", message="use the staging database instead")
    list(agi.follow(run_id))

    assert agi.run(run_id).status == "succeeded"
    assert not (project / "count.txt").exists()
    tool = [m for m in agi.store.list_messages(session_id) if m.role == "tool"]
    (part,) = tool[0].parts
    assert isinstance(part, ToolResultPart)
    assert part.is_error
    assert part.status == "denied"
    assert "use the staging database instead" in part.output
    assert "use the staging database instead" in str(fake_llm.requests[-1].body)


def test_approve_always_lets_the_tool_through_for_the_rest_of_the_session(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    run_id, session_id = _park(make_agi, fake_llm, FakeToolCall("shell_run", {"command": COUNT}))
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("shell_run", {"command": COUNT})]), Turn(text="Twice.")
    )
    agi = make_agi()
    agi.decide(run_id, "approve_always")
    list(agi.follow(run_id))

    assert agi.run(run_id).status == "succeeded"
    assert (project / "count.txt").read_text() == "ran\nran\n"  # the second call did not ask
    assert agi.session(session_id).tool_config["approved_tools"] == ["shell.run"]


def test_each_call_is_decided_on_its_own_and_the_run_waits_for_all(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    run_id, _ = _park(
        make_agi,
        fake_llm,
        FakeToolCall("shell_run", {"command": COUNT}),
        FakeToolCall("fs_write", {"path": "a.txt", "content": "a"}),
    )
    agi = make_agi()
    first, second = agi.pending_approvals(run_id)
    agi.decide(run_id, "deny", tool_call_id=second.tool_call_id, resume=False)
    assert agi.run(run_id).status == "waiting_approval"  # one call still undecided
    fake_llm.enqueue(Turn(text="Done."))
    agi.decide(run_id, "approve", tool_call_id=first.tool_call_id)
    list(agi.follow(run_id))
    assert agi.run(run_id).status == "succeeded"
    assert (project / "count.txt").exists()
    assert not (project / "a.txt").exists()
    statuses = {c.name: c.status for c in agi.store.list_tool_calls(run_id=run_id)}
    assert statuses == {"shell.run": "completed", "fs.write": "denied"}


def test_always_for_one_call_decides_the_runs_other_calls_of_that_tool_by_policy(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    run_id, _ = _park(
        make_agi,
        fake_llm,
        FakeToolCall("shell_run", {"command": COUNT}),
        FakeToolCall("shell_run", {"command": COUNT}),
    )
    agi = make_agi()
    first, second = agi.pending_approvals(run_id)
    fake_llm.enqueue(Turn(text="Both ran."))
    agi.decide(
        run_id, "approve_always", tool_call_id=first.tool_call_id, door=DecisionDoor.CLI, by="ann"
    )
    events = list(agi.follow(run_id))

    assert agi.run(run_id).status == "succeeded"
    assert (project / "count.txt").read_text() == "ran\nran\n"
    decided = {e["tool_call_id"]: (e["door"], e["by"]) for e in events
               if e["type"] == "approval.decided"}  # fmt: skip
    assert decided == {first.tool_call_id: ("cli", "ann"), second.tool_call_id: ("policy", None)}
    words = {c.tool_call_id: c.decided for c in agi.store.list_tool_calls(run_id=run_id)}
    assert words == {
        first.tool_call_id: "always approved from the command line by ann",
        second.tool_call_id: "approved by the session's rules",
    }


def test_a_waiting_run_holds_the_later_runs_of_its_session_and_can_be_cancelled(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    run_id, session_id = _park(make_agi, fake_llm, FakeToolCall("shell_run", {"command": COUNT}))
    agi = make_agi()
    later = agi.submit("and then?", session=session_id, start=False)
    assert agi.tick().executed == 0  # the later run waits behind the waiting one
    assert agi.run(later.id).status == "queued"
    cancelled = agi.cancel(run_id)
    assert cancelled.status == "cancelled"
    (call,) = agi.store.list_tool_calls(run_id=run_id)
    assert call.status == "cancelled"
    fake_llm.enqueue(Turn(text="next"))
    assert agi.tick().executed == 1
    assert agi.run(later.id).status == "succeeded"


def test_a_session_rule_that_denies_hides_the_tool_and_refuses_a_call_anyway(
    make_agi: MakeAgi, fake_llm: FakeLLMServer, project: Path
) -> None:
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_write", {"path": "x.txt", "content": "x"})]),
        Turn(text="I could not."),
    )
    agi = make_agi()
    session = agi.new_session(agent="build", review_mode="auto", permissions={"fs.*": "deny"})
    assert session.tool_config["permissions"] == {"fs.*": "deny"}

    result = agi.ask("write x", session=session.id)

    assert result.run.status == "succeeded"
    assert not (project / "x.txt").exists()
    offered = str(fake_llm.requests[0].body.get("tools"))
    assert "fs_write" not in offered
    assert "shell_run" in offered
    (call,) = agi.store.list_tool_calls(run_id=result.run.id)
    assert call.status == "denied"
    assert "denied by this session's tool policy" in call.result["output"]
    with pytest.raises(UsageError):
        agi.update_session(session.id, permissions={"fs.read": "sometimes"})


def test_in_interrupt_mode_a_new_message_cancels_the_waiting_run(
    make_agi: MakeAgi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("shell_run", {"command": COUNT})]))
    agi = make_agi()
    session = agi.new_session(agent="build", review_mode="ask", queue_mode="interrupt")
    waiting = agi.ask("count", session=session.id).run
    assert waiting.status == "waiting_approval"
    fake_llm.enqueue(Turn(text="something else then"))

    answer = agi.ask("never mind", session=session.id)

    assert answer.text == "something else then"
    assert agi.run(waiting.id).status == "cancelled"
