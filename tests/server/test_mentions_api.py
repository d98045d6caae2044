"""``@`` mentions of a posted message: listed for the composer (``GET /mentions``), resolved
into bounded context parts stored with the message, shown in the history, sent to the model,
and sent again as they were stored (on SQLite and on PostgreSQL, as every server test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agi_jupyter.mentions import MAX_MENTIONS, MENTION_TOKENS, MENTIONS_TOKENS
from agi_jupyter.testing import FakeLLMServer, Turn
from tests.server.conftest import Fetch

FRAME = (
    "import pandas as pd\ndf = pd.DataFrame({'price': [1.5, 2.0, 3.25], 'city': ['a', 'b', 'c']})"
)


async def _kernel_with(jp_fetch: Any, jp_serverapp: Any, root: Path, code: str) -> None:
    """Open ``analysis.ipynb`` with a kernel (as JupyterLab would) and run ``code`` in it."""
    nbformat.write(nbformat.v4.new_notebook(), root / "analysis.ipynb")
    started = await jp_fetch(
        "api", "sessions", method="POST",
        body=json.dumps({"path": "analysis.ipynb", "type": "notebook", "name": "analysis.ipynb",
                         "kernel": {"name": "python3"}}),
    )  # fmt: skip
    kernel = jp_serverapp.kernel_manager.get_kernel(json.loads(started.body)["kernel"]["id"])
    client = kernel.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        reply = await client.execute_interactive(code, timeout=60)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()


def _sent(fake_llm: FakeLLMServer, index: int = -1) -> str:
    return json.dumps(fake_llm.requests[index].body)


@pytest.mark.slow
async def test_a_var_mention_sends_the_dataframe_schema_and_is_stored(
    fetch: Fetch, jp_fetch: Any, jp_serverapp: Any, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    await _kernel_with(jp_fetch, jp_serverapp, server_root, FRAME + "\nrate = 0.2")
    (server_root / "notes.md").write_text("# Notes\nprices are in euros\n")
    query = {"kind": "var", "q": "d", "notebook_path": "analysis.ipynb"}
    listed = await fetch("mentions", params=query)
    assert listed.status == 200, listed
    (frame,) = listed.data["items"]  # `rate` holds no "d"; modules are not listed
    assert frame["ref"] == "df"
    assert frame["type"].endswith("DataFrame")
    assert "shape (3, 2)" in frame["detail"]
    assert "price" in frame["detail"]
    files = await fetch("mentions", params={"kind": "file", "q": "note"})
    assert [f["ref"] for f in files.data["items"]] == ["notes.md"]

    session = await fetch("sessions", method="POST", json={})
    sid = session.data["session"]["id"]
    fake_llm.enqueue(Turn(text="prices average 2.25"), Turn(text="still"))
    mentions = [
        {"kind": "var", "ref": "df", "notebook_path": "analysis.ipynb"},
        {"kind": "file", "ref": "notes.md"},
    ]
    first = await fetch(
        "sessions", sid, "messages", method="POST",
        json={"content": "what is the mean price?", "mentions": mentions},
    )  # fmt: skip
    assert first.data["run"]["status"] == "succeeded", first
    sent = fake_llm.requests[0].body
    text = json.dumps(sent)
    for schema in ("shape: (3, 2)", "price: float64", "city: ", "head(5)"):
        assert schema in text, schema
    assert "prices are in euros" in text

    history = await fetch("sessions", sid, "history")  # the simple view shows mentions too
    (user, *_rest) = history.data["messages"]
    kinds = [(p["type"], p.get("kind"), p.get("ref")) for p in user["parts"]]
    assert kinds == [
        ("text", None, None), ("mention", "var", "df"), ("mention", "file", "notes.md")
    ]  # fmt: skip
    stored = user["parts"][1]["text"]

    # The variable changes; the next request sends the mention as it was stored.
    await _kernel_with(jp_fetch, jp_serverapp, server_root, "df = df.head(1)")
    second = await fetch("sessions", sid, "messages", method="POST", json={"content": "and now?"})
    assert second.data["run"]["status"] == "succeeded", second
    assert json.dumps(stored)[1:-1] in _sent(fake_llm), "the stored mention is sent again"


async def test_mention_bounds_and_missing_names_are_clear_errors(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    session = await fetch("sessions", method="POST", json={})
    sid = session.data["session"]["id"]
    big = "x = 1  # a line of code\n" * 2_000  # ~12,000 tokens
    for n in range(5):
        (server_root / f"big{n}.py").write_text(big)

    def post(mentions: list[dict[str, Any]]) -> Any:
        body = {"content": "look", "mentions": mentions, "run": False}
        return fetch("sessions", sid, "messages", method="POST", json=body)

    one = await post([{"kind": "file", "ref": "big0.py"}])
    assert one.status == 201, one
    (mention,) = [p for p in one.data["parts"] if p["type"] == "mention"]
    assert len(mention["text"]) <= MENTION_TOKENS * 4
    assert mention["text"].endswith("more characters left out]")

    many = await post([{"kind": "file", "ref": f"big{n}.py"} for n in range(5)])
    assert many.status == 413, many
    assert many.error["code"] == "MENTIONS_TOO_LARGE"
    assert str(MENTIONS_TOKENS) in many.error["message"]

    missing = await post([{"kind": "file", "ref": "nowhere.txt"}])
    assert (missing.status, missing.error["code"]) == (404, "MENTION_NOT_FOUND")
    (server_root.parent / "secret.txt").write_text("not for the model")
    outside = await post([{"kind": "file", "ref": "../secret.txt"}])
    assert (outside.status, outside.error["code"]) == (403, "PATH_OUTSIDE_PROJECT")
    no_kernel = await post([{"kind": "var", "ref": "df", "notebook_path": "none.ipynb"}])
    assert (no_kernel.status, no_kernel.error["code"]) == (404, "MENTION_NOT_FOUND")
    assert "no running kernel" in no_kernel.error["message"]
    which = await post([{"kind": "var", "ref": "df"}])  # a variable names its notebook
    assert (which.status, which.error["code"]) == (400, "VALIDATION_ERROR")
    query = {"kind": "var", "notebook_path": "none.ipynb"}
    assert (await fetch("mentions", params=query)).data == {"items": []}
    too_many = await post([{"kind": "file", "ref": "big0.py"}] * (MAX_MENTIONS + 1))
    assert (too_many.status, too_many.error["code"]) == (400, "VALIDATION_ERROR")
    assert fake_llm.requests == [], "nothing reached a model"
    run = await fetch(
        "sessions", sid, "runs", method="POST",
        json={"mentions": [{"kind": "file", "ref": "big0.py"}]},
    )  # fmt: skip
    assert (run.status, run.error["code"]) == (400, "VALIDATION_ERROR")  # mentions need an input


async def test_cell_and_notebook_mentions_read_the_notebook(
    fetch: Fetch, fake_llm: FakeLLMServer, server_root: Path
) -> None:
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("total = price.sum()")
    notebook.cells = [nbformat.v4.new_markdown_cell("# Prices"), cell]
    nbformat.write(notebook, server_root / "prices.ipynb")
    session = await fetch("sessions", method="POST", json={})
    fake_llm.enqueue(Turn(text="ok"))
    reply = await fetch(
        "sessions", session.data["session"]["id"], "runs:stream", method="POST",
        headers={"Accept": "application/json"},
        json={"input": "explain", "mentions": [
            {"kind": "cell", "ref": cell.id, "notebook_path": "prices.ipynb"},
            {"kind": "notebook", "ref": "prices.ipynb"},
        ]},
    )  # fmt: skip
    assert reply.data["run"]["status"] == "succeeded", reply
    text = _sent(fake_llm)
    assert f'ref=\\"prices.ipynb#{cell.id}\\"' in text
    assert "# Prices" in text
    assert "total = price.sum()" in text
    wrong = await fetch(
        "sessions", session.data["session"]["id"], "messages", method="POST",
        json={"content": "x", "run": False,
              "mentions": [{"kind": "cell", "ref": "nope", "notebook_path": "prices.ipynb"}]},
    )  # fmt: skip
    assert (wrong.status, wrong.error["code"]) == (404, "MENTION_NOT_FOUND")
    no_notebook = await fetch(
        "sessions", session.data["session"]["id"], "messages", method="POST",
        json={"content": "x", "run": False,
              "mentions": [{"kind": "notebook", "ref": "missing.ipynb"}]},
    )  # fmt: skip
    assert (no_notebook.status, no_notebook.error["code"]) == (404, "MENTION_NOT_FOUND")
