"""Every error code is a member of ``errors.ErrorCode``: the tree's classes use its members, and
any code the package's source still spells out (``code="..."``, ``{"code": "..."}``) names one
of them, so the OpenAPI document's ``ErrorCode`` enum (and the panel's constants) is complete."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from agi_jupyter import errors
from agi_jupyter.errors import AgiError, ErrorCode

PACKAGE = Path(errors.__file__).resolve().parent
OURS = re.compile(r"^[A-Z][A-Z0-9_]+$")  # our codes; a provider's own ("server_error") are not


def spelled_codes(tree: ast.AST) -> set[str]:
    """The codes written as string literals: ``code=...`` arguments, ``"code": ...`` entries
    and ``code = ...`` class attributes."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found += [k.value for k in node.keywords if k.arg == "code"]
        elif isinstance(node, ast.Dict):
            found += [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == "code"
            ]
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "code" for t in node.targets
        ):
            found.append(node.value)
    return {
        v.value
        for v in found
        if isinstance(v, ast.Constant) and isinstance(v.value, str) and OURS.match(v.value)
    }


def test_every_code_spelled_in_the_package_is_an_error_code() -> None:
    spelled: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for code in spelled_codes(ast.parse(path.read_text(encoding="utf-8"))):
            spelled.setdefault(code, set()).add(str(path.relative_to(PACKAGE)))
    unknown = {code: where for code, where in spelled.items() if code not in set(ErrorCode)}
    assert not unknown, f"codes missing from errors.ErrorCode: {unknown}"


def test_the_exception_tree_uses_the_enum() -> None:
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, AgiError)]
    assert len(classes) > 20
    for cls in classes:
        assert isinstance(cls.code, ErrorCode), cls
    assert all(member.name == member.value for member in ErrorCode)
    assert AgiError("x", code=ErrorCode.HASH_MISMATCH).to_dict()["code"] == "HASH_MISMATCH"
