"""Approvals from a notebook: a ``%%agi`` cell of a build session in *ask* mode stops with its
python call waiting (buttons and the ``%agi approve`` hint under it), ``%agi runs`` says what
it waits for, and ``%agi approve`` / ``%agi deny`` resume it, also after a kernel restart."""

from __future__ import annotations

from typing import Any

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.kernel.conftest import RunCell


def _waiting_cell(cell: RunCell, fake_llm: FakeLLMServer, ctx: Any) -> str:
    cell("%agi new --agent build --review-mode ask")
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("python", {"code": "approved = 42"})]))
    run = cell("%%agi\nset approved")
    (waiting,) = ctx.agi.runs(limit=1).items
    assert waiting.status == "waiting_approval"
    markdown = run.outputs[0]["data"]["text/markdown"]
    assert f"%agi approve {waiting.id}" in markdown
    assert "? <code>python</code> waiting_approval" in markdown
    widgets = [o for o in run.outputs if "application/vnd.jupyter.widget-view+json" in o["data"]]
    assert len(widgets) == 1  # Approve / Deny / Always
    return waiting.id


def test_a_waiting_cell_is_approved_with_the_magic_and_runs_its_code_once(
    cell: RunCell, shell: Any, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    run_id = _waiting_cell(cell, fake_llm, ctx)
    assert "approved" not in shell.user_ns
    listed = cell("%agi runs")
    assert "waiting_approval: python" in str(listed.value.rows)
    fake_llm.enqueue(Turn(text="Set."))

    approved = cell(f"%agi approve {run_id}")

    assert shell.user_ns["approved"] == 42
    assert ctx.agi.run(run_id).status == "succeeded"
    assert "Set." in approved.outputs[-1]["data"]["text/markdown"]
    assert len(fake_llm.requests) == 2


def test_a_denial_after_a_kernel_restart_reaches_the_model(
    cell: RunCell, shell: Any, ctx: Any, fake_llm: FakeLLMServer, restart: Any
) -> None:
    run_id = _waiting_cell(cell, fake_llm, ctx)
    restart()
    fake_llm.enqueue(Turn(text="Not set then."))

    cell(f"%agi deny {run_id} -m 'leave the namespace alone'")

    assert "approved" not in shell.user_ns
    from agi_jupyter.kernel.context import context_for

    agi = context_for(shell).agi
    assert agi.run(run_id).status == "succeeded"
    assert "leave the namespace alone" in str(fake_llm.requests[-1].body)


def test_a_cell_waiting_for_a_larger_budget_is_raised_with_the_magic(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    cell("%agi new --agent build --review-mode ask --max-tokens 100")
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})], usage=(50, 10)),
        Turn(text="Listed.", usage=(70, 5)),
    )
    run = cell("%%agi\nlist the files")
    (waiting,) = ctx.agi.runs(limit=1).items
    assert waiting.status == "waiting_approval"
    markdown = run.outputs[0]["data"]["text/markdown"]
    assert "Waiting for a larger budget (session budget: 60/100 tokens" in markdown
    assert f"%agi approve {waiting.id} --max-tokens N" in markdown
    widgets = [o for o in run.outputs if "application/vnd.jupyter.widget-view+json" in o["data"]]
    assert len(widgets) == 1  # max tokens / max USD, Raise budget / Deny
    assert "a larger budget" in str(cell("%agi runs").value.rows)
    assert len(fake_llm.requests) == 1

    raised = cell(f"%agi approve {waiting.id} --max-tokens 1000")

    assert ctx.agi.run(waiting.id).status == "succeeded"
    assert "Listed." in raised.outputs[-1]["data"]["text/markdown"]
    assert len(fake_llm.requests) == 2


def test_a_denied_budget_fails_the_cell_run(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    cell("%agi new --agent build --review-mode ask --max-tokens 100")
    fake_llm.enqueue(Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})], usage=(50, 10)))
    cell("%%agi\nlist the files")
    (waiting,) = ctx.agi.runs(limit=1).items

    cell(f"%agi deny {waiting.id}")

    run = ctx.agi.run(waiting.id)
    assert run.status == "failed"
    assert run.error is not None
    assert run.error["code"] == "BUDGET_EXCEEDED"
    assert len(fake_llm.requests) == 1
