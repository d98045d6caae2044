"""Typed doors into IPython's partly annotated API (magic decorators, argument parsing,
``display``), so the rest of the kernel package type-checks strictly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import IPython.core.magic as _magic
import IPython.core.magic_arguments as _magic_arguments

F = TypeVar("F", bound=Callable[..., Any])

_M: Any = _magic
_MA: Any = _magic_arguments
Magics: Any = _M.Magics
MagicArgumentParser: Any = _MA.MagicArgumentParser


def magics_class(cls: type[Any]) -> type[Any]:
    return cast(type[Any], _M.magics_class(cls))


def cell_magic(name: str) -> Callable[[F], F]:
    return cast(Callable[[F], F], _M.cell_magic(name))


def line_magic(name: str) -> Callable[[F], F]:
    return cast(Callable[[F], F], _M.line_magic(name))


def with_arguments(
    name: str, options: list[tuple[tuple[str, ...], dict[str, Any]]]
) -> Callable[[F], F]:
    """``@magic_arguments(name)`` plus one ``@argument(...)`` per option, in order."""

    def decorate(func: F) -> F:
        for flags, kwargs in reversed(options):
            func = _MA.argument(*flags, **kwargs)(func)
        return cast(F, _MA.magic_arguments(name)(func))

    return decorate


def parse_argstring(magic: Callable[..., Any], line: str) -> Any:
    return _MA.parse_argstring(magic, line)


def display(*objects: Any, **kwargs: Any) -> Any:
    from IPython import display as _display

    shown: Any = _display
    return shown.display(*objects, **kwargs)


def markdown(text: str) -> Any:
    from IPython import display as _display

    shown: Any = _display
    return shown.Markdown(text)


def clear_output(*, wait: bool = False) -> None:
    from IPython import display as _display

    shown: Any = _display
    shown.clear_output(wait=wait)


def is_terminal(shell: Any) -> bool:
    """Whether ``shell`` is a terminal IPython (no display handles, text output)."""
    return type(shell).__name__ == "TerminalInteractiveShell"


def someone_can_answer(shell: Any) -> bool:
    """Whether a person drives this kernel's current execution. A frontend a person uses
    (JupyterLab, Notebook, VS Code) sends ``allow_stdin: true``; headless runners (nbclient,
    papermill, ``nbconvert --execute``, nbval) send false. A shell without a kernel (a test's
    in-process shell) counts as attended."""
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return True
    parent = get_parent() or {}
    content = parent.get("content") if isinstance(parent, dict) else None
    if not isinstance(content, dict) or "allow_stdin" not in content:
        return True
    return bool(content["allow_stdin"])
