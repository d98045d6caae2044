"""The ``codex`` adapter: one run attempt is one ``codex exec --json`` process.

::

    codex exec --json --skip-git-repo-check --color never -C <project> -s <sandbox> -m <model>
               -c developer_instructions="<system prompt>" [-c model_reasoning_effort=...]
               [resume <thread id>] -- <prompt>

- **Home and key.** ``CODEX_HOME`` is the project's private ``.agi/codex-home/`` (``home``);
  the OpenAI key reaches codex only through the child's ``AGI_CODEX_API_KEY``. The child's
  environment is ours minus secret-looking variables, so codex's shell commands never see the
  user's other keys. Error messages and stderr are redacted before they leave the adapter.
- **Sandbox.** ``read-only`` for read-only agents and agents offered no tool that writes (or
  runs commands), else ``workspace-write`` (the project folder). Approvals are ``never``:
  nobody is there to answer them.
- **Threads.** ``thread.started`` gives the codex thread id, saved in the session's adapter
  state; the session's next run resumes it, so codex sees the whole conversation. The system
  prompt goes in as ``developer_instructions`` (a developer message codex keeps with the thread).
  A saved thread that codex no longer has (its home was deleted) starts a new thread.
- **One prompt per process.** ``codex exec`` takes one prompt and cannot be interrupted
  cleanly, so the capabilities say neither ``queue_while_streaming`` nor ``interrupt``: a
  message sent while a run streams waits as a queued run (seed 003's fallback).
- **Bounded.** Codex retries a dead server forever (``error`` "Reconnecting..." events), so a
  run fails (``ProviderDisconnected``, retryable) after ``reconnect_limit`` such errors in a
  row, and no run outlives ``timeout`` seconds. Both come from the session's metadata,
  ``{"codex": {"timeout": 600, "reconnect_limit": 3}}`` (the defaults below): ``Config`` has no
  codex settings yet.
- **Stopping.** On cancel, timeout or failure the process group gets SIGTERM, then SIGKILL
  after ``stop_grace`` seconds; codex's sandboxed commands die with it. No child outlives a run.

Codex runs its own tools (shell, apply_patch, web search); ours (``fs.*``, ``python``, project
tools) are not offered to it, and ``max_iterations`` does not apply.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agi_jupyter.errors import (
    AgiError,
    ProviderDisconnected,
    ProviderError,
    ProviderHTTPError,
    ProviderNotConfigured,
    UsageError,
)
from agi_jupyter.kinds import SdkName
from agi_jupyter.providers.registry import key_hint
from agi_jupyter.runtime.agent_loop import AttemptResult
from agi_jupyter.sdk.base import (
    DisplayModel,
    HistoryEvent,
    SdkAdapter,
    SdkCapabilities,
    SdkRunParams,
)
from agi_jupyter.sdk.codex.binary import INSTALL_HINT, find_codex
from agi_jupyter.sdk.codex.home import KEY_ENV, child_env, prepare_home, toml_string
from agi_jupyter.sdk.codex.mapping import CodexMapper, CodexUsage
from agi_jupyter.tools import Redactor

if TYPE_CHECKING:
    from agi_jupyter.config import ProviderSettings
    from agi_jupyter.records import JSON, Session

DEFAULT_TIMEOUT = 600.0  # seconds one run may take, in total
DEFAULT_RECONNECT_LIMIT = 3  # codex waits ~0, 5, 10 s between its reconnects: ~15 s
STOP_GRACE = 3.0  # seconds between SIGTERM and SIGKILL
LINE_LIMIT = 64 * 1024 * 1024  # one JSONL event (a command's whole output) may be large
STDERR_TAIL = 4000  # characters of stderr kept for error messages
_EFFORTS = frozenset({"minimal", "low", "medium", "high", "xhigh"})
_STATUS = re.compile(r"\bstatus:? (\d{3})\b")
_DISCONNECTED = re.compile(
    r"reconnecting|stream disconnected|connection (failed|refused|reset|closed)|"
    r"error sending request|timed out|timeout|network",
    re.IGNORECASE,
)
_OVERLOADED = re.compile(r"high demand|overloaded|server error|try again", re.IGNORECASE)
_THREAD_GONE = re.compile(r"no rollout found|thread not found", re.IGNORECASE)


@dataclass(frozen=True)
class CodexOptions:
    """Per-session limits, from ``session.metadata["codex"]``."""

    timeout: float = DEFAULT_TIMEOUT
    reconnect_limit: int = DEFAULT_RECONNECT_LIMIT

    @classmethod
    def of(cls, session: Session) -> CodexOptions:
        raw = session.metadata.get("codex") or {}
        if not isinstance(raw, dict):
            raise UsageError('session metadata "codex" must be an object')
        timeout = raw.get("timeout", DEFAULT_TIMEOUT)
        limit = raw.get("reconnect_limit", DEFAULT_RECONNECT_LIMIT)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise UsageError("codex.timeout must be a positive number of seconds")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise UsageError("codex.reconnect_limit must be a positive integer")
        return cls(timeout=float(timeout), reconnect_limit=limit)


@dataclass(frozen=True)
class _Launch:
    """What every process of one run shares."""

    binary: Path
    env: dict[str, str]
    redactor: Redactor
    options: CodexOptions
    model: str | None
    options_argv: list[str]


class _ThreadGone(Exception):
    """``resume`` named a thread codex does not have."""


class CodexAdapter(SdkAdapter):
    id = SdkName.CODEX
    display_name = "Codex CLI"
    capabilities = SdkCapabilities(
        queue_while_streaming=False, interrupt=False, tool_events=True, full_history=True
    )
    install_hint = INSTALL_HINT
    providers = frozenset({"openai"})  # codex speaks only the Responses API

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        strict_config: bool = False,
        stop_grace: float = STOP_GRACE,
    ) -> None:
        """``env``: where ``AGI_CODEX_BIN``, ``PATH`` and the child's environment come from
        (default: ``os.environ`` when a run starts). ``strict_config`` makes codex reject
        config keys it does not know (the tests use it to check ``config.toml``)."""
        self._env = env
        self.strict_config = strict_config
        self.stop_grace = stop_grace

    @property
    def env(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    def binary(self) -> Path:
        return find_codex(self.env)

    def resolve_display_model(self, session: Session) -> DisplayModel:
        return DisplayModel("openai", session.model)

    def check_available(self) -> None:
        self.binary()

    # --- a run -------------------------------------------------------------------------------

    async def run(self, params: SdkRunParams) -> AttemptResult:
        launch = self._launch(params)
        thread_id = params.state.get("thread_id")
        try:
            return await self._attempt(params, launch, str(thread_id) if thread_id else None)
        except _ThreadGone:
            await params.save_state({})  # forget it: this run starts the session's new thread
            return await self._attempt(params, launch, None)

    def _launch(self, params: SdkRunParams) -> _Launch:
        binary = self.binary()
        settings = _provider(params)
        key = settings.api_key or "unused"  # codex insists on the variable even when unused
        home = prepare_home(params.project, base_url=settings.base_url)
        model = params.run.model or params.session.model
        argv = [
            "--json",
            "--skip-git-repo-check",
            "--color",
            "never",
            "-C",
            str(params.project),
            "-s",
            _sandbox(params),
            "-c",
            f"developer_instructions={toml_string(params.system_prompt)}",
        ]
        if model:
            argv += ["-m", model]
        effort = (params.run.thinking_level or "").lower()
        if effort in _EFFORTS:
            argv += ["-c", f"model_reasoning_effort={toml_string(effort)}"]
        if self.strict_config:
            argv.append("--strict-config")
        return _Launch(
            binary=binary,
            env=child_env(self.env, home=home, api_key=key),
            redactor=Redactor(self.env, extra={KEY_ENV: key}),
            options=CodexOptions.of(params.session),
            model=model,
            options_argv=argv,
        )

    async def _attempt(
        self, params: SdkRunParams, launch: _Launch, thread_id: str | None
    ) -> AttemptResult:
        baseline = CodexUsage.from_json(params.state.get("usage")) if thread_id else CodexUsage()
        mapper = CodexMapper(
            project=params.project,
            provider="openai",
            model=launch.model,
            # codex numbers items from item_0 in every process: make call ids unique per attempt
            id_prefix=f"codex_{params.run.id}_{params.run.attempt}_",
            baseline=baseline,
        )
        argv = [str(launch.binary), "exec", *launch.options_argv]
        if thread_id:
            argv += ["resume", thread_id]
        argv += ["--", params.prompt]
        proc = await _spawn(argv, launch.env, params.project)
        stderr = _Tail()
        drain = asyncio.get_running_loop().create_task(stderr.drain(proc.stderr))
        try:
            async with asyncio.timeout(launch.options.timeout):
                error = await self._follow(proc, mapper, params, launch, thread_id)
                if error is None:
                    await proc.wait()
        except asyncio.CancelledError:
            await _report(params, mapper.finish())  # answer the calls in flight, then stop codex
            raise
        except TimeoutError:
            await _report(params, mapper.finish())
            raise ProviderError(
                f"codex did not finish within {launch.options.timeout:g} s "
                '(session metadata {"codex": {"timeout": ...}})'
            ) from None
        finally:
            await _stop(proc, self.stop_grace)
            await _finish_drain(drain)
        if error is not None:
            raise error
        return await self._outcome(params, launch, mapper, proc.returncode, stderr.text, thread_id)

    async def _follow(
        self,
        proc: asyncio.subprocess.Process,
        mapper: CodexMapper,
        params: SdkRunParams,
        launch: _Launch,
        thread_id: str | None,
    ) -> AgiError | None:
        """Map stdout as it arrives; an error when the run must stop before codex ends."""
        assert proc.stdout is not None
        saved = thread_id
        while True:
            try:
                line = await proc.stdout.readline()
            except ValueError:
                continue  # a line over LINE_LIMIT was dropped: skip it like any unreadable line
            if not line:
                return None
            await _report(params, mapper.feed(line))
            if mapper.thread_id and mapper.thread_id != saved:
                saved = mapper.thread_id
                await params.save_state(_state(mapper.thread_id, mapper.baseline))
            if mapper.reconnects >= launch.options.reconnect_limit:
                await _report(params, mapper.finish())
                message = launch.redactor.redact_text(mapper.last_error or "")
                return ProviderDisconnected(
                    f"codex could not reach the model API ({mapper.reconnects} reconnect "
                    f"attempts failed): {message}"
                )

    async def _outcome(
        self,
        params: SdkRunParams,
        launch: _Launch,
        mapper: CodexMapper,
        returncode: int | None,
        stderr: str,
        thread_id: str | None,
    ) -> AttemptResult:
        redact = launch.redactor.redact_text
        if mapper.completed:
            if mapper.thread_id and mapper.totals is not None:
                await params.save_state(_state(mapper.thread_id, mapper.totals))
            return await params.result()
        if mapper.failure is not None:
            raise classify(redact(mapper.failure))
        if thread_id and not mapper.thread_id and _THREAD_GONE.search(stderr):
            raise _ThreadGone(thread_id)
        await _report(params, mapper.finish())
        warnings = mapper.warnings[-1:]
        detail = redact(
            mapper.last_error or _last_lines(stderr) or "".join(warnings) or "no output"
        )
        if returncode:
            raise ProviderError(f"codex exited with status {returncode}: {detail}")
        raise ProviderError(f"codex ended without finishing the turn: {detail}")


# --- helpers ---------------------------------------------------------------------------------


def classify(message: str) -> ProviderError:
    """The error for a codex failure message: HTTP statuses and dropped connections are
    retryable as in our own providers; an overloaded server is too."""
    text = f"codex: {message}"
    status = _STATUS.search(message)
    if status:
        return ProviderHTTPError(text, status=int(status.group(1)))
    if _DISCONNECTED.search(message):
        return ProviderDisconnected(text)
    return ProviderError(text, retryable=bool(_OVERLOADED.search(message)))


def _last_lines(text: str, count: int = 5) -> str:
    """The end of codex's stderr, where the reason it stopped is."""
    return " | ".join([line.strip() for line in text.splitlines() if line.strip()][-count:])


def _provider(params: SdkRunParams) -> ProviderSettings:
    """The session's provider; codex speaks only the Responses API (its chat wire is gone)."""
    name = params.run.provider or params.session.provider or "openai"
    settings = params.config.provider(name)
    if settings.wire != "openai-responses":
        model = params.run.model or params.session.model
        raise UsageError(
            f"the codex SDK runs OpenAI Responses models, not {name}:{model} "
            "(pick e.g. openai:gpt-5-codex)"
        )
    if not settings.enabled:
        raise ProviderNotConfigured(
            f"the codex SDK uses the {name!r} provider, which is disabled; set "
            f"providers.{name}.enabled to true"
        )
    if settings.requires_key and not settings.api_key:
        raise ProviderNotConfigured(
            f"the codex SDK needs the {name!r} provider's API key; set {key_hint(name)} in "
            "the environment or run `agi setup`"
        )
    return settings


def _sandbox(params: SdkRunParams) -> str:
    writes = any(not tool.read_only for tool in params.tools)
    return "workspace-write" if writes and not params.agent.read_only else "read-only"


def _state(thread_id: str, totals: CodexUsage) -> JSON:
    return {"thread_id": thread_id, "usage": totals.to_json()}


async def _report(params: SdkRunParams, events: list[HistoryEvent]) -> None:
    for event in events:
        await params.on_history(event)


async def _spawn(argv: list[str], env: dict[str, str], cwd: Path) -> asyncio.subprocess.Process:
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,  # codex would otherwise wait for more prompt
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,  # its own process group: one signal stops codex and kids
            limit=LINE_LIMIT,
        )
    except OSError as e:  # E2BIG for a prompt beyond the OS's argument limit, EACCES, ...
        raise ProviderError(f"could not start codex: {e.strerror or e}") from None


async def _stop(proc: asyncio.subprocess.Process, grace: float) -> None:
    """Stop the process group: SIGTERM, then SIGKILL after ``grace`` (at once if cancelled)."""
    if proc.returncode is not None:
        return
    _signal(proc, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        pass
    finally:
        if proc.returncode is None:  # still there after the grace, or we were cancelled again
            _signal(proc, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), grace)


def _signal(proc: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)  # the group's id is the child's pid (start_new_session)


async def _finish_drain(task: asyncio.Task[None]) -> None:
    """Let the stderr reader see EOF (the process is gone); never wait on it for long."""
    try:
        await asyncio.wait_for(asyncio.shield(task), 1.0)
    except TimeoutError:
        task.cancel()


class _Tail:
    """The last ``STDERR_TAIL`` characters of a stream, read to its end (so codex never
    blocks on a full stderr pipe)."""

    def __init__(self) -> None:
        self.text = ""

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(65536):
            self.text = (self.text + chunk.decode("utf-8", errors="replace"))[-STDERR_TAIL:]
