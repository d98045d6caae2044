import { YNotebook } from '@jupyter/ydoc';
import { describe, expect, it } from 'vitest';

import { answer, type NotebookRequest } from '../src/notebookops';

function notebook(): YNotebook {
  const nb = YNotebook.create();
  nb.insertCells(0, [
    { cell_type: 'markdown', source: '# Title', id: 'intro', metadata: {} },
    { cell_type: 'code', source: 'x = 1', id: 'load', metadata: {}, outputs: [], execution_count: null }
  ] as never);
  return nb;
}

function apply(nb: YNotebook, change: NotebookRequest['change']) {
  return answer(nb, { request_id: 'r', op: 'apply', change });
}

describe('notebook requests on the shared model', () => {
  it('reads the notebook as nbformat JSON', () => {
    const reply = answer(notebook(), { request_id: 'r', op: 'read' });
    expect(reply.ok).toBe(true);
    expect(reply.notebook?.cells.map(c => [c.id, c.source])).toEqual([
      ['intro', '# Title'],
      ['load', 'x = 1']
    ]);
  });

  it('inserts, edits and deletes by id, answering with before and after', () => {
    const nb = notebook();
    const inserted = apply(nb, { op: 'insert', cell_id: 'new', cell_type: 'code', source: 'y = 2', after_cell_id: 'intro' });
    expect(inserted.ok).toBe(true);
    expect(inserted.before?.cells.length).toBe(2);
    expect(inserted.after?.cells.map(c => c.id)).toEqual(['intro', 'new', 'load']);
    expect(apply(nb, { op: 'edit', cell_id: 'load', expected_source: 'x = 1', source: 'x = 3' }).ok).toBe(true);
    expect(nb.cells[2]!.getSource()).toBe('x = 3');
    expect(apply(nb, { op: 'delete', cell_id: 'intro', expected_source: '# Title' }).ok).toBe(true);
    expect(nb.cells.map(c => c.id)).toEqual(['new', 'load']);
  });

  it('puts a cell\'s metadata back as a whole with an undo\'s edit or insert', () => {
    const nb = notebook();
    nb.cells[1]!.setMetadata({ tags: ['agent'], scrolled: true } as never);
    const edit = { op: 'edit', cell_id: 'load', expected_source: 'x = 1', source: 'x = 0', metadata: { tags: ['setup'] } };
    expect(apply(nb, edit as never).ok).toBe(true);
    expect(nb.cells[1]!.getMetadata()).toEqual({ tags: ['setup'] });
    expect(apply(nb, { op: 'edit', cell_id: 'load', expected_source: 'x = 0', source: 'x = 5' }).ok).toBe(true);
    expect(nb.cells[1]!.getMetadata()).toEqual({ tags: ['setup'] }); // (no metadata: left as it is)
    const back = { op: 'insert', cell_id: 'back', cell_type: 'markdown', source: 'b', index: 0, metadata: { tags: ['t'] } };
    expect(apply(nb, back as never).ok).toBe(true);
    expect(nb.cells[0]!.getMetadata()).toEqual({ tags: ['t'] });
  });

  it('refuses a change to a cell that is no longer what the agent read', () => {
    const nb = notebook();
    nb.cells[1]!.setSource('x = 1  # typed by the user');
    const refused = apply(nb, { op: 'edit', cell_id: 'load', expected_source: 'x = 1', source: 'x = 0' });
    expect(refused).toMatchObject({ ok: false, code: 'HASH_MISMATCH' });
    expect(nb.cells[1]!.getSource()).toBe('x = 1  # typed by the user');
    expect(apply(nb, { op: 'delete', cell_id: 'gone', expected_source: '' })).toMatchObject({ ok: false, code: 'CELL_NOT_FOUND' });
    expect(apply(nb, { op: 'insert', cell_id: 'n', cell_type: 'code', source: '', index: 9 })).toMatchObject({
      ok: false,
      code: 'INDEX_OUT_OF_RANGE'
    });
  });

  it('sets outputs and the execution count of a code cell, and restores a whole notebook', () => {
    const nb = notebook();
    const snapshot = nb.toJSON();
    const outputs = [{ output_type: 'stream', name: 'stdout', text: 'hi\n' }];
    expect(apply(nb, { op: 'set_outputs', cell_id: 'load', outputs: outputs as never, execution_count: 3 }).ok).toBe(true);
    const cell = nb.toJSON().cells[1] as { outputs: unknown[]; execution_count: number };
    expect(cell.execution_count).toBe(3);
    expect(cell.outputs).toEqual(outputs);
    expect(apply(nb, { op: 'set_outputs', cell_id: 'intro', outputs: [], execution_count: 1 })).toMatchObject({ ok: false });
    expect(apply(nb, { op: 'replace', notebook: snapshot }).ok).toBe(true);
    expect(nb.toJSON().cells).toEqual(snapshot.cells);
  });
});
