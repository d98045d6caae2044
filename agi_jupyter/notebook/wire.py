"""The notebook bridge protocol: what a JupyterLab tab is asked and what it answers.

An agent's notebook request reaches the tab that holds the notebook over a kernel's comm
(``kernel.tab``) or the server's per-window stream (``server.notebooks.bridge``); the tab
(``labextension/src/notebookops.ts``) applies it to the notebook's shared model and answers with
``POST /agi/v1/notebook/replies``. Both directions are these models: the OpenAPI document has
their schemas (``TabRequest``, ``TabReply`` and the ``change`` union, discriminated by ``op``),
from which the panel's TypeScript gets its types.

A change is the JSON form of one ``ops`` operation (``change_of`` / ``op_of``). Edits and
deletes carry the source the agent saw (``expected_source``); the tab refuses them, changing
nothing, when the cell holds something else now (``HASH_MISMATCH``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter

from agi_jupyter.errors import ErrorCode
from agi_jupyter.notebook.ops import Delete, Edit, Insert, Op, Replace, SetOutputs

JSONObject = dict[str, Any]


class InsertChange(BaseModel):
    """A new cell after ``after_cell_id``, else at ``index``, else at the end."""

    op: Literal["insert"]
    cell_id: str
    cell_type: str = Field(description="code, markdown or raw.")
    source: str
    after_cell_id: str | None = None
    index: int | None = None
    metadata: JSONObject | None = Field(None, description="The cell's metadata (default: none).")


class EditChange(BaseModel):
    """A cell's new source, if it still holds ``expected_source``."""

    op: Literal["edit"]
    cell_id: str
    expected_source: str
    source: str
    metadata: JSONObject | None = Field(
        None, description="The cell's metadata as a whole (undo); null: left as it is."
    )


class DeleteChange(BaseModel):
    """A cell removed, if it still holds ``expected_source``."""

    op: Literal["delete"]
    cell_id: str
    expected_source: str


class SetOutputsChange(BaseModel):
    """A code cell's outputs (nbformat) and execution count, after the agent ran it."""

    op: Literal["set_outputs"]
    cell_id: str
    outputs: list[JSONObject]
    execution_count: int | None


class ReplaceChange(BaseModel):
    """The whole notebook (nbformat JSON), as an undo restores it."""

    op: Literal["replace"]
    notebook: JSONObject


TabChange = Annotated[
    Union[InsertChange, EditChange, DeleteChange, SetOutputsChange, ReplaceChange],  # noqa: UP007
    Field(discriminator="op"),
]
TabOp = Literal["read", "apply"]


class TabRequest(BaseModel):
    """A request to a tab: read the notebook, or apply one change to it. Over a kernel's comm
    exactly this; on the server's bridge stream a ``NotebookRequest`` (with the notebook's
    ``path``)."""

    request_id: str
    op: TabOp
    change: TabChange | None = Field(None, description="The change to apply (op apply).")


class NotebookRequest(TabRequest):
    """What the bridge stream sends a tab: read the notebook, or apply one change to it."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)  # all sent

    type: Literal["notebook.request"] = "notebook.request"
    path: str = Field(description="The notebook, relative to the server root.")


def _code(value: Any) -> Any:
    # Replies are validated strictly (request bodies): a code arrives as a string.
    return ErrorCode(value) if isinstance(value, str) else value


class TabReply(BaseModel):
    """A tab's answer: ``ok`` with the notebook (read) or the notebook before and after the
    change (apply), or a refusal (``ok`` false, its ``code`` and ``message``). The answer to a
    kernel comm's opening (a hello) is ``ok`` with the notebook's ``path``."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    code: Annotated[ErrorCode, BeforeValidator(_code)] | None = None
    message: str | None = None
    notebook: JSONObject | None = None
    before: JSONObject | None = None
    after: JSONObject | None = None
    path: str | None = Field(None, description="A hello: the notebook the tab has open.")


AnyChange = InsertChange | EditChange | DeleteChange | SetOutputsChange | ReplaceChange
_CHANGE: TypeAdapter[TabChange] = TypeAdapter(TabChange)
# The ``op`` of each operation on the wire (``Replace`` apart: its snapshot bytes stay here).
_OPS: dict[type[Insert | Edit | Delete | SetOutputs], str] = {
    Insert: "insert",
    Edit: "edit",
    Delete: "delete",
    SetOutputs: "set_outputs",
}


def change_of(op: Op) -> AnyChange:
    """The wire form of an operation (``Replace``: its parsed notebook, not its bytes)."""
    if isinstance(op, Replace):
        return ReplaceChange(op="replace", notebook=op.notebook)
    return _CHANGE.validate_python({"op": _OPS[type(op)], **asdict(op)})


def op_of(change: AnyChange) -> Op:
    """The operation of a change (``Replace`` without its snapshot bytes)."""
    if isinstance(change, ReplaceChange):
        return Replace(content=b"", notebook=change.notebook)
    kind = next(kind for kind, name in _OPS.items() if name == change.op)
    return kind(**change.model_dump(exclude={"op"}))
