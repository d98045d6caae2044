"""Whether the official MCP SDK this code is written for is installed.

The MCP features (MCP servers' tools, ``agi mcp``, ``/agi/mcp``) use ``mcp`` 2.x, an optional
dependency (``pip install 'agi-jupyter[mcp]'``): jupyter-ai 3.x pins ``mcp<2`` (through
jupyter-server-mcp and fastmcp 3), and agi-jupyter installs beside it without them. Imports
nothing of the SDK.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from agi_jupyter.errors import SdkNotAvailable

REQUIREMENT = "mcp>=2.3"
INSTALL = "pip install 'agi-jupyter[mcp]'"


def mcp_sdk_problem() -> str | None:
    """Why the MCP SDK cannot be used here (None: it can)."""
    try:
        installed = version("mcp")
    except PackageNotFoundError:
        return f"the MCP features need the mcp package ({REQUIREMENT}): {INSTALL}"
    major = installed.split(".", 1)[0]
    if not major.isdigit() or int(major) < 2:
        return (
            f"the MCP features need {REQUIREMENT}, and mcp {installed} is installed "
            "(jupyter-ai 3.x pins mcp<2); they work in an environment with mcp 2"
        )
    return None


def require_mcp_sdk() -> None:
    """Raise ``SdkNotAvailable`` unless the MCP SDK can be used."""
    problem = mcp_sdk_problem()
    if problem is not None:
        raise SdkNotAvailable(problem)
