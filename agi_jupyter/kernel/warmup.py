"""Warming the runtime in the background right after ``%load_ext agi_jupyter``.

``%load_ext`` itself imports nothing heavy (it must stay fast), so the first ``%%agi`` cell used
to pay for everything at once: the runtime's modules, the model SDK (openai / anthropic) and
its client, several seconds on a busy machine. ``start`` does that work on a daemon thread
while the person types the first prompt: it imports the cell machinery, creates the kernel's
``Agi`` with the settings of that moment, and loads the default model's client on the
runtime's loop. Nothing is written to disk (the store opens on first use).

The magics call ``ready`` before they import the runtime, so imports happen on one thread at
a time (two threads importing the same modules can deadlock on import locks); if the first
cell comes before the warm-up ends, it waits for it instead of doing the same work twice.
Settings changed after ``%load_ext`` (``c.AgiMagics.project``...) are honoured:
``KernelContext.agi`` replaces an ``Agi`` made with other settings.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agi_jupyter.kernel.context import KernelContext

log = logging.getLogger(__name__)


def start(ctx: KernelContext) -> threading.Thread | None:
    """Start warming ``ctx``'s runtime on a daemon thread (unless ``warm_up`` is off)."""
    if not ctx.settings.warm_up:
        return None
    thread = threading.Thread(target=warm, args=(ctx,), name="agi-warm-up", daemon=True)
    ctx.warm_up = thread
    thread.start()
    return thread


# What the model SDKs' HTTP stack (httpx2 over anyio) imports on its first request, not at
# import time: ~100 ms of the first answer on a busy machine (benchmarks/kernel_first_cell.py).
FIRST_REQUEST_MODULES = (
    "concurrent.futures.thread",
    "anyio._backends._asyncio",
    "anyio._core._sockets",
    "anyio.streams.memory",
    "anyio.streams.stapled",
)


def warm(ctx: KernelContext) -> None:
    """Import the runtime, create the ``Agi`` and its default model's client, open the store
    if it exists. Never raises: a problem here shows up, with its real message, when a magic
    does the same work."""
    try:
        import agi_jupyter.kernel.agi_cell  # noqa: F401  (the runtime, store and providers)
        from agi_jupyter.providers import catalog

        agi = ctx.agi
        agi.load_default_model()
        catalog.lookup(*agi.config.resolve_model())  # the prices, read once per process
        for name in FIRST_REQUEST_MODULES:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        agi.sessions(limit=1)  # opens (and migrates) an existing store, creates none
    except Exception as error:
        log.debug("agi: warming the runtime failed: %s", error)


def ready(ctx: KernelContext) -> None:
    """Wait until the warm-up of ``ctx`` (if any) is done."""
    thread = ctx.warm_up
    if thread is not None and thread is not threading.current_thread():
        thread.join()
