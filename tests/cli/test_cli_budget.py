"""``agi budget``, the real ``agi`` as a process (on both store backends): shows spent, limit
and what is left of a session's budgets (the latest run's session by default) and of a
notebook's; sets, replaces and removes them; a budget set there stops the next run (exit 6);
bad usage exits 2 with one line; ``--server`` does the same over REST."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agi_jupyter.app import Agi
from agi_jupyter.cli.remote import ServerClient
from agi_jupyter.testing import FakeLLMServer, Turn
from tests.cli.conftest import run_agi
from tests.cli.test_cli_faults import serve  # noqa: F401 - the fixture


def _agi(*args: str) -> subprocess.CompletedProcess[str]:
    return run_agi(args, stdin=subprocess.DEVNULL)


def _ok(*args: str) -> str:
    done = _agi(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _asked(fake_llm: FakeLLMServer) -> str:
    """A session whose one run spent 60 tokens: its id."""
    fake_llm.enqueue(Turn(text="Hello.", usage=(50, 10)))
    _ok("hi")
    runs = json.loads(_ok("runs", "--json"))
    return str(runs[0]["session_id"])


def test_shows_sets_replaces_and_removes_the_latest_sessions_budget(
    fake_llm: FakeLLMServer, agi: Agi
) -> None:
    session_id = _asked(fake_llm)
    assert _ok("budget").strip() == f"no budget applies to session {session_id}"

    set_ = _ok("budget", "--max-tokens", "100", "--max-usd", "0.5")
    assert set_.startswith("session budget: 60/100 tokens, $")
    assert "(40 tokens, $0." in set_
    assert set_.rstrip().endswith(" left)")
    assert agi.session(session_id).budget == {"max_tokens": 100, "max_usd": 0.5}

    # replaced whole, as %agi budget does: the cost limit goes
    replaced = json.loads(_ok("budget", session_id, "--max-tokens", "200", "--json"))
    assert replaced["session_id"] == session_id
    assert replaced["budget"] == {"max_tokens": 200}
    (status,) = replaced["budgets"]
    assert (status["scope"], status["spent_tokens"], status["remaining_tokens"]) == (
        "session",
        60,
        140,
    )
    assert _ok("budget", session_id).strip() == ("session budget: 60/200 tokens (140 tokens left)")

    removed = _ok("budget", "--none")
    assert removed.strip() == f"no budget applies to session {session_id}"
    assert agi.session(session_id).budget is None


def test_a_budget_set_there_stops_the_next_run(fake_llm: FakeLLMServer) -> None:
    _asked(fake_llm)
    _ok("budget", "--max-tokens", "1")
    fake_llm.enqueue(Turn(text="Not asked.", usage=(5, 5)))

    stopped = _agi("-c", "again")

    assert stopped.returncode == 6, stopped.stderr
    assert "session budget: 60/1 tokens" in stopped.stderr
    assert len(fake_llm.requests) == 1  # refused before the model was called

    _ok("budget", "--none")
    assert _agi("-c", "again").returncode == 0
    assert len(fake_llm.requests) == 2


def test_a_sessions_notebook_budget_shows_with_its_own(agi: Agi, project: Path) -> None:
    (project / ".agi" / "config.json").write_text(
        json.dumps({"budgets": {"notebooks": {"a.ipynb": {"max_tokens": 1000}}}})
    )
    session = agi.new_session(notebook_path="a.ipynb", budget={"max_tokens": 500})
    agi.store.add_session_usage(session.id, input_tokens=7, output_tokens=3, cost_usd=0.0)

    shown = _ok("budget", session.id).splitlines()

    assert shown == [
        "session budget: 10/500 tokens (490 tokens left)",
        "notebook a.ipynb budget: 10/1000 tokens (990 tokens left)",
    ]


def test_notebook_budget_set_show_and_remove(agi: Agi) -> None:
    session = agi.new_session(notebook_path="analysis/report.ipynb")
    agi.store.add_session_usage(session.id, input_tokens=30, output_tokens=12, cost_usd=0.0)
    path = "analysis/report.ipynb"
    assert _ok("budget", "--notebook", path).strip() == f"no budget applies to notebook {path}"

    set_ = _ok("budget", "--notebook", f"./{path}", "--max-tokens", "100")
    assert set_.strip() == f"notebook {path} budget: 42/100 tokens (58 tokens left)"
    assert agi.notebook_budgets() == {path: {"max_tokens": 100}}
    shown = json.loads(_ok("budget", "--notebook", path, "--json"))
    assert shown["budget"] == {"max_tokens": 100}
    assert shown["budgets"][0]["remaining_tokens"] == 58
    # the session's view has its notebook's budget too
    assert f"notebook {path} budget: 42/100" in _ok("budget", session.id)

    assert _ok("budget", "--notebook", path, "--none").strip() == (
        f"no budget applies to notebook {path}"
    )
    assert agi.notebook_budgets() == {}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-tokens", "-5"], "-5 is not in the range x>=1"),
        (["--max-usd", "0"], "--max-usd"),
        (["--none", "--max-tokens", "5"], "give --none or --max-tokens/--max-usd, not both"),
        (["ses_nope"], "session 'ses_nope' not found"),
        (["ses_nope", "--notebook", "a.ipynb"], "give a SESSION or --notebook PATH, not both"),
        (["--notebook", ".", "--max-tokens", "5"], "needs the notebook's path"),
        ([], "there is no session yet"),
    ],
)
def test_bad_usage_exits_2(args: list[str], message: str) -> None:
    done = _agi("budget", *args)

    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert done.stdout == ""


@pytest.mark.slow
def test_over_a_server_the_same_view_and_changes(
    fake_llm: FakeLLMServer,
    agi: Agi,
    serve: Callable[[], tuple[Any, ServerClient]],  # noqa: F811 - the fixture
) -> None:
    session = agi.new_session(notebook_path="n.ipynb")
    agi.store.add_session_usage(session.id, input_tokens=50, output_tokens=10, cost_usd=0.0)
    _server, client = serve()
    remote = ("--server", client.base, "--token", str(client.token))

    assert _ok("budget", *remote).strip() == f"no budget applies to session {session.id}"
    assert _ok("budget", *remote, "--max-tokens", "100").strip() == (
        "session budget: 60/100 tokens (40 tokens left)"
    )
    assert agi.session(session.id).budget == {"max_tokens": 100}
    set_ = _ok("budget", *remote, "--notebook", "n.ipynb", "--max-tokens", "80")
    assert set_.strip() == "notebook n.ipynb budget: 60/80 tokens (20 tokens left)"
    assert agi.notebook_budgets() == {"n.ipynb": {"max_tokens": 80}}
    assert _ok("budget", *remote, session.id).splitlines() == [
        "session budget: 60/100 tokens (40 tokens left)",
        "notebook n.ipynb budget: 60/80 tokens (20 tokens left)",
    ]

    _ok("budget", *remote, session.id, "--none")
    _ok("budget", *remote, "--notebook", "n.ipynb", "--none")

    assert agi.session(session.id).budget is None
    assert agi.notebook_budgets() == {}
    unknown = _agi("budget", *remote, "ses_nope")
    assert unknown.returncode == 2, unknown.stderr
