"""The ``agi`` group: a bare prompt is the default command, errors are one line on stderr.

``agi "what is in data.csv?"`` runs ``agi ask``: any first word that is not a command name (and
not ``--help`` / ``--version``) is taken as the prompt, so ``agi sessions`` lists sessions while
``agi "sessions please"`` asks the model. ``agi ask sessions`` asks about a word that is also a
command.

Exit codes: 0 success, 1 the run failed (or another error), 2 bad usage (also an id that names
nothing, a run that already ended), 3 configuration (a provider not configured, a malformed
config file, a token the server refuses), 4 ``agi undo`` left conflicts (cells or files changed
after the run, left as they are), 5 the run waits for an approval and there is no terminal to
ask on, 6 the run's budget is spent, 130 cancelled (Ctrl-C).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from agi_jupyter import __version__
from agi_jupyter.cli import (
    approve,
    ask,
    budget,
    catalog,
    executions,
    export,
    inspect,
    mcp,
    serve,
    setup,
    undo,
)
from agi_jupyter.cli.common import exit_code_for, fail
from agi_jupyter.errors import AgiError

_GROUP_OPTIONS = frozenset({"--help", "-h", "--version"})
DEFAULT_COMMAND = "ask"
# Options many commands take that may come before the command's name (``agi -p DIR cancel
# RUN``): those with a value, and flags.
_LEADING_VALUED = frozenset({"-p", "--project", "--server", "--token"})
_LEADING_FLAGS = frozenset({"--json"})


def _leading_options(args: list[str]) -> int:
    """How many of ``args``' first words are leading options (see above) and their values."""
    i = 0
    while i < len(args):
        word = args[i]
        name = word.split("=", 1)[0]
        if word in _LEADING_VALUED:
            i += 2
        elif name in _LEADING_VALUED or word in _LEADING_FLAGS:
            i += 1
        elif word.startswith("-p") and len(word) > 2 and not word.startswith("--"):
            i += 1  # -pDIR
        else:
            break
    return min(i, len(args))


class AgiGroup(click.Group):
    """Commands in the order they were added; an unknown first word means ``agi ask``.
    Leading options many commands take (``-p DIR``, ``--server``, ``--token``, ``--json``)
    may come before a command's name: ``agi -p DIR cancel RUN`` is ``agi cancel -p DIR RUN``,
    not a prompt."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        lead = _leading_options(args)
        if 0 < lead < len(args) and args[lead] in self.commands:
            args = [args[lead], *args[:lead], *args[lead + 1 :]]
        elif args and args[0] not in self.commands and args[0] not in _GROUP_OPTIONS:
            args = [DEFAULT_COMMAND, *args]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AgiError as e:
            fail(e.message, exit_code_for(e))


@click.group(
    cls=AgiGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "--version", prog_name="agi")
def cli() -> None:
    """A durable AI agent runtime for Jupyter, from the terminal.

    \b
      agi "What does analysis.py do?"        ask (the default command)
      agi -m anthropic:claude-sonnet-4-6 -c "And the tests?"
      agi serve                              REST + streaming API for any client
      agi mcp                                the project as an MCP server (stdio)
      agi setup                              providers, API keys, defaults

    Everything is recorded in .agi/agi.sqlite of the project (the current folder, or its nearest
    ancestor with .agi/), or in a shared PostgreSQL database when AGI_DATABASE_URL is set.
    Exit codes: 0 ok, 1 run failed, 2 bad usage (also an unknown id, a run that already
    ended), 3 not configured (also a refused --token), 4 undo left conflicts,
    5 left waiting for your approval (no terminal to ask on), 6 budget spent, 130 cancelled.
    """


for _command in (
    ask.ask,
    serve.serve,
    mcp.mcp_command,
    setup.setup,
    *inspect.COMMANDS,
    *catalog.COMMANDS,
    export.export,
    *undo.COMMANDS,
    *approve.COMMANDS,
    budget.budget,
    executions.executions,
):
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script ``agi``."""
    cli.main(args=list(sys.argv[1:] if argv is None else argv), prog_name="agi")
