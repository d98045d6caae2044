"""A running ACP agent process with its ACP session, serving one of our sessions.

Started with the ``agent-client-protocol`` library's client connection over the process's
stdin/stdout: ``initialize`` (we offer file reads and writes and terminals), then
``session/load`` of the ACP session saved by an earlier run when the agent can load sessions,
else ``session/new`` (the agent then starts without the earlier conversation). The process gets
our environment without secret-looking variables (as codex does), plus the ``env`` of its
configuration; its stderr goes to an anonymous file whose tail explains a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from pathlib import Path
from typing import IO, Any

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    PromptResponse,
)

from agi_jupyter import __version__
from agi_jupyter.errors import ProviderDisconnected, SdkNotAvailable
from agi_jupyter.sdk.acp.client import AgiClient
from agi_jupyter.sdk.acp.settings import AcpLaunch
from agi_jupyter.tools.redact import looks_secret

log = logging.getLogger(__name__)

START_TIMEOUT = 60.0
STOP_GRACE = 2.0
STDERR_TAIL_BYTES = 2000
BUFFER_LIMIT = 50 * 1024 * 1024  # the library's default: large enough for images
CLIENT_INFO = Implementation(name="agi-jupyter", title="agi-jupyter", version=__version__)
CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)


def agent_env(launch: AcpLaunch) -> dict[str, str]:
    """Our environment minus secret-looking variables, plus the launch's own ``env``."""
    base = {k: v for k, v in os.environ.items() if not looks_secret(k)}
    return {**base, **launch.env}


class AcpLive:
    """One agent process and its ACP session (the handle ``abort`` acts on)."""

    def __init__(
        self,
        launch: AcpLaunch,
        process: asyncio.subprocess.Process,
        conn: Any,
        client: AgiClient,
        stderr: IO[bytes],
    ) -> None:
        self.launch = launch
        self.process = process
        self.conn = conn
        self.client = client
        self.stderr = stderr
        self.session_id = ""
        self.agent_name = Path(launch.command).name
        self.loaded = False  # the ACP session was loaded (continues an earlier conversation)
        self.aborted = False

    @classmethod
    async def start(cls, launch: AcpLaunch, project: Path, resume: str | None) -> AcpLive:
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        try:
            process = await asyncio.create_subprocess_exec(
                launch.command,
                *launch.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                cwd=project,
                env=agent_env(launch),
                start_new_session=True,
                limit=BUFFER_LIMIT,
            )
        except OSError as e:
            stderr.close()
            raise SdkNotAvailable(
                f"cannot start the ACP agent {launch.command!r}: {e.strerror or e}"
            ) from None
        client = AgiClient()
        assert process.stdin is not None
        assert process.stdout is not None
        conn = connect_to_agent(client, process.stdin, process.stdout)
        live = cls(launch, process, conn, client, stderr)
        try:
            async with asyncio.timeout(START_TIMEOUT):
                await live._open(project, resume)
        except BaseException as e:
            note = live.stderr_tail()
            await live.close()
            if isinstance(e, asyncio.CancelledError):
                raise
            reason = "did not answer in time" if isinstance(e, TimeoutError) else _describe(e)
            tail = f"; its stderr ends with:\n{note}" if note else ""
            raise ProviderDisconnected(
                f"the ACP agent {launch.key!r} failed to start: {reason}{tail}"
            ) from None
        return live

    async def _open(self, project: Path, resume: str | None) -> None:
        init = await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=CAPABILITIES,
            client_info=CLIENT_INFO,
        )
        if init.agent_info is not None and init.agent_info.name:
            self.agent_name = init.agent_info.name
        capabilities = init.agent_capabilities
        if resume and capabilities is not None and capabilities.load_session:
            try:
                await self.conn.load_session(cwd=str(project), session_id=resume, mcp_servers=[])
            except RequestError as e:
                log.info("ACP agent %s could not load session %s: %s", self.agent_name, resume, e)
            else:
                self.session_id, self.loaded = resume, True
                return
        created = await self.conn.new_session(cwd=str(project), mcp_servers=[])
        self.session_id = created.session_id

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def prompt(self, text: str) -> PromptResponse:
        response: PromptResponse = await self.conn.prompt(
            session_id=self.session_id, prompt=[text_block(text)]
        )
        return response

    async def cancel(self) -> None:
        """Ask the agent to stop the turn (``session/cancel``); its prompt then returns."""
        with contextlib.suppress(Exception):
            await self.conn.cancel(session_id=self.session_id)

    def stderr_tail(self) -> str:
        if self.stderr.closed:
            return ""
        size = os.fstat(self.stderr.fileno()).st_size
        start = max(0, size - STDERR_TAIL_BYTES)
        text = os.pread(self.stderr.fileno(), STDERR_TAIL_BYTES, start).decode(errors="replace")
        return (text.split("\n", 1)[-1] if start else text).strip()

    async def close(self) -> None:
        """End the connection, close stdin, then terminate and kill the process if needed."""
        with contextlib.suppress(Exception):
            await self.conn.close()
        if self.process.stdin is not None:
            with contextlib.suppress(Exception):
                self.process.stdin.close()
        for stop in (None, self.process.terminate, self.process.kill):
            if stop is not None and self.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    stop()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), STOP_GRACE)
            if self.process.returncode is not None:
                break
        self.stderr.close()


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
