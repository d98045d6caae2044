"""What every command shares: exit codes, the one-line failure, common options, opening ``Agi``."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

import click

from agi_jupyter.errors import AgiError, ConfigError, Conflict, NotFound, RunCancelled, UsageError

if TYPE_CHECKING:
    from agi_jupyter.app import Agi

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_CONFLICT = 4  # agi undo: some cells or files changed after the run, left as they are
EXIT_WAITING = 5  # no terminal to ask on: the run was left waiting for an approval
EXIT_BUDGET = 6  # the run stopped: its session's or notebook's budget is spent
EXIT_CANCELLED = 130

F = TypeVar("F", bound=Callable[..., object])


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    """Print ``agi: <message>`` as one line on stderr and exit with ``code``."""
    line = " ".join(message.split())
    click.echo(f"agi: {line}", err=True)
    raise click.exceptions.Exit(code)


def exit_code_for(error: AgiError) -> int:
    """README's exit codes: what was asked cannot be done as asked (bad arguments, an id that
    names nothing, a run that already ended) is bad usage; a missing or refused setting
    (a key, a token) is "not configured"; anything else is a failure."""
    if isinstance(error, UsageError | NotFound | Conflict):
        return EXIT_USAGE
    if isinstance(error, ConfigError):
        return EXIT_CONFIG
    if isinstance(error, RunCancelled):
        return EXIT_CANCELLED
    return EXIT_FAILED


def project_option(function: F) -> F:
    return click.option(
        "--project",
        "-p",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Project folder (default: the current folder, or its nearest ancestor with .agi/).",
    )(function)


def json_option(function: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(
        function
    )


def server_options(help_text: str) -> Callable[[F], F]:
    """``--server URL`` (``AGI_SERVER_URL``) and ``--token`` (``AGI_SERVER_TOKEN``): the
    command goes through a running ``agi serve`` or Jupyter server; ``help_text`` says how."""

    def decorate(function: F) -> F:
        function = click.option(
            "--token",
            metavar="TOKEN",
            envvar="AGI_SERVER_TOKEN",
            show_envvar=True,
            help="Its token.",
        )(function)
        return click.option(
            "--server", metavar="URL", envvar="AGI_SERVER_URL", show_envvar=True, help=help_text
        )(function)

    return decorate


def project_root(project: Path | None) -> Path:
    """The project of ``--project`` (which must exist) or of the current folder."""
    from agi_jupyter.config import find_project

    if project is not None and not project.is_dir():
        raise UsageError(f"project folder {project} does not exist")
    return find_project(project or Path.cwd())


@contextmanager
def open_agi(project: Path | None) -> Iterator[Agi]:
    """The project's ``Agi`` (imported here, so ``agi --help`` stays fast), closed after use."""
    from agi_jupyter.app import Agi

    agi = Agi(project_root(project))
    try:
        yield agi
    finally:
        agi.close()


def latest_session_id(agi: Agi) -> str | None:
    """The session of the latest run (None: no run yet): what ``agi -c`` continues and
    ``agi budget`` shows when no session is named."""
    latest = agi.runs(limit=1).items
    return latest[0].session_id if latest else None


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def stdout_is_file() -> bool:
    """Whether stdout is a regular file (``agi ... > answer.md``), not a terminal or a pipe."""
    try:
        return stat.S_ISREG(os.fstat(sys.stdout.fileno()).st_mode)
    except (OSError, ValueError):  # no real descriptor (a test's captured stdout)
        return False
