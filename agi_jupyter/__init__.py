"""agi-jupyter: a durable AI agent runtime for Jupyter.

Importing the package is cheap: the runtime (and with it the provider SDKs, ipywidgets and
tornado) loads on first use of a public name, so ``%load_ext agi_jupyter`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from agi_jupyter.app import Agi, RunResult

__all__ = ["Agi", "RunResult", "__version__"]

_LAZY = {"Agi": "agi_jupyter.app", "RunResult": "agi_jupyter.app"}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'agi_jupyter' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
