"""Notebooks for server runs: the RTC shared document, open tabs through the labextension's
bridge, the file; cells in the notebook's kernel in this server (see ``access``)."""

from agi_jupyter.server.notebooks.access import ServerNotebookAccess
from agi_jupyter.server.notebooks.bridge import TabBridge

__all__ = ["ServerNotebookAccess", "TabBridge"]
