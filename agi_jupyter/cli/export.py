"""``agi export SESSION --to notebook.ipynb``: a session as a plain Jupyter notebook.

Prompts and answers become Markdown cells, each tool call a code cell (the code of a ``python``
call, a ``%%bash`` cell for ``shell.run``, the arguments as a Python literal otherwise) with the
tool's result as its output. Provenance (session, runs, models, usage, ids) goes in the
notebook's and the cells' ``agi`` metadata. The notebook is validated by nbformat before it is
written.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from pprint import pformat
from typing import TYPE_CHECKING, Any

import click

from agi_jupyter.cli.common import open_agi, project_option
from agi_jupyter.errors import UsageError

if TYPE_CHECKING:
    from agi_jupyter.records import Message, Run, Session, ToolCallPart, ToolResultPart

RUN_FIELDS = (
    "id",
    "status",
    "provider",
    "model",
    "usage",
    "cost_usd",
    "created_at",
    "completed_at",
)


@click.command()
@click.argument("session_id", metavar="SESSION")
@click.option(
    "--to",
    "target",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The notebook to write (default: SESSION.ipynb; `-` for stdout).",
)
@click.option("--force", "-f", is_flag=True, help="Overwrite an existing file.")
@project_option
def export(session_id: str, target: Path | None, force: bool, project: Path | None) -> None:
    """Export a session as a notebook (.ipynb).

    Prompts and answers become Markdown cells, tool calls code cells with their output;
    provenance (session, runs, models, usage) goes in the metadata.
    """
    nbformat = _module("nbformat")
    target = target or Path(f"{session_id}.ipynb")
    if str(target) != "-" and target.exists() and not force:
        raise UsageError(f"{target} exists (use --force to overwrite it)")
    with open_agi(project) as agi:
        ses = agi.session(session_id)
        notebook = session_notebook(
            ses,
            agi.history(session_id, view="full", lazy=False),  # every part is written
            agi.runs(session_id, limit=1000).items,
            project=agi.project,
        )
    nbformat.validate(notebook)
    if str(target) == "-":
        sys.stdout.write(nbformat.writes(notebook) + "\n")
        return
    nbformat.write(notebook, str(target))
    click.echo(f"wrote {target} ({len(notebook.cells)} cells)", err=True)


def _module(name: str) -> Any:
    """nbformat, imported on use (its functions are untyped, hence ``Any``)."""
    import importlib

    return importlib.import_module(name)


def session_notebook(
    session: Session, messages: list[Message], runs: list[Run], *, project: Path
) -> Any:
    """The notebook (an ``nbformat`` v4 node) of a session's full history."""
    from agi_jupyter import __version__
    from agi_jupyter.records import ToolResultPart, utc_now

    results = {
        p.tool_call_id: p for m in messages for p in m.parts if isinstance(p, ToolResultPart)
    }
    v4 = _module("nbformat.v4")
    notebook = v4.new_notebook()
    notebook.metadata.update(
        {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
            "agi": {
                "session": asdict(session),
                "runs": [{k: getattr(r, k) for k in RUN_FIELDS} for r in reversed(runs)],
                "project": str(project),
                "exported_at": utc_now(),
                "exported_by": f"agi-jupyter {__version__}",
            },
        }
    )
    notebook.cells.append(v4.new_markdown_cell(_heading(session)))
    for message in messages:
        notebook.cells.extend(_cells(message, results))
    return notebook


def _heading(session: Session) -> str:
    model = f"{session.provider}:{session.model}" if session.provider else session.model
    return (
        f"# {session.title or session.id}\n\n"
        f"Session `{session.id}` · agent `{session.agent}` · model `{model}` · "
        f"started {session.created_at}"
    )


def _cells(message: Message, results: dict[str, ToolResultPart]) -> list[Any]:

    from agi_jupyter import records

    meta = {"agi": _provenance(message)}
    cells: list[Any] = []
    markdown: list[str] = []
    for part in message.parts:
        if isinstance(part, records.ToolCallPart):
            cells.extend(_flush(markdown, meta))
            cells.append(_tool_cell(part, results.get(part.tool_call_id), meta))
        elif message.role != "tool":
            markdown.append(_markdown(message.role, part))
    cells.extend(_flush(markdown, meta))
    if message.role == "user" and cells:
        cells[0].source = "**Prompt**\n\n" + cells[0].source
    return cells


def _flush(markdown: list[str], meta: dict[str, Any]) -> list[Any]:
    v4 = _module("nbformat.v4")
    text = "\n\n".join(m for m in markdown if m.strip())
    markdown.clear()
    return [v4.new_markdown_cell(text, metadata=meta)] if text else []


def _markdown(role: str, part: Any) -> str:
    from agi_jupyter import records

    if isinstance(part, records.TextPart):
        return part.text
    if isinstance(part, records.ReasoningPart) and part.text:
        return f"<details><summary>Reasoning</summary>\n\n{part.text}\n\n</details>"
    if isinstance(part, records.ErrorPart):
        return f"**Error** `{part.code}`: {part.message}"
    if isinstance(part, records.ArtifactRefPart):
        return f"Artifact `{part.artifact_id}` ({part.kind}) {part.title or ''}".rstrip()
    return ""


def _tool_cell(call: ToolCallPart, result: ToolResultPart | None, meta: dict[str, Any]) -> Any:
    v4 = _module("nbformat.v4")
    outputs = []
    if result is not None:
        text = result.output
        if result.artifact_id:
            text += f"\n(artifact {result.artifact_id})"
        name = "stderr" if result.is_error else "stdout"
        outputs.append(v4.new_output("stream", name=name, text=text))
    tool_meta = {
        "tool_call_id": call.tool_call_id,
        "name": call.name,
        "arguments": call.arguments,
        "is_error": result.is_error if result else None,
        "artifact_id": result.artifact_id if result else None,
    }
    return v4.new_code_cell(
        _tool_source(call),
        outputs=outputs,
        metadata={"agi": {**meta["agi"], "tool_call": tool_meta}},
    )


def _tool_source(call: ToolCallPart) -> str:
    args = call.arguments
    if call.name == "python" and isinstance(args.get("code"), str):
        return str(args["code"])
    if call.name == "shell.run" and isinstance(args.get("command"), str):
        return "%%bash\n" + str(args["command"])
    return f"# tool call: {call.name}\n{pformat(args, sort_dicts=False)}"


def _provenance(message: Message) -> dict[str, Any]:
    keep = ("provider", "model", "usage", "stop_reason")
    return {
        "role": message.role,
        "message_id": message.id,
        "run_id": message.run_id,
        "created_at": message.created_at,
        **{k: message.meta[k] for k in keep if k in message.meta},
    }
