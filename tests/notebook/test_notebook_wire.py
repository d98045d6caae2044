"""The notebook bridge protocol (``notebook.wire``): every operation goes to a tab as its change
and comes back as the same operation; a tab's answer is checked against ``TabReply``, and a
refusal is the ``NotebookError`` of its code."""

from __future__ import annotations

from typing import Any

import pytest

from agi_jupyter.errors import ErrorCode
from agi_jupyter.notebook.ops import Delete, Edit, Insert, NotebookError, Op, Replace, SetOutputs
from agi_jupyter.notebook.tab import checked
from agi_jupyter.notebook.wire import TabRequest, change_of, op_of

OPS: list[Op] = [
    Insert(cell_type="markdown", source="# t", cell_id="c1", after_cell_id="c0"),
    Edit(cell_id="c1", expected_source="# t", source="# u"),
    Delete(cell_id="c1", expected_source="# u"),
    SetOutputs(cell_id="c2", outputs=[{"output_type": "stream", "text": "1"}], execution_count=4),
    Replace(content=b"", notebook={"cells": [], "nbformat": 4}),
]


@pytest.mark.parametrize("op", OPS, ids=lambda op: type(op).__name__)
def test_an_operation_crosses_the_wire_and_back(op: Op) -> None:
    wire = change_of(op).model_dump(mode="json")
    request = TabRequest.model_validate({"request_id": "nbr_1", "op": "apply", "change": wire})
    assert request.change is not None
    assert request.change.op == wire["op"]
    assert op_of(request.change) == op


def test_a_tabs_answer_is_checked() -> None:
    notebook: dict[str, Any] = {"cells": []}
    assert checked({"ok": True, "notebook": notebook}).notebook == notebook
    with pytest.raises(NotebookError) as refused:
        checked({"ok": False, "code": "HASH_MISMATCH", "message": "cell c1 changed"})
    assert (refused.value.code, refused.value.message) == (
        ErrorCode.HASH_MISMATCH,
        "cell c1 changed",
    )
    with pytest.raises(NotebookError) as unknown:
        checked({"ok": False, "code": "NO_SUCH_CODE"})
    assert unknown.value.code == ErrorCode.NOTEBOOK_TAB_ERROR
    with pytest.raises(NotebookError) as silent:
        checked({"ok": False})
    assert silent.value.code == ErrorCode.NOTEBOOK_TAB_ERROR
