"""A running ACP agent process with its ACP session, serving one of our sessions.

Started with the ``agent-client-protocol`` library's client connection over the process's
stdin/stdout: ``initialize`` (we offer file reads and writes and terminals), then
``session/load`` of the ACP session saved by an earlier run when the agent can load sessions,
else ``session/new`` (the agent then starts without the earlier conversation). The process gets
our environment without secret-looking variables (as codex does), plus the ``env`` of its
configuration; its stderr goes to an anonymous file whose tail explains a failure.

An agent that advertises auth methods (codex-acp) gets ``authenticate`` with the API-key method
whose variable its ``env`` holds (``openai-api-key`` -> ``OPENAI_API_KEY``: put
``"${OPENAI_API_KEY}"`` there, resolved from our credentials); other methods (an interactive
login, claude-code-acp's ``claude-login``) are never tried, and an agent that then answers
``session/new`` with "authentication required" fails for good (not retried). The model it
reports (a ``model`` config option) is recorded. The process runs in a process group of its own,
which is ended whole on close (an npm wrapper's native child too).

Its stdout passes through a pump that counts the ``session/update`` notifications as they
arrive, so a prompt's end waits until every update sent before its response was handled (the
library hands notifications to tasks, in some versions after the response).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import tempfile
from collections.abc import Mapping
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
from agi_jupyter.errors import ProviderDisconnected, ProviderError, SdkNotAvailable
from agi_jupyter.sdk.acp.client import AgiClient
from agi_jupyter.sdk.acp.mapping import reported_model
from agi_jupyter.sdk.acp.settings import AcpLaunch
from agi_jupyter.tools.redact import looks_secret

log = logging.getLogger(__name__)

AUTH_REQUIRED = -32000  # ACP's "authentication required" error code
_UPDATE = re.compile(rb'"method"\s*:\s*"session/update"')
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
        self.model: str | None = None  # the model the agent says it uses
        self.auth_method: str | None = None
        self.pump: asyncio.Future[None] | None = None

    @classmethod
    async def start(cls, launch: AcpLaunch, project: Path, resume: str | None) -> AcpLive:
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        env = agent_env(launch)
        try:
            process = await asyncio.create_subprocess_exec(
                launch.command,
                *launch.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                cwd=project,
                env=env,
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
        reader = asyncio.StreamReader(limit=BUFFER_LIMIT)
        pump = asyncio.ensure_future(_pump(process.stdout, reader, client))
        conn = connect_to_agent(client, process.stdin, reader)
        live = cls(launch, process, conn, client, stderr)
        live.pump = pump
        try:
            async with asyncio.timeout(START_TIMEOUT):
                await live._open(project, resume, env)
        except BaseException as e:
            note = live.stderr_tail()
            await live.close()
            if isinstance(e, asyncio.CancelledError | ProviderError):
                raise
            reason = "did not answer in time" if isinstance(e, TimeoutError) else _describe(e)
            tail = f"; its stderr ends with:\n{note}" if note else ""
            raise ProviderDisconnected(
                f"the ACP agent {launch.key!r} failed to start: {reason}{tail}"
            ) from None
        return live

    async def _open(self, project: Path, resume: str | None, env: Mapping[str, str]) -> None:
        init = await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=CAPABILITIES,
            client_info=CLIENT_INFO,
        )
        if init.agent_info is not None and init.agent_info.name:
            self.agent_name = init.agent_info.name
        methods = [m.id for m in init.auth_methods or []]
        keyed = next((m for m in methods if env.get(key_variable(m))), None)
        if keyed is not None:
            await self._authenticate(keyed, methods)
        capabilities = init.agent_capabilities
        if resume and capabilities is not None and capabilities.load_session:
            try:
                loaded = await self.conn.load_session(
                    cwd=str(project), session_id=resume, mcp_servers=[]
                )
            except RequestError as e:
                log.info("ACP agent %s could not load session %s: %s", self.agent_name, resume, e)
            else:
                self.session_id, self.loaded = resume, True
                self.model = reported_model(loaded) or self.model
                return
        try:
            created = await self.conn.new_session(cwd=str(project), mcp_servers=[])
        except RequestError as e:
            if e.code == AUTH_REQUIRED:
                raise self._auth_failed(methods, str(e)) from None
            raise
        self.session_id = created.session_id
        self.model = reported_model(created)

    async def _authenticate(self, method: str, methods: list[str]) -> None:
        """``authenticate`` with an API-key method (one whose variable the agent has); a
        refusal is permanent."""
        try:
            await self.conn.authenticate(method_id=method)
        except RequestError as e:
            raise self._auth_failed(methods, f"authenticate {method!r}: {e}") from None
        self.auth_method = method

    def _auth_failed(self, methods: list[str], detail: str) -> ProviderError:
        variables = ", ".join(key_variable(m) for m in methods if "key" in m.lower())
        hint = (
            f' (set {variables} in its "env", e.g. "${{{variables.split(", ")[0]}}}")'
            if (variables)
            else ""
        )
        return ProviderError(
            f"the ACP agent {self.launch.key!r} needs authentication: {detail}; it offers "
            f"{', '.join(methods) or 'no method'}{hint}",
            retryable=False,
        )

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

    async def _exited(self, within: float) -> bool:
        """Whether the process exited within ``within`` s (its returncode: ``wait()`` would
        also wait for a child that inherited its pipes)."""
        deadline = asyncio.get_running_loop().time() + within
        while self.process.returncode is None:
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    def stderr_tail(self) -> str:
        if self.stderr.closed:
            return ""
        size = os.fstat(self.stderr.fileno()).st_size
        start = max(0, size - STDERR_TAIL_BYTES)
        text = os.pread(self.stderr.fileno(), STDERR_TAIL_BYTES, start).decode(errors="replace")
        return (text.split("\n", 1)[-1] if start else text).strip()

    async def close(self) -> None:
        """End the connection, close stdin, then SIGTERM and SIGKILL the whole process group
        (what the agent started, like an npm wrapper's native binary, goes with it)."""
        with contextlib.suppress(Exception):
            await self.conn.close()
        if self.process.stdin is not None:
            with contextlib.suppress(Exception):
                self.process.stdin.close()
        group = self.process.pid  # started in a new session: its pid is the group's id
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if await self._exited(STOP_GRACE):
                break
            _signal_group(group, sig)
        await self._exited(STOP_GRACE)
        _signal_group(group, signal.SIGKILL)  # what the agent left behind in its group
        if self.pump is not None:  # ends at the EOF of its output once the group is gone
            await asyncio.wait({self.pump}, timeout=STOP_GRACE)
            self.pump.cancel()
        self.stderr.close()


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def key_variable(method: str) -> str:
    """The variable an API-key auth method reads: ``openai-api-key`` -> ``OPENAI_API_KEY``."""
    return re.sub(r"[^A-Za-z0-9]+", "_", method).strip("_").upper()


async def _pump(
    source: asyncio.StreamReader, sink: asyncio.StreamReader, client: AgiClient
) -> None:
    """Copy the agent's stdout line by line, counting its session updates as they arrive."""
    try:
        while line := await source.readline():
            if _UPDATE.search(line):
                client.arrivals.arrived()
            sink.feed_data(line)
    except (OSError, ValueError) as e:
        log.info("the ACP agent's output ended: %s", e)
    finally:
        sink.feed_eof()


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
