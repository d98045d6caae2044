"""What the runtime needs from the composition root, gathered in one object."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from agi_jupyter.records import Run, Session, new_id

if TYPE_CHECKING:
    from agi_jupyter.agents import Agent
    from agi_jupyter.config import Config
    from agi_jupyter.providers.base import Provider
    from agi_jupyter.providers.server_caps import ServerCaps
    from agi_jupyter.runtime.bus import EventBus
    from agi_jupyter.runtime.loop_thread import BackgroundLoop
    from agi_jupyter.runtime.store_thread import StoreThread
    from agi_jupyter.store import Store
    from agi_jupyter.tools import Redactor, ToolRegistry


P = ParamSpec("P")
T = TypeVar("T")


class ProviderPool:
    """One provider client per provider name, created on first use on the runtime loop."""

    def __init__(self, config: Config) -> None:
        from agi_jupyter.providers.server_caps import ServerCapsCache

        self.config = config
        self._providers: dict[str, Provider] = {}
        self._creating: dict[str, asyncio.Lock] = {}  # per provider name, on the runtime loop
        self._caps = ServerCapsCache()

    def get(self, name: str) -> Provider:
        provider = self._providers.get(name)
        if provider is None:
            from agi_jupyter.providers import create_provider

            provider = create_provider(self.config.provider(name), wire=self.config.wire)
            self._providers[name] = provider
        return provider

    async def aget(self, name: str) -> Provider:
        """``get`` for the runtime loop: a client not made yet is made on a worker thread.
        Importing an SDK and building its client takes from tens of milliseconds to seconds
        on a loaded machine, and the runtime loop runs every agent of the process."""
        provider = self._providers.get(name)
        if provider is not None:
            return provider
        lock = self._creating.setdefault(name, asyncio.Lock())
        async with lock:
            provider = self._providers.get(name)
            if provider is None:
                provider = await asyncio.to_thread(self._create, name)
                self._providers[name] = provider
        return provider

    async def server_caps(self, name: str, model: str) -> ServerCaps | None:
        """What a local provider's server says about ``model`` (tools, context window), asked
        once per process; None for a hosted provider (its catalog entry says it)."""
        from agi_jupyter.providers.local_models import is_local

        settings = self.config.provider(name)
        if not settings.base_url or not is_local(settings):
            return None
        return await self._caps.get(settings.base_url, model, settings.api_key)

    def _create(self, name: str) -> Provider:
        from agi_jupyter.providers import create_provider

        return create_provider(self.config.provider(name), wire=self.config.wire)

    async def aclose(self) -> None:
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:
            await provider.aclose()


def new_owner_id() -> str:
    """Who runs a run: host, process and a random part (several ``Agi`` per process)."""
    return f"{socket.gethostname()}:{os.getpid()}:{new_id('own')[-8:]}"


@dataclass
class RuntimeDeps:
    config: Config
    store: Store
    registry: ToolRegistry
    agents: dict[str, Agent]
    providers: ProviderPool
    redactor: Redactor
    bus: EventBus
    loop: BackgroundLoop
    features: frozenset[str] = frozenset()
    # Features that depend on the session (the server's notebook kernels); must be quick.
    session_features: Callable[[Session], frozenset[str]] | None = None
    # Extra system-prompt context of a run, given the names of the tools it is offered (the
    # notebook outline); None adds nothing.
    run_context: Callable[[Run, Session, Collection[str]], Awaitable[str | None]] | None = None
    owner: str = field(default_factory=new_owner_id)
    # Opens another connection to the same store: the lease keeper's thread uses its own.
    store_factory: Callable[[], Store] | None = None
    # Where the runtime loop's store calls run (store_thread.py); None: inline.
    store_thread: StoreThread | None = None

    @property
    def stale_after(self) -> float:
        """Seconds without a heartbeat after which a running run may be taken over."""
        return self.config.stale_after

    @property
    def heartbeat_interval(self) -> float:
        """Owners beat four times per staleness window (at most every 5 s)."""
        return min(5.0, self.config.stale_after / 4)

    def open_store(self) -> Store:
        """A store of its own for another thread (the shared one without a factory)."""
        return self.store_factory() if self.store_factory is not None else self.store

    def features_for(self, session: Session) -> frozenset[str]:
        """What the front door provides to runs of ``session``."""
        if self.session_features is None:
            return self.features
        return self.features | self.session_features(session)

    async def stored(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """A store call made from the runtime loop: on the store thread, in order with the
        emitters' writes, without stalling the loop."""
        if self.store_thread is None:
            return fn(*args, **kwargs)
        return await self.store_thread.call(fn, *args, **kwargs)

    def call_in_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn`` on the runtime loop: now if already there, else thread-safely soon."""
        if self.loop.in_loop_thread():
            fn(*args)
        else:
            self.loop.loop.call_soon_threadsafe(fn, *args)
