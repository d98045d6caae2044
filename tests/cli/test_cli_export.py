"""``agi export SESSION --to notebook.ipynb``: a valid notebook with the conversation in cells."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from agi_jupyter.app import Agi
from agi_jupyter.testing import FakeLLMServer, FakeToolCall, Turn
from tests.cli.conftest import RunCli


def test_export_writes_a_valid_notebook(
    run_cli: RunCli, agi: Agi, fake_llm: FakeLLMServer, project: Path
) -> None:
    fake_llm.enqueue(
        Turn(
            text="Let me check.",
            tool_calls=[FakeToolCall("shell_run", {"command": "echo hi"})],
            reasoning="The user wants a greeting.",
        ),
        Turn(text="It printed **hi**."),
    )
    ses = agi.new_session(agent="build", title="Greeting")
    run = agi.ask("Run echo hi", session=ses.id).run

    result = run_cli("export", ses.id, "--to", "greeting.ipynb")

    assert result.exit_code == 0, result.stderr
    assert "wrote greeting.ipynb" in result.stderr
    notebook = nbformat.read(str(project / "greeting.ipynb"), as_version=4)
    nbformat.validate(notebook)
    kinds = [(c.cell_type, c.source.splitlines()[0]) for c in notebook.cells]
    assert kinds == [
        ("markdown", "# Greeting"),
        ("markdown", "**Prompt**"),
        ("markdown", "<details><summary>Reasoning</summary>"),
        ("code", "%%bash"),
        ("markdown", "It printed **hi**."),
    ]
    code = notebook.cells[3]
    assert code.source == "%%bash\necho hi"
    assert code.outputs[0]["name"] == "stdout"
    assert "hi" in code.outputs[0]["text"]
    assert code.metadata["agi"]["tool_call"]["name"] == "shell.run"
    assert notebook.cells[1].source == "**Prompt**\n\nRun echo hi"
    assert "Let me check." in notebook.cells[2].source
    provenance = notebook.metadata["agi"]
    assert provenance["session"]["id"] == ses.id
    assert [r["id"] for r in provenance["runs"]] == [run.id]
    assert provenance["runs"][0]["provider"] == "fake"
    assert notebook.cells[4].metadata["agi"]["run_id"] == run.id
    assert notebook.cells[4].metadata["agi"]["model"] == "echo"


def test_other_tool_calls_become_python_literals(
    run_cli: RunCli, agi: Agi, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(
        Turn(tool_calls=[FakeToolCall("fs_read", {"path": "missing.txt", "offset": None})]),
        Turn(text="No such file."),
    )
    ses = agi.new_session(agent="plan")
    agi.ask("Read missing.txt", session=ses.id)

    result = run_cli("export", ses.id, "--to", "-")

    notebook = nbformat.reads(result.stdout, as_version=4)
    nbformat.validate(notebook)
    (code,) = [c for c in notebook.cells if c.cell_type == "code"]
    assert code.source == "# tool call: fs.read\n{'path': 'missing.txt', 'offset': None}"
    assert code.outputs[0]["name"] == "stderr"  # the tool failed
    assert code.metadata["agi"]["tool_call"]["is_error"] is True


def test_export_defaults_to_the_session_id_and_will_not_overwrite(
    run_cli: RunCli, agi: Agi, project: Path
) -> None:
    ses = agi.new_session()
    agi.ask("hello", session=ses.id)

    first = run_cli("export", ses.id)
    again = run_cli("export", ses.id)
    forced = run_cli("export", ses.id, "--force")

    path = project / f"{ses.id}.ipynb"
    assert first.exit_code == 0
    assert json.loads(path.read_text())["nbformat"] == 4
    assert again.exit_code == 2
    assert again.stderr == f"agi: {ses.id}.ipynb exists (use --force to overwrite it)\n"
    assert forced.exit_code == 0


def test_export_of_an_unknown_session(run_cli: RunCli, project: Path) -> None:
    result = run_cli("export", "ses_missing", "--to", "x.ipynb")

    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert not (project / "x.ipynb").exists()
