"""Notebook context for prompts: ``{var}`` / ``{In[n]}`` / ``{Out[n]}`` / ``{Err[n]}``
interpolation, and summaries of variables (``%%agi -c df,arr``).

Interpolation never fails: a name that is not defined, a cell that has no output or error, or
anything that is not one of the forms above (JSON such as ``{"path": "x"}``) is left as written.
Summaries describe a value without importing its library: a DataFrame by shape, column dtypes
and head; an array by shape and dtype; anything else by type and a truncated ``repr``. The same
summaries answer ``@var`` mentions (``describe``, ``variables_json``: the server evaluates them
in a notebook's kernel).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from agi_jupyter.kinds import MentionKind
from agi_jupyter.mentions import parse_mentions

if TYPE_CHECKING:
    from agi_jupyter.app import Agi
    from agi_jupyter.records import MentionPart

_FIELD = re.compile(
    r"\{(?:(?P<hist>In|Out|Err)\[(?P<index>-?\d+)\]"
    r"|(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*))\}"
)
MAX_VALUE_CHARS = 4_000
MAX_REPR_CHARS = 1_000
HEAD_ROWS = 5

_MISSING = object()


def interpolate(
    template: str,
    namespace: Mapping[str, Any],
    errors: Mapping[int, str],
    *,
    max_chars: int = MAX_VALUE_CHARS,
) -> str:
    """``template`` with its ``{...}`` fields replaced from the user namespace."""

    def replace(match: re.Match[str]) -> str:
        if match.group("hist"):
            value = _history(match.group("hist"), int(match.group("index")), namespace, errors)
        else:
            value = _lookup(match.group("name"), namespace)
        if value is _MISSING:
            return match.group(0)
        return _clip(value if isinstance(value, str) else _safe_str(value), max_chars)

    return _FIELD.sub(replace, template)


def _lookup(dotted: str, namespace: Mapping[str, Any]) -> Any:
    head, *rest = dotted.split(".")
    value = namespace.get(head, _MISSING)
    for attr in rest:
        if value is _MISSING:
            break
        try:
            value = getattr(value, attr)
        except Exception:
            value = _MISSING
    return value


def _history(kind: str, index: int, namespace: Mapping[str, Any], errors: Mapping[int, str]) -> Any:
    if kind == "Err":
        return errors.get(index, _MISSING)
    if kind == "Out":
        outputs = namespace.get("Out")
        return outputs.get(index, _MISSING) if isinstance(outputs, Mapping) else _MISSING
    inputs = namespace.get("In")
    if not isinstance(inputs, list):
        return _MISSING
    try:
        source = inputs[index]
    except IndexError:
        return _MISSING
    return source if source else _MISSING


def _safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception as e:
        return f"<{type(value).__name__}: str() failed: {e}>"


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" [... {len(text) - limit} more characters]"


# --- variable summaries ----------------------------------------------------------------------


def _type_name(value: Any) -> str:
    cls = type(value)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def _call(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as e:
        return f"<failed: {type(e).__name__}: {e}>"


def _frame_summary(value: Any) -> list[str]:
    lines = [f"shape: {tuple(value.shape)}", "columns:"]
    dtypes = value.dtypes
    for column in list(value.columns)[:50]:
        lines.append(f"  {column}: {dtypes[column]}")
    if len(value.columns) > 50:
        lines.append(f"  ... {len(value.columns) - 50} more columns")
    head = _call(lambda: value.head(HEAD_ROWS).to_string())
    lines.append(f"head({HEAD_ROWS}):\n{_clip(str(head), MAX_VALUE_CHARS)}")
    return lines


def _array_summary(value: Any) -> list[str]:
    lines = [f"shape: {tuple(value.shape)}", f"dtype: {value.dtype}"]
    lines.append(f"repr: {_clip(_call(lambda: repr(value)), MAX_REPR_CHARS)}")
    return lines


def _is_frame(value: Any) -> bool:
    return all(hasattr(value, a) for a in ("columns", "dtypes", "head", "shape"))


def _is_array(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def summarize(name: str, value: Any) -> str:
    """A short description of one variable for the model."""
    lines = [f"### `{name}` ({_type_name(value)})"]
    if _is_frame(value):
        lines.extend(_frame_summary(value))
    elif _is_array(value):
        lines.extend(_array_summary(value))
    else:
        if hasattr(value, "__len__") and not isinstance(value, str | bytes):
            lines.append(f"len: {_call(lambda: len(value))}")
        lines.append(f"repr: {_clip(_call(lambda: repr(value)), MAX_REPR_CHARS)}")
    return "\n".join(lines)


def context_block(names: list[str], namespace: Mapping[str, Any]) -> str:
    """The prompt section describing ``names`` (unknown names are said to be undefined)."""
    sections = []
    for name in names:
        value = _lookup(name, namespace)
        if value is _MISSING:
            sections.append(f"### `{name}`\nnot defined in the notebook")
        else:
            sections.append(summarize(name, value))
    return "## Notebook variables\n\n" + "\n\n".join(sections)


def describe(name: str, namespace: Mapping[str, Any]) -> str | None:
    """``summarize`` of the variable ``name`` (a dotted name too), None when it is not defined
    (what an ``@var`` mention sends; the server asks it of a notebook's kernel)."""
    value = _lookup(name, namespace)
    return None if value is _MISSING else summarize(name, value)


def _listed(name: str, value: Any) -> bool:
    """A user's variable: not private, not IPython's history, not a module, class or function."""
    if name.startswith("_") or name in _IPYTHON_NAMES:
        return False
    return not (isinstance(value, type | ModuleType) or callable(value))


_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})


def brief(value: Any) -> str:
    """A one-line description of a value: a DataFrame's shape and columns, an array's shape
    and dtype, a container's length."""
    if _is_frame(value):
        columns = ", ".join(str(c) for c in list(value.columns)[:10])
        more = ", ..." if len(value.columns) > 10 else ""
        return f"shape {tuple(value.shape)}; columns {columns}{more}"
    if _is_array(value):
        return f"shape {tuple(value.shape)}, dtype {value.dtype}"
    if hasattr(value, "__len__") and not isinstance(value, str | bytes):
        return f"len {_call(lambda: len(value))}"
    return _clip(_call(lambda: repr(value)), 80)


def variables_json(namespace: Mapping[str, Any], limit: int = 200) -> str:
    """The user's variables as JSON, ``[{"name", "type", "summary"}]`` in name order, at most
    ``limit`` (for ``@var`` completion and the inline completer's context)."""
    rows = [
        {"name": name, "type": _type_name(value), "summary": _clip(brief(value), 200)}
        for name, value in sorted(namespace.items(), key=lambda item: str(item[0]))
        if isinstance(name, str) and _listed(name, value)
    ]
    return json.dumps(rows[:limit])


def written_mentions(agi: Agi, prompt: str, namespace: Mapping[str, Any]) -> list[MentionPart]:
    """The context parts of the ``@var name`` and ``@file path`` mentions written in
    ``prompt`` (a ``%%agi`` cell, the chat widget's text box), resolved as the server resolves
    the panel's: variables described from ``namespace`` (this kernel's)."""
    mentions = parse_mentions(prompt)
    if not mentions:
        return []
    summaries = {}
    for mention in mentions:
        summary = describe(mention.ref, namespace) if mention.kind is MentionKind.VAR else None
        if summary is not None:
            summaries[mention] = summary
    return agi.mention_parts(mentions, summaries)
