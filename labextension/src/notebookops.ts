/**
 * The agent's notebook requests, applied to the open notebook's shared model (the model the
 * tab shows: with real-time collaboration it is the collaborative document, without it the
 * tab's own). Changes go through the shared model in one transaction each, so they are in the
 * user's undo history and the user's unsaved edits stay. Edits and deletes carry the source
 * the agent saw (`expected_source`) and are refused, changing nothing, when the cell holds
 * something else now. The requests and replies are the bridge protocol's, whose types are
 * generated from the server's OpenAPI document (`agi_jupyter/notebook/wire.py`): `TabRequest`,
 * its `change` (one of the operations of `agi_jupyter/notebook/ops.py`, by `op`), `TabReply`.
 *
 * No JupyterLab import: the shared model is `@jupyter/ydoc`'s, which the tests use directly.
 */

import type { ISharedNotebook } from '@jupyter/ydoc';
import type * as nbformat from '@jupyterlab/nbformat';

import { type components, ErrorCode } from './openapi';

type Schemas = components['schemas'];
/** One change to apply, discriminated by `op`. */
export type Change = NonNullable<Schemas['TabRequest']['change']>;
/** A request of the agent over a kernel's comm. */
export type NotebookRequest = Schemas['TabRequest'];
/** A request of the agent on the server's bridge stream (with the notebook's `path`). */
export type BridgeRequest = Schemas['NotebookRequest'];
/** The answer; its notebooks (JSON objects in the document) are nbformat's. */
export type Reply = Omit<Schemas['TabReply'], 'notebook' | 'before' | 'after'> & {
  notebook?: nbformat.INotebookContent | null;
  before?: nbformat.INotebookContent | null;
  after?: nbformat.INotebookContent | null;
};

class Refused extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string
  ) {
    super(message);
  }
}

/** The answer to a request about `notebook` (never throws: a refusal is `ok: false`). */
export function answer(notebook: ISharedNotebook, request: NotebookRequest): Reply {
  if (request.op === 'read') {
    return { ok: true, notebook: notebook.toJSON() };
  }
  if (!request.change) {
    return { ok: false, code: ErrorCode.BAD_REQUEST, message: 'an apply request needs a change' };
  }
  const before = notebook.toJSON();
  try {
    apply(notebook, request.change);
  } catch (error) {
    if (error instanceof Refused) {
      return { ok: false, code: error.code, message: error.message };
    }
    return { ok: false, code: ErrorCode.NOTEBOOK_TAB_ERROR, message: String(error) };
  }
  return { ok: true, before, after: notebook.toJSON() };
}

export function apply(notebook: ISharedNotebook, change: Change): void {
  if (change.op === 'replace') {
    notebook.fromJSON(change.notebook as unknown as nbformat.INotebookContent);
    return;
  }
  if (change.op === 'insert') {
    const at = position(notebook, change);
    const cell = { cell_type: change.cell_type, source: change.source, id: change.cell_id, metadata: change.metadata ?? {} };
    notebook.transact(() => notebook.insertCell(at, cell as never));
    return;
  }
  const index = indexOf(notebook, change.cell_id);
  const cell = notebook.cells[index]!;
  if (change.op === 'set_outputs') {
    if (cell.cell_type !== 'code') {
      throw new Refused(ErrorCode.NOT_A_CODE_CELL, `cell ${change.cell_id} is not a code cell`);
    }
    const code = cell as unknown as { setOutputs(o: nbformat.IOutput[]): void; execution_count: number | null };
    notebook.transact(() => {
      code.setOutputs(change.outputs as unknown as nbformat.IOutput[]);
      code.execution_count = change.execution_count;
    });
    return;
  }
  if (cell.getSource() !== change.expected_source) {
    throw new Refused(
      ErrorCode.HASH_MISMATCH,
      `cell ${change.cell_id} changed since you read it (someone edited it in the open tab); ` +
        'nothing was written. Call notebook.read and retry with the new hash.'
    );
  }
  if (change.op === 'edit') {
    const metadata = change.metadata;
    notebook.transact(() => {
      cell.setSource(change.source);
      if (metadata !== null && metadata !== undefined) {
        setMetadata(cell, metadata);
      }
    });
  } else {
    notebook.transact(() => notebook.deleteCell(index));
  }
}

/** A cell's metadata as a whole: keys it no longer has are deleted (undo puts it back). */
function setMetadata(cell: ISharedNotebook['cells'][number], metadata: Record<string, unknown>): void {
  for (const key of Object.keys(cell.getMetadata())) {
    if (!(key in metadata)) {
      cell.deleteMetadata(key);
    }
  }
  cell.setMetadata(metadata as never);
}

function indexOf(notebook: ISharedNotebook, cellId: string): number {
  const index = notebook.cells.findIndex(cell => cell.id === cellId);
  if (index < 0) {
    throw new Refused(ErrorCode.CELL_NOT_FOUND, `no cell with id ${JSON.stringify(cellId)} in the open notebook`);
  }
  return index;
}

function position(notebook: ISharedNotebook, change: Extract<Change, { op: 'insert' }>): number {
  if (change.after_cell_id) {
    return indexOf(notebook, change.after_cell_id) + 1;
  }
  const count = notebook.cells.length;
  if (change.index === null || change.index === undefined) {
    return count;
  }
  if (change.index < 0 || change.index > count) {
    throw new Refused(ErrorCode.INDEX_OUT_OF_RANGE, `index ${change.index} is out of range: the notebook has ${count} cells`);
  }
  return change.index;
}
