"""``agi serve``: a jupyter server rooted at the project, with the agi extension enabled.

It runs ``jupyter_server``'s ``ServerApp`` in this process on a free port (unless ``--port``),
prints the URL with its token and the OpenAPI URL on stdout, and stops cleanly on Ctrl-C or
SIGTERM (no "shut down? y/n" question). Arguments after ``--`` go to the ServerApp as they are.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

import click

from agi_jupyter.cli.common import project_option, project_root


@click.command()
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, help="Port (default: a free one)."
)
@click.option("--ip", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--token",
    envvar="AGI_SERVER_TOKEN",
    show_envvar=True,
    help="Token clients must send (default: a random one).",
)
@click.option(
    "--db",
    "database_url",
    metavar="URL",
    help="The store: a postgresql:// URL (as AGI_DATABASE_URL; servers given the same one "
    "share sessions and runs). Default: .agi/agi.sqlite beside each project.",
)
@project_option
@click.argument("server_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- SERVER_ARGS]...")
def serve(
    port: int,
    ip: str,
    token: str | None,
    database_url: str | None,
    project: Path | None,
    server_args: tuple[str, ...],
) -> None:
    """Serve the project's REST + streaming API (a jupyter server).

    Prints the base URL with its token and the OpenAPI URL. The API lives under /agi/v1/;
    send the token as `Authorization: token TOKEN`. Stop it with Ctrl-C or SIGTERM.
    """
    from jupyter_server.serverapp import ServerApp

    root = project_root(project)
    if database_url is not None:
        if urlsplit(database_url).scheme not in ("postgresql", "postgres"):
            raise click.BadParameter(
                "takes a postgresql:// URL (a SQLite store is always .agi/agi.sqlite beside its"
                " project)",
                param_hint="--db",
            )
        os.environ["AGI_DATABASE_URL"] = database_url  # read by every project's config
    app = ServerApp.instance()
    app.jpserver_extensions.update({"agi_jupyter": True})
    app.initialize(argv=_server_argv(root, ip, port, token, server_args))
    _stop_on_signals(app)
    # The server binds its socket in a loop callback queued by initialize(); announce after it.
    app.io_loop.add_callback(_announce, app, root)
    app.start()


def _server_argv(
    root: Path, ip: str, port: int, token: str | None, extra: tuple[str, ...]
) -> list[str]:
    argv = [
        f"--ServerApp.root_dir={root}",
        f"--ServerApp.ip={ip}",
        f"--ServerApp.port={port}",
        "--ServerApp.open_browser=False",
        "--ServerApp.answer_yes=True",
    ]
    if port:
        argv.append("--ServerApp.port_retries=0")
    if token is not None:
        argv.append(f"--IdentityProvider.token={token}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")
    return [*argv, *extra]


def _stop_on_signals(app: Any) -> None:
    """SIGINT and SIGTERM stop the server at once (jupyter's SIGINT handler asks first)."""

    def stop(signum: int, frame: FrameType | None) -> None:
        app.log.info("agi serve: signal %s, stopping", signum)
        app.stop(from_signal=True)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def _announce(app: Any, root: Path) -> None:
    base = f"http://{_host(app.ip)}:{app.port}{app.base_url}"
    token = app.identity_provider.token
    click.echo(f"agi serve: project {root}")
    click.echo(f"  URL      {base}?token={token}" if token else f"  URL      {base}")
    click.echo(f"  OpenAPI  {base}agi/openapi.json")
    click.echo(f"  API      {base}agi/v1/  (send the header  Authorization: token <TOKEN>)")


def _host(ip: str) -> str:
    if ip in ("", "0.0.0.0"):
        return "127.0.0.1"
    if ip in ("::",):
        return "[::1]"
    return f"[{ip}]" if ":" in ip else ip
