"""Keeping the cyclic garbage collector off the server's long-lived objects.

A Jupyter server with a project's runtime loaded holds ~300,000 objects that live as long as
the process: modules, classes, the model SDK's types, the server's settings. The cyclic GC's
full collections walk all of them: ~100 ms during which no request is served, about once per
burst of 100 runs (measured in ``benchmarks/server_streams.py``). ``gc.freeze()`` moves the
objects that exist at a moment into a permanent generation the collector skips, so it is done
once the server has started and again once a project's runtime has loaded its model SDK.
Objects created later are collected as usual; frozen ones that become garbage are freed by
reference counting, and only frozen cycles stay (they were alive when frozen).
"""

from __future__ import annotations

import gc
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agi_jupyter.app import Agi

log = logging.getLogger(__name__)


def freeze_heap() -> int:
    """Collect the garbage there is now, then freeze every object left; the frozen count."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def load_default_provider(agi: Agi) -> None:
    """Create the client of the project's default model now (importing its SDK), on the
    runtime's loop where runs use it, so that ``freeze_heap`` covers the SDK's objects too.
    A model that cannot be loaded (no key, a bad setting) is left alone here: the project opens
    as before and the first run that uses the model reports the problem."""

    try:
        agi.load_default_model()
    except Exception as error:  # a warm-up must never stop a project from opening
        log.debug("agi: the default model was not loaded ahead of use: %s", error)
