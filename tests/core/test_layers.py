"""The layering of the package: the front doors (server, kernel, CLI, MCP server) go through
``Agi`` (``agi_jupyter.app``), never past it into its store."""

from __future__ import annotations

import ast
from pathlib import Path

import agi_jupyter

PACKAGE = Path(agi_jupyter.__file__).parent
FRONT_DOORS = ("server", "kernel", "cli", "mcp_server")

# ``.store`` reads in front doors that are not an ``Agi``'s: (module, receiver).
NOT_AN_AGI = {
    # A tool's ``ToolContext`` (the server's ``python`` tool for a notebook's live kernel).
    ("server/kernels.py", "ctx"),
}


def store_reads(source: str) -> list[tuple[int, str]]:
    """Every read of an attribute ``store`` in ``source``: (line, receiver as written), also
    ``getattr(x, "store")`` and ``vars(x)["store"]``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "store":
            found.append((node.lineno, ast.unparse(node.value)))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == "store"
        ):
            found.append((node.lineno, ast.unparse(node.args[0])))
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and node.slice.value == "store"
        ):
            found.append((node.lineno, ast.unparse(node.value)))
    return sorted(found)


def test_the_check_sees_every_spelling() -> None:
    source = "\n".join(
        [
            "agi.store.get_run('r')",
            "self.agi.store.list_messages(s)",
            "ctx.agi.store.location",
            "store = app.store",
            "f(target.store)",
            "getattr(agi, 'store')",
            "vars(agi)['store']",
            "agi.stored_events(); agi.run_events('r'); restore(x)",
        ]
    )
    receivers = [receiver for _line, receiver in store_reads(source)]
    assert receivers == ["agi", "self.agi", "ctx.agi", "app", "target", "agi", "vars(agi)"]


def test_front_doors_do_not_reach_past_agi_into_its_store() -> None:
    modules = [p for door in FRONT_DOORS for p in sorted((PACKAGE / door).rglob("*.py"))]
    assert len(modules) > 40, "the front doors were found"
    reaching = [
        f"{path.relative_to(PACKAGE)}:{line}: {receiver}.store"
        for path in modules
        for line, receiver in store_reads(path.read_text(encoding="utf-8"))
        if (path.relative_to(PACKAGE).as_posix(), receiver) not in NOT_AN_AGI
    ]
    assert reaching == [], "front doors must go through Agi's methods:\n" + "\n".join(reaching)
