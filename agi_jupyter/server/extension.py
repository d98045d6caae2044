"""``AgiExtensionApp``: the ``agi`` jupyter-server extension.

Configure with ``c.AgiExtensionApp.<trait>`` (``jupyter server --AgiExtensionApp.tick_interval=2``
or a ``jupyter_server_config.py``). One ``Agi`` per project folder is created on first use and
closed when the server stops; a periodic tick and the heartbeat run on the server's loop.

The traits that are project settings too (``config.SERVER_KEYS``: persist_deltas, wire,
stale_after, database_url, project_namespace) are made from their declaration in ``config``
(type and help; validated there, as the traitlets layer of ``load_config``). Secrets are read
by ``config`` only.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Enum, Float, Int, TraitType, Unicode, validate

from agi_jupyter.config import (
    SERVER_KEYS,
    WEBHOOK_SECRET_ENV,
    Config,
    setting_field,
    webhook_secret,
)
from agi_jupyter.research import DEFAULT_MODEL, ResearchSettings
from agi_jupyter.server.heap import freeze_heap, load_default_provider
from agi_jupyter.server.kernels import NotebookKernels, NotebookPython
from agi_jupyter.server.mcp_http import McpEndpoints
from agi_jupyter.server.notebooks import ServerNotebookAccess, TabBridge
from agi_jupyter.server.projects import Projects
from agi_jupyter.server.ratelimit import RateLimiter
from agi_jupyter.server.routes import url_patterns
from agi_jupyter.server.ticker import BackgroundRunner

if TYPE_CHECKING:
    from agi_jupyter.app import Agi


def config_trait(key: str) -> TraitType[Any, Any]:
    """The trait of the project setting ``key``: its type and help as ``config`` declares it;
    None (the default) leaves it to the project's configuration."""
    field = setting_field(key)
    kind = next(a for a in get_args(field.annotation) if a is not type(None))
    default = getattr(Config(project=Path()), key)
    text = f"{field.description} None: as the project's configuration says"
    text += f" ({default})." if default is not None else "."
    trait: TraitType[Any, Any]
    if getattr(kind, "__origin__", None) is Literal:
        trait = Enum(get_args(kind), None, allow_none=True, help=text)
    else:
        trait = {bool: Bool, float: Float, str: Unicode}[kind](None, allow_none=True, help=text)
    return trait.tag(config=True)


class AgiExtensionApp(ExtensionApp):
    name = "agi"
    description = "agi-jupyter: durable AI agent runs behind a REST and streaming API"
    load_other_extensions = True

    default_project = Unicode(
        "",
        help="The project folder (relative to the server root) used when a request names none.",
    ).tag(config=True)
    persist_deltas = config_trait("persist_deltas")
    wire = config_trait("wire")
    stale_after = config_trait("stale_after")
    tick_interval = Float(
        5.0, help="Seconds between in-process runner ticks (0: only on demand and webhooks)."
    ).tag(config=True)
    tick_max_runs = Int(10, help="Runs a periodic tick may start per project.").tag(config=True)
    heartbeat_interval = Float(
        300.0, help="Seconds between heartbeats acting on due tasks (0: no heartbeat)."
    ).tag(config=True)
    webhook_secret = Unicode(
        None,
        allow_none=True,
        help="The OpenAI webhook secret (whsec_...). Prefer the environment variable named "
        "by webhook_secret_env, or `openai_webhook_secret` in the agi credentials file.",
    ).tag(config=True)
    webhook_secret_env = Unicode(
        WEBHOOK_SECRET_ENV, help="The environment variable holding the OpenAI webhook secret."
    ).tag(config=True)
    webhook_rate_limit = Int(
        600, help="Webhook requests per minute per client address (0: unlimited)."
    ).tag(config=True)
    deep_research_model = Unicode(
        DEFAULT_MODEL, help="The OpenAI model of deep research runs."
    ).tag(config=True)
    deep_research_poll_interval = Float(
        10.0,
        help="Seconds between polls of a deep research response when no webhook secret "
        "is configured.",
    ).tag(config=True)
    persist_raw_responses = Bool(
        False, help="Keep the raw OpenAI response in deep research report artifacts."
    ).tag(config=True)
    max_body_size = Int(
        1024 * 1024, help="Largest request body accepted (bytes); larger ones get 413."
    ).tag(config=True)
    freeze_gc = Bool(
        True,
        help="Once the server has started, and once each project's runtime has loaded its "
        "model SDK, move the objects that exist then out of the cyclic garbage collector's "
        "reach (gc.freeze). Without it, each full collection of a server's ~300,000 "
        "long-lived objects stops every request for ~100 ms.",
    ).tag(config=True)
    max_open_projects = Int(
        32,
        help="Most projects kept open at once (each holds a runtime thread, database "
        "connections and provider clients); the least recently used idle ones are closed.",
    ).tag(config=True)
    project_idle_timeout = Float(
        600.0,
        help="Seconds after which a project nobody uses is closed (it reopens on the next "
        "request). Projects with unfinished runs or open streams stay open.",
    ).tag(config=True)
    mcp_agent = Unicode(
        "build",
        help="The agent whose tools /agi/mcp offers MCP clients (plan: read-only); a request "
        "may name another with ?agent=.",
    ).tag(config=True)
    stream_keepalive = Float(
        15.0, help="Seconds of silence after which an SSE stream sends a keep-alive comment."
    ).tag(config=True)
    database_url = config_trait("database_url")
    project_namespace = config_trait("project_namespace")
    stream_max_seconds = Float(
        0.0,
        help="Seconds after which an event stream ends (0: never). Clients resume with "
        "Last-Event-ID or after_seq; useful behind proxies that cut long responses.",
    ).tag(config=True)

    @validate(
        "tick_interval",
        "heartbeat_interval",
        "deep_research_poll_interval",
        "project_idle_timeout",
        "stream_max_seconds",
    )
    def _non_negative(self, proposal: Any) -> float:
        value = float(proposal["value"])
        if value < 0:
            raise ValueError(f"{proposal['trait'].name} must be >= 0")
        return value

    @validate("max_body_size", "max_open_projects")
    def _positive_size(self, proposal: Any) -> int:
        value = int(proposal["value"])
        if value < 1:
            raise ValueError(f"{proposal['trait'].name} must be positive")
        return value

    # --- wiring ------------------------------------------------------------------------------

    def initialize_settings(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="agi-server")
        assert self.serverapp is not None
        root = Path(self.serverapp.root_dir).expanduser()
        self.projects = Projects(
            root,
            self.default_project,
            self.make_agi,
            self.executor,
            max_open=self.max_open_projects,
            idle_timeout=self.project_idle_timeout,
            has_store=self.has_store,
        )
        self.webhook_limiter = RateLimiter(self.webhook_rate_limit)
        self.kernels = NotebookKernels(self.serverapp)
        self.bridge = TabBridge()
        self.notebooks = ServerNotebookAccess(self.serverapp, self.bridge)
        self.mcp = McpEndpoints()
        self.runner = BackgroundRunner(
            self.projects,
            tick_interval=self.tick_interval,
            heartbeat_interval=self.heartbeat_interval,
            max_runs=self.tick_max_runs,
            executor=self.executor,
            logger=self.log,
            kernels=self.kernels,
        )

    def initialize_handlers(self) -> None:
        self.handlers.extend(url_patterns())

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        self.start_on_loop()
        if self.freeze_gc:
            count = freeze_heap()
            self.log.debug("agi: %d objects moved out of the cyclic GC's reach", count)

    async def stop_extension(self) -> None:
        await self.runner.stop()
        await self.projects.wait_closed()
        await self.mcp.aclose()
        await asyncio.get_running_loop().run_in_executor(self.executor, self.projects.close)
        self.executor.shutdown(wait=False)

    def start_on_loop(self) -> None:
        """On the server's loop, at start and (idempotent) before each request: servers
        started without the extension start hook (tests) get the same."""
        self.runner.start()
        self.notebooks.loop = asyncio.get_running_loop()

    # --- what handlers use -------------------------------------------------------------------

    def webhook_secret_value(self) -> str | None:
        """The configured webhook secret: the trait, the environment, the credentials file
        (``config.webhook_secret``)."""
        return webhook_secret(self.webhook_secret, env_var=self.webhook_secret_env)

    def research_settings(self) -> ResearchSettings:
        return ResearchSettings(
            model=self.deep_research_model,
            poll_interval=self.deep_research_poll_interval,
            webhooks=bool(self.webhook_secret_value()),
            persist_raw_response=self.persist_raw_responses,
        )

    def traitlets_layer(self) -> dict[str, Any]:
        """The settings of this server as a configuration layer (``config.load_config``):
        the ``SERVER_KEYS`` traits that are set."""
        values = {key: getattr(self, key) for key in SERVER_KEYS}
        return {key: value for key, value in values.items() if value not in (None, "")}

    def has_store(self, project: Path) -> bool:
        """Whether the runner should tick ``project`` before a request opens it."""
        from agi_jupyter.config import load_config
        from agi_jupyter.errors import AgiError
        from agi_jupyter.store import store_exists

        try:
            config = load_config(project, traitlets=self.traitlets_layer())
        except AgiError:
            return False  # reported when the project is opened
        return store_exists(project, database_url=config.database_url)

    def make_agi(self, project: Path) -> Agi:
        """The ``Agi`` of one project folder (called off the event loop)."""
        from agi_jupyter.app import Agi

        agi = Agi(
            project,
            traitlets=self.traitlets_layer(),
            research=self.research_settings(),
            tools=[NotebookPython(self.kernels)],
            notebooks=self.notebooks,
        )
        agi.deps.session_features = self.kernels.session_features(agi.project)
        # Another server queued a background run here: tick now, not at the next interval.
        agi.listen(self.runner.wake_threadsafe)
        if self.freeze_gc:
            load_default_provider(agi)
            freeze_heap()
        return agi
