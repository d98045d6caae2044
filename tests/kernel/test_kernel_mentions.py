"""``@var name`` and ``@file path`` written in a ``%%agi`` cell or the chat widget's text box:
resolved from this kernel's namespace and the project, stored with the user message and sent
to the model (``agi_jupyter/mentions.py``, the resolver the server uses for the panel)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from agi_jupyter.records import MentionPart
from agi_jupyter.testing import FakeLLMServer, Turn
from tests.kernel.conftest import RunCell


def _mentions(ctx: Any) -> list[tuple[str, str]]:
    return [
        (p.kind, p.ref)
        for m in ctx.agi.messages(ctx.session_id)
        for p in m.parts
        if isinstance(p, MentionPart)
    ]


def test_an_agi_cell_sends_a_var_mention_s_schema(
    cell: RunCell, shell: Any, ctx: Any, fake_llm: FakeLLMServer
) -> None:
    shell.user_ns["sales"] = pd.DataFrame({"units": [3, 4], "region": ["n", "s"]})
    fake_llm.enqueue(Turn(text="units are int64"))
    run = cell("%%agi\nwhat types has @var sales?")
    assert "units are int64" in run.stdout + json.dumps(run.outputs)
    sent = json.dumps(fake_llm.requests[-1].body)
    for schema in ("shape: (2, 2)", "units: int64", "region: ", "head(5)"):
        assert schema in sent, schema
    assert _mentions(ctx) == [("var", "sales")]

    unknown = cell("%%agi\nand @var nowhere?")
    assert "@var nowhere: no such variable" in unknown.stderr + unknown.stdout
    assert len(fake_llm.requests) == 1, "a mention that names nothing sends nothing"


@pytest.fixture
def dummy_comm() -> Iterator[None]:
    from ipywidgets.widgets.tests.utils import setup_test_comm, teardown_test_comm

    setup_test_comm()
    yield
    teardown_test_comm()


def test_the_widget_resolves_file_and_var_mentions(
    shell: Any, ctx: Any, project: Path, dummy_comm: None, fake_llm: FakeLLMServer
) -> None:
    from agi_jupyter import chat

    (project / "notes.md").write_text("units are counted per week\n")
    shell.user_ns["weeks"] = [1, 2, 3]
    widget = chat()
    try:
        fake_llm.enqueue(Turn(text="ok"))
        widget.send_message("compare @file notes.md with @var weeks.")
        widget.wait(10)
    finally:
        widget.close()
    sent = json.dumps(fake_llm.requests[-1].body)
    assert "units are counted per week" in sent
    assert "len: 3" in sent
    assert "repr: [1, 2, 3]" in sent
    assert _mentions(ctx) == [("file", "notes.md"), ("var", "weeks")]
    assert widget.transcript[0]["text"] == "compare @file notes.md with @var weeks."
