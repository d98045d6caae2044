"""agi-jupyter: a durable AI agent runtime for Jupyter.

Importing the package is cheap: the runtime (and with it the provider SDKs, ipywidgets and
tornado) loads on first use of a public name, so ``%load_ext agi_jupyter`` stays fast. The
Jupyter entry points below import their front door only when Jupyter calls them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from agi_jupyter.app import Agi, RunResult

__all__ = ["Agi", "RunResult", "__version__", "chat"]

_LAZY = {"Agi": "agi_jupyter.app", "RunResult": "agi_jupyter.app"}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'agi_jupyter' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def chat(**options: Any) -> Any:
    """Open the chat widget in a notebook (see ``agi_jupyter.kernel.widget``)."""
    from agi_jupyter.kernel.widget import chat as open_chat

    return open_chat(**options)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext agi_jupyter``: register the ``%%agi`` / ``%agi`` magics."""
    from agi_jupyter.kernel import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from agi_jupyter.kernel import unload_ipython_extension as unload

    unload(ipython)


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """The jupyter-server extension (REST + streaming API under ``/agi/``)."""
    from agi_jupyter.server.extension import AgiExtensionApp

    return [{"module": "agi_jupyter", "app": AgiExtensionApp}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The prebuilt JupyterLab side panel shipped in the wheel."""
    return [{"src": "labextension", "dest": "agi-jupyter"}]
