"""``%%agi`` / ``%agi`` in an in-process IPython shell against the fake LLM server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.kernel.conftest import RunCell


def test_cell_streams_markdown_and_returns_a_run_result(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(chunks=["Hello ", "from ", "the ", "model."], usage=(10, 4)))
    run = cell("%%agi\nSay hello", cell_id="cell-1")

    assert run.error is None
    result = run.value
    assert result.text == "Hello from the model."
    assert result.run.status == "succeeded"
    assert result.usage["input_tokens"] == 10
    # a status line at once in an output area with no data (nothing for nbval to compare),
    # the answer streamed into it, the area cleared, then the final answer: the only output
    first, status, *rest = run.published
    assert (first["data"], first["update"]) == ({}, False)
    assert status["update"]
    assert status["data"]["text/markdown"] == "<sub>agi · starting…</sub>"
    updates = [o for o in rest if o.get("update")]
    assert len(updates) >= 4
    assert any("running…" in o["data"]["text/plain"] for o in updates)
    assert rest[-2] == {"clear": True, "wait": True}
    assert not rest[-1]["update"]
    assert [o["data"] for o in run.outputs] == [rest[-1]["data"]]
    assert run.outputs[0]["metadata"] == {"agi": {"run_id": result.run_id}}
    final = run.outputs[-1]["data"]
    assert final["text/markdown"].startswith("Hello from the model.")
    assert "fake:echo · general · 10 in / 4 out tokens" in final["text/plain"]
    assert result.run_id in final["text/markdown"]
    # the run records where it came from
    stored = ctx.agi.run(result.run_id)
    assert (stored.cell_id, stored.execution_count, stored.execution_mode) == (
        "cell-1",
        1,
        "kernel",
    )
    assert stored.request_hash
    # the value is the cell's result, shown once (no duplicate display)
    again = cell("_.text")
    assert again.value == "Hello from the model."


def test_interpolation_of_variables_inputs_outputs_and_errors(
    cell: RunCell, fake_llm: FakeLLMServer
) -> None:
    cell("n = 41")  # In[1]
    cell("n + 1")  # In[2], Out[2] = 42
    cell("1 / 0")  # In[3], Err[3]
    run = cell('%%agi\nvar={n} in={In[1]} out={Out[2]} err={Err[3]} missing={nope} json={"a": 1}')
    prompt = run.value.text.removeprefix("(offline fake model) echo: ")
    assert prompt.startswith("var=41 in=n = 41 out=42 err=")
    assert "ZeroDivisionError: division by zero" in prompt
    assert prompt.endswith('missing={nope} json={"a": 1}')
    sent = json.dumps(fake_llm.requests[-1].body)
    assert "var=41" in sent


def test_context_option_describes_variables(cell: RunCell, fake_llm: FakeLLMServer) -> None:
    cell("items = [1, 2, 3]\nclass Frame:\n    pass")
    cell(
        "class FakeFrame:\n"
        "    shape = (2, 1)\n"
        "    columns = ['a']\n"
        "    dtypes = {'a': 'int64'}\n"
        "    def head(self, n):\n"
        "        return self\n"
        "    def to_string(self):\n"
        "        return 'a\\n1\\n2'\n"
        "df = FakeFrame()"
    )
    run = cell("%%agi -c items,df,ghost\nDescribe my data")
    text = run.value.text
    assert "## Notebook variables" in text
    assert "`items` (list)" in text
    assert "len: 3" in text
    assert "shape: (2, 1)" in text
    assert "a: int64" in text
    assert "`ghost`\nnot defined" in text


def test_formats(cell: RunCell, shell: Any, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Turn(text="Here:\n```python\nprint('hi')\n```\nDone."))
    code = cell("%%agi -f code\nwrite code")
    assert code.value.value == "print('hi')"
    assert shell.rl_next_input == "print('hi')"

    fake_llm.enqueue(Turn(text='```json\n{"answer": 42}\n```'))
    as_json = cell("%%agi -f json\nanswer as json")
    assert as_json.value.value == {"answer": 42}
    assert any(o["data"].get("application/json") == {"answer": 42} for o in as_json.outputs)

    fake_llm.enqueue(Turn(text="**plain**"))
    text = cell("%%agi -f text --no-stream\nplain please")
    statuses = [o["data"]["text/plain"] for o in text.published if o.get("update")]
    assert statuses
    assert all(status.startswith("[") for status in statuses)  # the status line only
    assert len(text.outputs) == 1
    assert "text/markdown" not in text.outputs[-1]["data"]
    assert text.outputs[-1]["data"]["text/plain"].startswith("**plain**")

    fake_llm.enqueue(Turn(text="not json"))
    bad = cell("%%agi -f json\nanswer")
    assert bad.value.value is None
    assert "not valid JSON" in bad.stderr


def test_bad_options_print_usage_without_traceback(cell: RunCell, fake_llm: FakeLLMServer) -> None:
    for line in ("%%agi --bogus", "%%agi -f yaml", "%%agi --max-iterations x", '%%agi -m "open'):
        run = cell(line + "\nhello")
        assert run.error is None, line
        assert run.value is None
        assert "usage: %%agi [-a AGENT]" in run.stderr
        assert "Traceback" not in run.stderr + run.stdout
    empty = cell("%%agi\n   ")
    assert "the prompt is empty" in empty.stderr
    unknown_agent = cell("%%agi -a nobody\nhi")
    assert "unknown agent 'nobody'" in unknown_agent.stderr
    sdk_without_new = cell("%%agi --sdk claude\nhi")
    assert "--sdk applies to a new session: add --new" in sdk_without_new.stderr
    assert fake_llm.requests == []


def test_python_tool_changes_the_namespace_and_reports_names(
    cell: RunCell, shell: Any, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    cell("base = 10\nseen = 'old'")
    code = "total = base * 5\nseen = 'new'\nprint('total is', total)\ntotal + 1"
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("python", {"code": code})]),
        Turn(text="Computed."),
    )
    run = cell("%%agi -a build\ncompute")
    assert run.value.text == "Computed."
    assert shell.user_ns["total"] == 50
    assert shell.user_ns["seen"] == "new"
    (call,) = ctx.agi.store.list_tool_calls(run_id=run.value.run_id)
    assert (call.name, call.status) == ("python", "completed")
    output = call.result["output"]
    assert "stdout:\ntotal is 50" in output
    assert "result: 51" in output
    assert "names: created total; changed seen" in output
    markdown = run.outputs[-1]["data"]["text/markdown"]
    assert "<details><summary>✓ <code>python</code> completed</summary>" in markdown
    assert "```python\ntotal = base * 5" in markdown


def test_python_tool_errors_are_returned_to_the_model(
    cell: RunCell, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("python", {"code": "x = 1\nraise ValueError('boom')"})]),
        Turn(text="It failed."),
    )
    run = cell("%%agi -a build\ntry it")
    assert run.error is None
    assert run.value.text == "It failed."
    body = json.dumps(fake_llm.requests[-1].body)
    assert "ValueError: boom (line 2)" in body
    assert "names: created x" in body


def test_python_tool_is_not_offered_without_the_kernel_feature(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    cell("%%agi -a build\nhi")
    offered = json.dumps(fake_llm.requests[-1].body.get("tools"))
    assert '"python"' in offered
    assert "python" in [t.name for t in ctx.agi.tools("build")]
    assert "python" not in [t.name for t in ctx.agi.tools("plan")]


def test_sessions_and_options(cell: RunCell, ctx: Any, fake_llm: FakeLLMServer) -> None:
    first = cell("%%agi\none").value
    second = cell("%%agi -m fake:other --max-iterations 2 --thinking low\ntwo").value
    assert first.session_id == second.session_id == ctx.session_id
    assert (second.run.model, second.run.thinking_level) == ("other", "low")
    assert fake_llm.requests[-1].body["model"] == "other"
    third = cell("%%agi --new -a plan\nthree").value
    assert third.session_id != first.session_id
    assert ctx.agi.session(third.session_id).agent == "plan"
    fourth = cell(f"%%agi -s {first.session_id} -t fs.read\nfour").value
    assert fourth.session_id == first.session_id
    assert ctx.session_id == third.session_id  # -s is for one cell
    assert ctx.agi.session(first.session_id).tool_config["extra_tools"] == ["fs.read"]


def test_an_agent_option_is_for_its_cell_only(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    first = cell("%%agi\none").value
    session = ctx.agi.session(ctx.session_id)
    assert session.agent == "general"
    build = cell("%%agi -a build\ntwo").value
    assert build.run.agent == "build"
    assert '"fs_write"' in json.dumps(fake_llm.requests[-1].body.get("tools"))
    assert ctx.agi.session(ctx.session_id).agent == "general"  # the session kept its agent
    third = cell("%%agi\nthree").value
    assert third.run.agent is None
    assert "tools" not in fake_llm.requests[-1].body  # general: no tools offered
    assert first.session_id == build.session_id == third.session_id
    meta = next(e for e in ctx.agi.follow(build.run_id) if e["type"] == "run.meta")
    assert meta["agent"] == "build"


def test_use_gives_a_session_of_no_notebook_to_this_notebook(
    cell: RunCell, ctx: Any, shell: Any, project: Any
) -> None:
    shell.magics_manager.registry["AgiMagics"].notebook_path = str(project / "nb.ipynb")
    panel = ctx.agi.new_session(title="made in the panel")
    other = ctx.agi.new_session(notebook_path="other.ipynb")
    cell(f"%agi use {panel.id}")
    assert ctx.agi.session(panel.id).notebook_path == "nb.ipynb"  # the panel follows it here
    cell(f"%agi use {other.id}")
    assert ctx.agi.session(other.id).notebook_path == "other.ipynb"  # never taken from another
    assert ctx.session_id == other.id


def test_line_magic_commands(cell: RunCell, ctx: Any, fake_llm: FakeLLMServer) -> None:
    result = cell("%%agi\nhello").value
    sessions = cell("%agi sessions").value
    assert result.session_id in sessions.to_text()
    assert "<table>" in sessions._repr_html_()
    history = cell("%agi history").value
    assert [row[0] for row in history.rows] == ["user", "assistant"]
    full = cell("%agi history --full").value
    assert {row[1] for row in full.rows} == {"text"}
    runs = cell("%agi runs").value
    assert runs.rows[0][0] == result.run_id
    shown = cell(f"%agi show {result.run_id}").value
    assert shown._repr_mimebundle_()[0]["text/markdown"].startswith("(offline fake model) echo")
    assert "general" in cell("%agi agents").value.to_text()
    assert "python" in cell("%agi tools build").value.to_text()
    assert "fake:echo" in cell("%agi models").value.note
    assert "default model:    fake:echo" in cell("%agi config").value.text
    assert ["sessions", "1"] in cell("%agi stats").value.rows
    assert "%agi sessions" in cell("%agi help").value.text
    new = cell("%agi new --agent plan")
    assert "new session" in new.stdout
    assert ctx.agi.session(ctx.session_id).agent == "plan"
    assert "native (default)" in cell("%agi sdks").value.to_text()
    refused = cell("%agi new --sdk claude")  # the default model (fake:echo) is no Claude model
    assert "the claude SDK cannot run fake:echo" in refused.stderr
    on_claude = cell("%agi new --sdk claude --model anthropic:claude-sonnet-4-6")
    assert "sdk claude" in on_claude.stdout
    assert ctx.agi.session(ctx.session_id).sdk == "claude"
    assert "claude" in [row[5] for row in cell("%agi sessions").value.rows]
    assert "invalid choice" in cell("%agi new --sdk pi").stderr
    cell("%agi new")
    used = cell(f"%agi use {result.session_id}")
    assert ctx.session_id == result.session_id
    assert "now uses session" in used.stdout
    finished = cell(f"%agi cancel {result.run_id}")
    assert "has already ended" in finished.stderr
    for bad in ("%agi frobnicate", "%agi use", "%agi show run_nope"):
        run = cell(bad)
        assert run.error is None
        assert run.stderr.startswith("agi: ")


def test_background_run_returns_at_once_and_can_be_awaited(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(Turn(text="later", chunks=["la", "ter"]))
    run = cell("%%agi --background\nslow one")
    assert run.value is None
    waited = cell("%agi wait").value
    assert waited.text == "later"
    assert not ctx.background
    assert "no background runs" in cell("%agi wait").stdout


def test_terminal_ipython_prints_the_stream_and_text_tables(
    cell: RunCell, monkeypatch: Any, fake_llm: FakeLLMServer
) -> None:
    import agi_jupyter.kernel.agi_cell as cell_module
    import agi_jupyter.kernel.commands as commands_module
    import agi_jupyter.kernel.magics as magics_module

    for module in (cell_module, commands_module, magics_module):
        monkeypatch.setattr(module, "is_terminal", lambda shell: True)
    fake_llm.enqueue(Turn(chunks=["stream", "ed ", "text"]))
    run = cell("%%agi\nhello terminal")
    assert run.outputs == []  # no display handles: printed as it streams
    assert run.stdout.startswith("streamed text\n")
    assert "[fake:echo · general" in run.stdout
    assert run.value.text == "streamed text"
    shown = cell(f"%agi show {run.value.run_id}").value
    assert shown.text.startswith("streamed text")
    assert cell("%agi runs").value.to_text().startswith("Runs of ses_")


def test_research_queues_a_deep_research_run_and_renders_its_report(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer, monkeypatch: Any
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-research-0001")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    ctx.settings.research_poll_interval = 0.05
    fake_llm.enqueue(
        Turn(text="# Findings\n\nThe sky is blue.", citations=[("https://example.org/sky", "Sky")])
    )
    queued = cell("%%agi --research\nWhy is the sky blue?")
    assert queued.error is None
    assert queued.value is None
    waited = cell("%agi wait").value
    assert "The sky is blue." in waited.text
    run = waited.run
    assert (run.type, run.status) == ("deep_research", "succeeded")
    (artifact,) = ctx.agi.store.list_artifacts(run_id=run.id)
    assert artifact.kind == "deep_research_report"
    create = next(r for r in fake_llm.requests if r.path.endswith("/responses"))
    assert (create.body or {}).get("background") is True


def test_research_without_an_openai_key_is_a_one_line_error(
    cell: RunCell, fake_llm: FakeLLMServer
) -> None:
    result = cell("%%agi --research\nanything")
    assert result.error is None
    assert "OPENAI_API_KEY" in result.stderr
    assert "Traceback" not in result.stderr


def test_wait_after_the_background_run_ended_still_returns_it(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    import time

    fake_llm.enqueue(Turn(text="done already"))
    cell("%%agi --background\nquick one")
    (thread,) = ctx.background.values()
    deadline = time.monotonic() + 20
    while thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not thread.is_alive()
    waited = cell("%agi wait").value
    assert waited.text == "done already"
    assert not ctx.background


def test_agi_tools_lists_mcp_tools_with_their_server_and_failed_servers(
    cell: RunCell, project: Any
) -> None:
    from tests.mcp.helpers import stdio_entry, write_mcp_json

    write_mcp_json(project, {"tools": stdio_entry(), "broken": stdio_entry("crashing.py")})
    table = cell("%agi tools build").value
    rows = {row[0]: row for row in table.rows}
    assert rows["mcp.tools.add"][1] == "Add two numbers."
    assert rows["mcp.tools.add"][-1] == "mcp:tools"
    assert "MCP server broken failed" in table.note
    assert "cannot open the database" in table.note


def test_a_session_budget_from_the_magic_stops_a_cell_and_shows_in_the_footer(
    cell: RunCell, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    new = cell("%agi new --max-tokens 100")
    assert "session budget: 0/100 tokens (100 tokens left)" in new.stdout
    assert ctx.agi.session(ctx.session_id).budget == {"max_tokens": 100}
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_list", {"path": "."})], usage=(50, 10)),
        Turn(text="never asked for", usage=(70, 5)),
    )

    run = cell("%%agi\nlist the files")

    assert run.value.run.error["code"] == "BUDGET_EXCEEDED"
    final = run.outputs[-1]["data"]
    assert "**Error** — BUDGET\\_EXCEEDED: session budget: 60/100 tokens" in final["text/markdown"]
    assert "· session budget: 60/100 tokens" in final["text/plain"]
    assert len(fake_llm.requests) == 1
    shown = cell("%agi budget")
    assert "agi: session budget: 60/100 tokens (40 tokens left)" in shown.stdout
    assert "invalid budget" in cell("%agi new --max-tokens 0").stderr
    raised = cell("%agi budget --max-tokens 500")
    assert "agi: session budget: 60/500 tokens (440 tokens left)" in raised.stdout
    assert "no budget applies" in cell("%agi budget --none").stdout
    assert ctx.agi.session(ctx.session_id).budget is None


def test_models_lists_a_local_servers_models(
    cell: RunCell, project: Path, fake_llm: FakeLLMServer
) -> None:
    config = {"providers": {"compat": {"base_url": fake_llm.openai_base_url}}}
    (project / ".agi" / "config.json").write_text(json.dumps(config))
    table = cell("%agi models").value
    assert ["compat:gpt-fake", "", "", "", "served"] in table.rows


def test_the_magic_sets_the_notebooks_budget_for_every_process(
    cell: RunCell, ctx: Any, shell: Any, project: Path, fake_llm: FakeLLMServer
) -> None:
    shell.user_ns["__session__"] = str(project / "work" / "nb.ipynb")
    cell("%agi new")
    set_ = cell("%agi budget --notebook --max-tokens 50")
    assert "agi: notebook work/nb.ipynb budget: 0/50 tokens (50 tokens left)" in set_.stdout
    assert ctx.agi.store.notebook_budgets() == {"work/nb.ipynb": {"max_tokens": 50}}
    fake_llm.enqueue(Turn(text="one", usage=(40, 10)))
    assert cell("%%agi\none").value.run.status == "succeeded"

    refused = cell("%%agi\ntwo")

    assert refused.value.run.error["code"] == "BUDGET_EXCEEDED"
    assert len(fake_llm.requests) == 1
    assert "no budget applies" in cell("%agi budget --notebook --none").stdout
    assert ctx.agi.store.notebook_budgets() == {}
