"""Pure parts of the kernel package: interpolation, summaries, rendering, the dispatcher."""

from __future__ import annotations

import io
import threading
from typing import Any

import pytest

from agi_jupyter.kernel.agi_cell import extract_code, parse_json
from agi_jupyter.kernel.dispatch import MainThreadDispatcher
from agi_jupyter.kernel.interpolate import context_block, interpolate, summarize
from agi_jupyter.kernel.live import TerminalPrinter
from agi_jupyter.kernel.python_tool import run_in_namespace
from agi_jupyter.kernel.render import RunView, ToolBlock, tool_text
from agi_jupyter.kernel.tables import Table


def test_interpolation_forms_and_literals() -> None:
    ns: dict[str, Any] = {"a": 1, "obj": type("O", (), {"attr": "deep"})(), "In": ["", "x = 1"]}
    ns["Out"] = {1: [1, 2]}
    errors = {2: "KeyError: 'k'"}
    template = "{a} {obj.attr} {In[1]} {Out[1]} {Err[2]} {In[9]} {Out[5]} {Err[1]} {b} {a.b} {}"
    assert interpolate(template, ns, errors) == (
        "1 deep x = 1 [1, 2] KeyError: 'k' {In[9]} {Out[5]} {Err[1]} {b} {a.b} {}"
    )
    assert interpolate('/tool fs_read {"path": "x"}', ns, {}) == '/tool fs_read {"path": "x"}'
    assert interpolate("{s}", {"s": "y" * 50}, {}, max_chars=10).startswith("yyyyyyyyyy [...")


def test_summaries() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("nope")

    class Array:
        shape = (2, 3)
        dtype = "float64"

    assert "repr: <failed: RuntimeError: nope>" in summarize("b", Broken())
    assert "shape: (2, 3)\ndtype: float64" in summarize("arr", Array())
    assert "len: 2" in summarize("d", {"a": 1, "b": 2})
    block = context_block(["d", "missing"], {"d": {}})
    assert block.startswith("## Notebook variables")
    assert "`missing`\nnot defined" in block


def test_code_and_json_extraction() -> None:
    assert extract_code("a\n```python\nx = 1\n```\nb\n```\ny = 2\n```") == "x = 1\n\ny = 2"
    assert extract_code("  just code  ") == "just code"
    assert parse_json('text ```json\n{"a": [1]}\n```') == {"a": [1]}
    assert parse_json("[1, 2]") == [1, 2]
    with pytest.raises(ValueError, match="no JSON"):
        parse_json("nope")


def test_run_in_namespace_reports_names_output_and_errors() -> None:
    ns: dict[str, Any] = {"keep": 1, "rebind": [1]}
    report = run_in_namespace("new = 2\nrebind = [2]\nprint('out')\nnew + keep", ns)
    assert (report.stdout, report.result, report.error) == ("out\n", "3", None)
    assert (report.created, report.changed) == (["new"], ["rebind"])
    failed = run_in_namespace("z = 1\nraise SystemExit(3)", ns)
    assert failed.error is not None
    assert failed.error.startswith("SystemExit: 3 (line 2)")
    assert failed.created == ["z"]
    syntax = run_in_namespace("def (:", ns)
    assert syntax.error is not None
    assert "SyntaxError" in syntax.error
    assert "names: none created or changed" in syntax.to_output()


EVENTS: list[dict[str, Any]] = [
    {"type": "run.meta", "run_id": "run_1", "seq": 1, "session_id": "ses_1", "agent": "build",
     "provider": "fake", "model": "echo"},
    {"type": "run.status", "run_id": "run_1", "seq": 2, "status": "running"},
    {"type": "iteration", "run_id": "run_1", "seq": 3, "iteration": 1, "max_iterations": 5},
    {"type": "output.text.delta", "run_id": "run_1", "seq": 4, "delta": "Let me "},
    {"type": "output.text.delta", "run_id": "run_1", "seq": 5, "delta": "patch."},
    {"type": "output.text.done", "run_id": "run_1", "seq": 6, "text": "Let me patch."},
    {"type": "tool.call.started", "run_id": "run_1", "seq": 7, "tool_call_id": "c1",
     "name": "apply_patch"},
    {"type": "tool.call.arguments.done", "run_id": "run_1", "seq": 8, "tool_call_id": "c1",
     "arguments": {"patch": "..."}},
    {"type": "tool.call.output", "run_id": "run_1", "seq": 9, "tool_call_id": "c1",
     "name": "apply_patch", "ok": True, "output": "M a.py (+1 -1)", "status": "completed",
     "artifact": {"id": "art_1", "kind": "file_diff"}},
    {"type": "usage", "run_id": "run_1", "seq": 10, "input_tokens": 5, "output_tokens": 3,
     "cost_usd": 0.0012},
    {"type": "iteration", "run_id": "run_1", "seq": 11, "iteration": 2, "max_iterations": 5},
    {"type": "output.text.done", "run_id": "run_1", "seq": 12, "text": "Done ```x```."},
    {"type": "run.final", "run_id": "run_1", "seq": 13, "run": {"status": "succeeded"}},
]  # fmt: skip


def test_run_view_renders_text_tool_blocks_diff_and_footer() -> None:
    view = RunView(
        load_artifact=lambda artifact_id: f"--- a.py\n+++ a.py\n-old\n+new ({artifact_id})"
    )
    for event in EVENTS:
        view.apply(event)
    assert view.text == "Done ```x```."
    assert view.done
    markdown = view.to_markdown()
    assert markdown.startswith("Let me patch.\n\n<details><summary>✓ <code>apply_patch</code>")
    assert "```diff\n--- a.py\n+++ a.py\n-old\n+new (art_1)\n```" in markdown
    assert "**output**\n\n```\nM a.py (+1 -1)\n```" in markdown
    assert "<sub>fake:echo · build · 5 in / 3 out tokens · $0.0012 · run_1</sub>" in markdown
    text = view.to_text()
    assert "[tool apply_patch completed]" in text
    assert text.endswith("[fake:echo · build · 5 in / 3 out tokens · $0.0012 · run_1]")


def test_run_view_shows_progress_errors_and_replays() -> None:
    view = RunView()
    view.apply(EVENTS[0])
    assert view.footer().endswith("starting…")
    view.apply({"type": "error", "code": "X", "message": "retrying", "retryable": True})
    assert view.error is None
    view.apply({"type": "error", "code": "RUN_CANCELLED", "message": "stopped"})
    view.apply({"type": "run.final", "run": {"status": "cancelled", "replayed_from": "run_0"}})
    assert "**Error** — RUN\\_CANCELLED: stopped" in view.to_markdown()
    assert view.footer().endswith("· run_0 · cancelled")  # a replay shows the recorded run
    assert "cost ?" in view.footer()  # unknown, never $0


def test_run_view_of_a_cancelled_run_shows_its_partial_answer_and_cancelled_tools() -> None:
    view = RunView()
    partial = {"role": "assistant", "text": "half an ans", "meta": {"partial": True}}
    for event in [
        {
            "type": "run.meta",
            "run_id": "run_9",
            "provider": "fake",
            "model": "echo",
            "agent": "build",
        },
        {"type": "tool.call.started", "tool_call_id": "c1", "name": "shell.run"},
        {
            "type": "tool.call.output",
            "tool_call_id": "c1",
            "name": "shell.run",
            "ok": False,
            "output": "cancelled",
            "status": "cancelled",
        },
        {"type": "iteration", "iteration": 2},
        {"type": "message.completed", "message": partial},  # deltas were not stored
        {"type": "run.final", "run": {"status": "cancelled"}},
    ]:
        view.apply(event)
    assert view.text == "half an ans"
    markdown = view.to_markdown()
    assert "■ <code>shell.run</code> cancelled" in markdown
    assert view.footer().endswith("· cancelled · partial answer")


def test_run_view_says_a_hosted_tool_was_run_by_the_provider() -> None:
    view = RunView()
    for event in [
        {"type": "tool.call.started", "tool_call_id": "ws_1", "name": "web_search"}
        | {"tool_type": "hosted"},
        {"type": "tool.call.arguments.done", "tool_call_id": "ws_1", "arguments": {"q": "x"}},
        {
            "type": "tool.call.output",
            "tool_call_id": "ws_1",
            "name": "web_search",
            "ok": True,
            "output": "https://jupyter.org",
            "status": "completed",
        },
    ]:
        view.apply(event)
    (block,) = [s for s in view.segments if isinstance(s, ToolBlock)]
    assert tool_text(block).startswith("[tool web_search completed · run by the provider]")
    assert "<code>web_search</code> completed · run by the provider" in view.to_markdown()


def test_terminal_printer_streams_text_and_tool_lines() -> None:
    view = RunView()
    out = io.StringIO()
    printer = TerminalPrinter(view, out)
    for event in EVENTS:
        view.apply(event)
        printer.event(event)
    printed = out.getvalue()
    assert printed.startswith("Let me patch.\n[tool apply_patch completed]")
    assert "Done ```x```." in printed
    assert printed.rstrip().endswith("run_1]")


def test_run_view_and_terminal_take_back_what_a_reset_discards() -> None:
    view = RunView()
    out = io.StringIO()
    printer = TerminalPrinter(view, out)
    for event in [
        EVENTS[0],
        {"type": "iteration", "iteration": 1},
        {"type": "reasoning.delta", "delta": "think"},
        {"type": "output.text.delta", "delta": "half an "},
        {"type": "error", "code": "PROVIDER_ERROR", "message": "dropped", "retryable": True},
        {
            "type": "output.text.reset",
            "attempt": 2,
            "discarded_chars": 8,
            "discarded_reasoning_chars": 5,
        },
        {"type": "iteration", "iteration": 1},
        {"type": "output.text.delta", "delta": "whole answer"},
        {"type": "output.text.done", "text": "whole answer"},
    ]:
        view.apply(event)
        printer.event(event)
    assert view.text == "whole answer"
    assert view.reasoning == ""
    assert view.to_markdown().startswith("whole answer\n\n<sub>")
    printed = out.getvalue()
    assert "[retrying: attempt 2 answers again; the 8 characters above are discarded]" in printed
    assert printed.endswith("discarded]\nwhole answer")


def test_tables_render_text_and_html() -> None:
    table = Table(["id", "text"], [["a", "x" * 100], ["<b>", None]], title="T", note="n")
    text = table.to_text()
    assert text.splitlines()[0] == "T"
    assert "…" in text
    assert "&lt;b&gt;" in table._repr_html_()
    assert "(none)" in Table(["a"], []).to_text()


def test_dispatcher_runs_work_on_the_thread_that_drains() -> None:
    dispatcher = MainThreadDispatcher()
    woken = threading.Event()
    results: list[Any] = []

    def worker() -> None:
        future = dispatcher.submit(lambda: threading.current_thread().name)
        results.append(future.result(timeout=5))

    with dispatcher.waiting(woken.set):
        thread = threading.Thread(target=worker, name="runtime")
        thread.start()
        assert woken.wait(5)
        dispatcher.drain()
        thread.join(5)
    assert results == [threading.main_thread().name]


def test_dispatcher_skips_cancelled_work_and_reports_errors() -> None:
    dispatcher = MainThreadDispatcher()
    ran: list[str] = []
    cancelled: list[Any] = []
    failing: list[Any] = []

    def submit() -> None:
        cancelled.append(dispatcher.submit(lambda: ran.append("cancelled")))
        failing.append(dispatcher.submit(lambda: 1 / 0))

    thread = threading.Thread(target=submit)
    thread.start()
    thread.join(5)
    assert cancelled[0].cancel()
    dispatcher.drain()
    assert ran == []
    with pytest.raises(ZeroDivisionError):
        failing[0].result(timeout=1)


def test_dispatcher_uses_the_captured_event_loop_when_idle() -> None:
    import asyncio

    dispatcher = MainThreadDispatcher()

    async def main() -> str:
        dispatcher.capture_loop()
        future = await asyncio.to_thread(
            lambda: dispatcher.submit(lambda: threading.current_thread().name)
        )
        return str(await asyncio.wait_for(asyncio.wrap_future(future), 5))

    assert asyncio.run(main()) == threading.main_thread().name
