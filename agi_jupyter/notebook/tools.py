"""The notebook tools: ``notebook.read``, ``.insert``, ``.edit``, ``.delete``, ``.run``, and
``.wait`` / ``.interrupt`` for cells ``run`` left running (``notebook.detached``).

Cells are addressed by id. ``edit`` and ``delete`` carry the ``source_hash`` the agent read
and are refused (``HASH_MISMATCH``, nothing written) when the cell changed since. A cell
marked protected (metadata ``agi.protected``) is refused to ``run``, ``edit`` and ``delete``
(``CELL_PROTECTED``, checked before the hash); a ``run`` of all cells skips it and says so.
Every change answers with a receipt from re-reading the notebook, is recorded as a change of the run
(snapshots before and after, for undo) and comes with a ``notebook_diff`` artifact. ``path``
defaults to the run's notebook (the kernel's for ``%%agi``, the active one for the side
panel), else the session's.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import Field, model_validator

from agi_jupyter.errors import ErrorCode, ToolError
from agi_jupyter.kinds import ToolTrait
from agi_jupyter.notebook.access import NotebookAccess, NotebookTarget, locate
from agi_jupyter.notebook.detached import Cell, CellsJob, Executions
from agi_jupyter.notebook.diff import describe, diff_draft, label, unified
from agi_jupyter.notebook.document import Mutation, NotebookDocument
from agi_jupyter.notebook.images import images_of
from agi_jupyter.notebook.model import find_cell, is_protected, parse
from agi_jupyter.notebook.record import one_change_at_a_time, record_change
from agi_jupyter.notebook.render import render_cells, render_receipt
from agi_jupyter.records import utc_now
from agi_jupyter.tools.base import AnyTool, Tool, ToolArgs, ToolContext, ToolResult

PARKED = "the run waits for these cells (parked): it resumes with their result when they end."
PATH_HELP = "The notebook (.ipynb), relative to the project; default: the notebook of this run."
RUN_GRACE = 15.0  # beyond a notebook.run's own wait: the kernel's start, the last outputs
_PROMPT = (
    "Notebook tools work on the cells of a Jupyter notebook, live: the user sees your changes "
    "in the open notebook. Read before you change: notebook.read gives each cell's id and "
    "source_hash. notebook.edit and notebook.delete need the cell's current source_hash "
    "(expected_hash); if the cell changed since you read it, the change is refused and "
    "nothing is written: read again and retry. Every change answers with a receipt from "
    "re-reading the notebook; trust the receipt, and say so if a change did not land. "
    "notebook.run executes cells in the notebook's kernel, like the user running them; a "
    "cell still running after the call's timeout goes on running: you get an execution "
    "handle for notebook.wait (its result) or notebook.interrupt. Cells marked protected "
    "are the user's: you may not run, edit or delete them."
)


class PathArgs(ToolArgs):
    path: str | None = Field(None, description=PATH_HELP)


class ReadArgs(PathArgs):
    cell_ids: list[str] | None = Field(None, description="Only these cells (default: all).")
    include_outputs: bool = Field(True, description="Summarise the outputs of code cells.")


class InsertArgs(PathArgs):
    source: str = Field(description="The new cell's source.")
    cell_type: Literal["code", "markdown", "raw"] = Field("code", description="The cell type.")
    after_cell_id: str | None = Field(None, description="Insert after this cell.")
    index: int | None = Field(
        None, ge=0, description="Or: the position (0 = top); with neither, at the end."
    )

    @model_validator(mode="after")
    def _one_place(self) -> InsertArgs:
        if self.after_cell_id is not None and self.index is not None:
            raise ValueError("give after_cell_id or index, not both")
        return self


class EditArgs(PathArgs):
    cell_id: str = Field(description="The cell to change.")
    expected_hash: str = Field(description="The cell's source_hash from notebook.read.")
    source: str = Field(description="The cell's whole new source.")


class DeleteArgs(PathArgs):
    cell_id: str = Field(description="The cell to delete.")
    expected_hash: str = Field(description="The cell's source_hash from notebook.read.")


class RunArgs(PathArgs):
    cell_ids: list[str] | None = Field(
        None,
        min_length=1,
        description="Code cells to run, in this order; default: every code cell, top to "
        "bottom (protected cells skipped).",
    )
    timeout: float | None = Field(
        None,
        gt=0,
        le=3600,
        description="Seconds to wait for the cells (default: the project's notebook_run_wait, "
        "30 s); cells still running then are NOT interrupted: you get an execution handle.",
    )
    interrupt_after: float | None = Field(
        None,
        gt=0,
        le=86400,
        description="Interrupt a cell (kernel interrupt) once it has run this many seconds; "
        "default: never.",
    )


class HandleArgs(ToolArgs):
    handle: str = Field(description="The execution handle notebook.run answered with.")


class WaitArgs(HandleArgs):
    timeout: float | None = Field(
        None,
        gt=0,
        le=3600,
        description="Seconds to wait (default: the project's notebook_run_wait, 30 s); the "
        "cells are not interrupted when it passes.",
    )
    park: bool = Field(
        False,
        description="Still running after timeout (with park the default timeout is 0: at "
        "once), the run waits for the cells durably: no model call until they end, then you "
        "get their result as this call's answer. It also survives a closed browser; if the "
        "process following the cells stops (a server restart), you are told the kernel is "
        "gone. Use it for cells that run for minutes or longer.",
    )


class NotebookTool(Tool[Any]):
    def __init__(self, access: NotebookAccess) -> None:
        self.access = access

    async def target(self, path: str | None, ctx: ToolContext) -> NotebookTarget:
        own = await asyncio.to_thread(default_path, ctx)
        chosen = path or own
        if not chosen:
            raise ToolError("this session has no notebook: pass the notebook's path")
        if chosen != own:  # the model's own choice: inside the project, never elsewhere
            return locate(ctx.project, chosen)
        # The run's notebook (the one the user has open) may also be found from the server root.
        return self.access.locate(ctx.project, chosen)

    async def open(self, path: str | None, ctx: ToolContext) -> NotebookDocument:
        return await self.access.open(await self.target(path, ctx))

    async def cell_diff(
        self, path: str | None, ctx: ToolContext, cell_id: str, new: str | None
    ) -> str:
        """The diff of a cell's source now and ``new`` (None: the cell deleted)."""
        doc = await self.open(path, ctx)
        found = find_cell((await doc.read()).notebook, cell_id)
        if found is None:
            raise ToolError(f"no cell with id {cell_id!r}", code="CELL_NOT_FOUND")
        refuse_protected(found[1], cell_id)
        return unified(str(found[1].get("source")), new, label(doc.path, cell_id, found[1]))

    async def changed(
        self, verb: str, doc: NotebookDocument, mutation: Mutation, ctx: ToolContext
    ) -> ToolResult:
        recorded = await record_change(ctx, doc.path, mutation)
        before, after = parse(mutation.before), parse(mutation.after)
        draft = diff_draft(before, after, doc.path, mutation.backend)
        summary = describe((draft.data or {}).get("summary") or {})
        receipt = mutation.receipt
        return ToolResult(
            output=f"{render_receipt(verb, receipt, doc.path)}\nchanges: {summary}",
            ok=receipt.landed,
            data={
                "path": doc.path,
                "backend": mutation.backend,
                "receipt": receipt.to_dict(),
                "before_hash": mutation.before_cell_hash,
                "after_hash": receipt.source_hash,
                "notebook_before_sha": recorded.before_sha,
                "notebook_after_sha": recorded.after_sha,
            },
            artifact=draft if recorded.changed else None,
        )


def refuse_protected(cell: dict[str, Any], cell_id: str) -> None:
    if is_protected(cell):
        raise ToolError(
            f"cell {cell_id} is protected (metadata agi.protected): the user keeps it, agents "
            "may not run, edit or delete it; ask the user if it must change",
            code=ErrorCode.CELL_PROTECTED,
        )


async def check_unprotected(doc: NotebookDocument, cell_id: str) -> None:
    """Refuse a protected cell (before its hash is looked at); unknown cells are left to the
    operation, which says so."""
    found = find_cell((await doc.read()).notebook, cell_id)
    if found is not None:
        refuse_protected(found[1], cell_id)


def provenance(ctx: ToolContext) -> dict[str, Any]:
    """What a cell the agent creates or changes carries in its metadata's ``agi`` key: the
    run (when the call belongs to one) and when."""
    stamp: dict[str, Any] = {"changed_at": utc_now()}
    if ctx.run_id:
        stamp["run_id"] = ctx.run_id
    return stamp


def default_path(ctx: ToolContext) -> str | None:
    if ctx.run_id:
        run = ctx.store.get_run(ctx.run_id)
        if run.notebook_path:
            return run.notebook_path
    if ctx.session_id:
        return ctx.store.get_session(ctx.session_id).notebook_path
    return None


class NotebookRead(NotebookTool):
    name = "notebook.read"
    trait = ToolTrait.READ
    description = (
        "Read a notebook's cells in order: id, type, source, source_hash, execution count, "
        "outputs (summarised) and whether a code cell is stale (changed since it ran)."
    )
    parameters = ReadArgs
    read_only = True
    prompt = _PROMPT

    async def execute(self, args: ReadArgs, ctx: ToolContext) -> ToolResult:
        target = await self.target(args.path, ctx)
        doc = await self.access.open(target)
        state = await doc.read(await self.access.history(target))
        cells = state.cells
        if args.cell_ids is not None:
            known = {c.id: c for c in cells}
            missing = [i for i in args.cell_ids if i not in known]
            if missing:
                raise ToolError(
                    f"no cells with ids {', '.join(missing)} in {state.path}",
                    code=ErrorCode.CELL_NOT_FOUND,
                )
            cells = [known[i] for i in args.cell_ids]
        text = render_cells(state, cells, include_outputs=args.include_outputs)
        images = []
        if args.include_outputs:
            wanted = {c.id for c in cells}
            raw = [c for c in state.notebook.get("cells") or [] if c.get("id") in wanted]
            images = images_of((str(c["id"]), list(c.get("outputs") or [])) for c in raw)
        data = {
            "path": state.path,
            "backend": state.backend,
            "cells": [c.to_dict(include_outputs=args.include_outputs) for c in cells],
        }
        return ToolResult(output=text, data=data, images=images)


class NotebookInsert(NotebookTool):
    name = "notebook.insert"
    trait = ToolTrait.EDIT
    in_order = True
    description = "Insert a new cell into a notebook, after a cell id or at an index."
    parameters = InsertArgs

    async def preview(self, args: InsertArgs, ctx: ToolContext) -> str | None:
        doc = await self.open(args.path, ctx)
        place = (
            f"after cell {args.after_cell_id}"
            if args.after_cell_id is not None
            else "at the end"
            if args.index is None
            else f"at index {args.index}"
        )
        cell = {"cell_type": args.cell_type}
        return unified(None, args.source, label(doc.path, f"new, {place}", cell))

    async def execute(self, args: InsertArgs, ctx: ToolContext) -> ToolResult:
        doc = await self.open(args.path, ctx)
        async with one_change_at_a_time(doc.path):
            mutation = await doc.insert(
                args.cell_type,
                args.source,
                after_cell_id=args.after_cell_id,
                index=args.index,
                provenance=provenance(ctx),
            )
            return await self.changed("inserted", doc, mutation, ctx)


class NotebookEdit(NotebookTool):
    name = "notebook.edit"
    trait = ToolTrait.EDIT
    in_order = True
    description = (
        "Replace a cell's source. expected_hash is the cell's source_hash from notebook.read; "
        "if the cell changed since, nothing is written (HASH_MISMATCH)."
    )
    parameters = EditArgs

    async def preview(self, args: EditArgs, ctx: ToolContext) -> str | None:
        return await self.cell_diff(args.path, ctx, args.cell_id, args.source)

    async def execute(self, args: EditArgs, ctx: ToolContext) -> ToolResult:
        doc = await self.open(args.path, ctx)
        await check_unprotected(doc, args.cell_id)
        async with one_change_at_a_time(doc.path):
            mutation = await doc.edit(
                args.cell_id, args.expected_hash, args.source, provenance=provenance(ctx)
            )
            return await self.changed("edited", doc, mutation, ctx)


class NotebookDelete(NotebookTool):
    name = "notebook.delete"
    trait = ToolTrait.EDIT
    in_order = True
    description = (
        "Delete a cell. expected_hash is the cell's source_hash from notebook.read; if the "
        "cell changed since, nothing is deleted (HASH_MISMATCH)."
    )
    parameters = DeleteArgs

    async def preview(self, args: DeleteArgs, ctx: ToolContext) -> str | None:
        return await self.cell_diff(args.path, ctx, args.cell_id, None)

    async def execute(self, args: DeleteArgs, ctx: ToolContext) -> ToolResult:
        doc = await self.open(args.path, ctx)
        await check_unprotected(doc, args.cell_id)
        async with one_change_at_a_time(doc.path):
            mutation = await doc.delete(args.cell_id, args.expected_hash)
            return await self.changed("deleted", doc, mutation, ctx)


class ExecutionTool(NotebookTool):
    def __init__(self, access: NotebookAccess, executions: Executions) -> None:
        super().__init__(access)
        self.executions = executions


class NotebookRun(ExecutionTool):
    name = "notebook.run"
    in_order = True
    description = (
        "Run code cells in the notebook's own kernel, in order, as if the user ran them: "
        "outputs go into the notebook and come back here. Stops at the first error. Waits up "
        "to timeout; cells still running then go on (never interrupted unless you set "
        "interrupt_after): the answer has an execution handle for notebook.wait and "
        "notebook.interrupt."
    )
    parameters = RunArgs

    def call_timeout(self, args: RunArgs, default: float) -> float:
        return max(default, (args.timeout or 0.0) + RUN_GRACE)

    async def execute(self, args: RunArgs, ctx: ToolContext) -> ToolResult:
        target = await self.target(args.path, ctx)
        doc = await self.access.open(target)
        notebook = (await doc.read()).notebook
        skipped: list[str] = []
        if args.cell_ids is None:
            cells = []
            for cell in notebook.get("cells") or []:
                if cell.get("cell_type") != "code" or not str(cell.get("source")).strip():
                    continue
                cell_id = str(cell.get("id"))
                if is_protected(cell):
                    skipped.append(cell_id)
                else:
                    cells.append(Cell(cell_id, str(cell.get("source"))))
        else:
            cells = [_code_cell(notebook, cell_id) for cell_id in args.cell_ids]
        job = CellsJob(self.access, target, cells, ctx, interrupt_after=args.interrupt_after)
        job.skipped = skipped
        job.start()
        # A cancelled run leaves its cells running unless the cancel asks to interrupt them.
        return await self.executions.wait(
            job, wait_of(args.timeout, ctx), ctx.emit, interrupt_on_cancel=False
        )


def wait_of(timeout: float | None, ctx: ToolContext) -> float:
    """How long a call waits: its own timeout, else ``notebook_run_wait`` within the tool
    deadline (a call past it would be cancelled, and its cell interrupted)."""
    if timeout is not None:
        return timeout
    config = ctx.config
    return min(config.notebook_run_wait, max(1.0, config.tool_timeout - RUN_GRACE / 3))


class NotebookWait(ExecutionTool):
    name = "notebook.wait"
    trait = ToolTrait.READ
    description = (
        "Wait for cells notebook.run left running (by their execution handle): their result "
        "when they end within timeout, else the output so far (they are not interrupted). "
        "park: true (for long cells) makes the run itself wait for them, with no model call, "
        "and resume with their result."
    )
    parameters = WaitArgs

    def call_timeout(self, args: WaitArgs, default: float) -> float:
        return max(default, (args.timeout or 0.0) + RUN_GRACE)

    async def execute(self, args: WaitArgs, ctx: ToolContext) -> ToolResult:
        job = self.executions.get(args.handle)
        if args.park and ctx.park is not None:
            seconds = args.timeout or 0.0
            result = await self.executions.wait(job, seconds, ctx.emit, interrupt_on_cancel=False)
            task = job.task
            if task is not None and not task.done() and ctx.park(job.handle):
                result.output = f"{PARKED}\n{result.output}"
            return result
        seconds = wait_of(args.timeout, ctx)
        return await self.executions.wait(job, seconds, ctx.emit, interrupt_on_cancel=False)


class NotebookInterrupt(ExecutionTool):
    name = "notebook.interrupt"
    description = (
        "Interrupt the cell running under an execution handle of notebook.run (a kernel "
        "interrupt: KeyboardInterrupt in the cell; the cells after it are not run)."
    )
    parameters = HandleArgs

    async def execute(self, args: HandleArgs, ctx: ToolContext) -> ToolResult:
        job = self.executions.get(args.handle)
        return await self.executions.interrupt(job, ctx.emit)


def _code_cell(notebook: dict[str, Any], cell_id: str) -> Cell:
    found = find_cell(notebook, cell_id)
    if found is None:
        raise ToolError(
            f"no cell with id {cell_id!r}; call notebook.read", code=ErrorCode.CELL_NOT_FOUND
        )
    cell = found[1]
    refuse_protected(cell, cell_id)
    if cell.get("cell_type") != "code":
        raise ToolError(
            f"cell {cell_id} is a {cell.get('cell_type')} cell; only code cells run",
            code=ErrorCode.NOT_A_CODE_CELL,
        )
    return Cell(cell_id, str(cell.get("source")))


def notebook_tools(access: NotebookAccess, executions: Executions) -> list[AnyTool]:
    return [
        NotebookRead(access),
        NotebookInsert(access),
        NotebookEdit(access),
        NotebookDelete(access),
        NotebookRun(access, executions),
        NotebookWait(access, executions),
        NotebookInterrupt(access, executions),
    ]
