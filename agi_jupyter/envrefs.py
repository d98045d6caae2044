"""``${VAR}`` references in configuration values (MCP servers' env/headers, ACP agents' env).

The ``mcpServers`` files of Claude Desktop, Claude Code, Cursor and VS Code keep secrets out of
the file with references; the forms they use are all understood here:

    ${VAR}            the value of VAR
    ${env:VAR}        the same (VS Code, Cursor)
    ${VAR:-default}   VAR, or ``default`` when VAR is unset or empty (Claude Code)

Values come from a lookup the caller builds (the environment over the global credentials file;
see ``config.reference_values``). ``expand`` reports every value it substituted, so the caller
can hand them to the ``Redactor``: a resolved secret is kept in memory only, never stored,
logged or shown. Imports nothing from the package.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class MissingReference(Exception):
    """A ``${VAR}`` names a variable that is neither set nor has a default."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        listed = ", ".join(names)
        super().__init__(f"${{{names[0]}}} is not set" if len(names) == 1 else f"not set: {listed}")


@dataclass
class Expanded:
    """A mapping with its references substituted, and the values that were substituted."""

    values: dict[str, str] = field(default_factory=dict, repr=False)
    substituted: list[str] = field(default_factory=list, repr=False)


def expand(text: str, lookup: Mapping[str, str], into: Expanded | None = None) -> str:
    """``text`` with every reference replaced (raises ``MissingReference``)."""
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = lookup.get(name)
        if value:
            if into is not None:
                into.substituted.append(value)
            return value
        if default is not None:
            return default
        if name not in missing:
            missing.append(name)
        return ""

    result = _REFERENCE.sub(replace, text)
    if missing:
        raise MissingReference(missing)
    return result


def expand_mapping(values: Mapping[str, str], lookup: Mapping[str, str]) -> Expanded:
    """Every value of ``values`` expanded (raises ``MissingReference`` naming all missing)."""
    out = Expanded()
    missing: list[str] = []
    for key, raw in values.items():
        try:
            out.values[key] = expand(raw, lookup, out)
        except MissingReference as e:
            missing.extend(n for n in e.names if n not in missing)
    if missing:
        raise MissingReference(missing)
    return out


def has_reference(text: str) -> bool:
    return _REFERENCE.search(text) is not None
