"""The offline demo model (``fake:demo``): what a first answer without a provider key shows.

``fake:echo`` only repeats the prompt, which is right for tests and says nothing about the
product. ``fake:demo`` answers like a small agent would, deterministically and offline:

1. if the request offers ``fs.list`` and no tool has answered yet, it calls it on the project
   folder (the run then shows a tool call, its result, and a second model turn);
2. then (or when no tool is offered) it answers in Markdown: what it did, where the run is
   recorded, and how to get a real model.

``scripts/quickstart.sh`` uses it when no provider key is set.
"""

from __future__ import annotations

from agi_jupyter.testing.rules import last_user_text, trailing_tool_results
from agi_jupyter.testing.script import JSON, FakeToolCall, Turn

DEMO_MODEL = "demo"
PREFIX = "(offline demo model)"
LIST_TOOL = "fs_list"  # fs.list as tools are named on the wire
SHOWN_ENTRIES = 5
TOOLS_NOTE = (
    "1. **Tools.** Agents call tools: `-a plan` reads and searches files, `-a build` also "
    "writes and patches them and runs shell commands and Python."
)


def is_demo(body: JSON) -> bool:
    return body.get("model") == DEMO_MODEL


def demo_rule(protocol: str, body: JSON) -> Turn:
    results = trailing_tool_results(protocol, body)
    question = last_user_text(protocol, body).strip()
    if not results and LIST_TOOL in offered_tools(body):
        return Turn(tool_calls=[FakeToolCall(LIST_TOOL, {"path": "."})])
    listing = next((output for name, output in results if name == LIST_TOOL), None)
    return Turn(text=demo_answer(question, listing))


def offered_tools(body: JSON) -> set[str]:
    """The names of the tools a request offers (Chat Completions, Responses or Anthropic)."""
    names: set[str] = set()
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            function = tool.get("function")
            name = function.get("name") if isinstance(function, dict) else tool.get("name")
            if isinstance(name, str):
                names.add(name)
    return names


def demo_answer(question: str, listing: str | None) -> str:
    asked = f' ("{_one_line(question)}")' if question else ""
    lines = [
        f"{PREFIX} No provider key is set, so no real model answers your question{asked}. "
        "Here is what a run does instead:",
        "",
    ]
    if listing is not None:
        lines.append(
            "1. **A tool call.** I called `fs.list` on the project folder: " + _summary(listing)
        )
    else:
        lines.append(TOOLS_NOTE)
    lines += [
        "2. **A record.** This session, your message, every tool call with its result, and this "
        "answer are rows in `.agi/agi.sqlite` beside your work: `agi sessions`, then "
        "`agi show SESSION --full` shows them again.",
        "3. **Everywhere.** The same runs work from a notebook (`%load_ext agi_jupyter`, then "
        "`%%agi`), the JupyterLab side panel, and the REST API (`agi serve`).",
        "",
        "For a real answer: `export OPENAI_API_KEY=...` or `ANTHROPIC_API_KEY=...` "
        "(or run `agi setup`) and ask again.",
    ]
    return "\n".join(lines)


def _summary(listing: str) -> str:
    entries = [line.strip() for line in listing.splitlines() if line.strip()]
    if not entries:
        return "it is empty."
    shown = ", ".join(f"`{entry}`" for entry in entries[:SHOWN_ENTRIES])
    more = ", …" if len(entries) > SHOWN_ENTRIES else ""
    count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
    return f"{count} ({shown}{more})."


def _one_line(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
