import { describe, expect, it } from 'vitest';

import { conflictText, locate, nextChanged, perRun, reviewLabel, reviewsByCell } from '../src/cellchanges';
import { type Action, initialState, reduce } from '../src/state';
import type { Change, UndoResult } from '../src/types';

function change(id: string, runId: string, cellId: string | null, action: Change['action'] = 'edited'): Change {
  return {
    id,
    change_id: id.split('/')[0] ?? id,
    run_id: runId,
    turn: 1,
    tool_call_id: null,
    kind: cellId ? 'notebook' : 'file',
    action,
    path: 'nb.ipynb',
    cell_id: cellId,
    before: 'a',
    after: 'b',
    diff: '-a\n+b\n',
    undone: false,
    kept: false,
    before_sha: null,
    after_sha: null,
    created_at: ''
  };
}

describe('the changes of a notebook to review, per cell', () => {
  it('groups them by cell in the order cells were first changed; the last says what was done', () => {
    const reviews = reviewsByCell([
      change('c1/total', 'run_a', 'total'),
      change('c1/new', 'run_a', 'new', 'inserted'),
      change('c2/total', 'run_b', 'total', 'outputs'),
      change('c3', 'run_b', null, 'written')
    ]);
    expect(reviews.map(r => [r.cellId, r.action, r.changes.map(c => c.id)])).toEqual([
      ['total', 'outputs', ['c1/total', 'c2/total']],
      ['new', 'inserted', ['c1/new']]
    ]);
    expect(reviewLabel(reviews[0]!)).toBe('Agent ran this cell (2 changes)');
    expect(reviewLabel(reviews[1]!)).toBe('Agent inserted this cell');
  });

  it('undoes run by run, the latest run first; keeps in the order they were made', () => {
    const changes = [change('c1/x', 'run_a', 'x'), change('c2/x', 'run_b', 'x'), change('c1/y', 'run_a', 'y')];
    expect(perRun(changes, true)).toEqual([
      { runId: 'run_b', ids: ['c2/x'] },
      { runId: 'run_a', ids: ['c1/x', 'c1/y'] }
    ]);
    expect(perRun(changes, false).map(r => r.runId)).toEqual(['run_a', 'run_b']);
  });

  it('jumps to the next changed cell after the active one, wrapping around', () => {
    const order = ['a', 'b', 'c', 'd'];
    const changed = new Set(['b', 'd', 'gone']);
    expect(nextChanged(order, changed, null)).toBe('b');
    expect(nextChanged(order, changed, 'b')).toBe('d');
    expect(nextChanged(order, changed, 'c')).toBe('d');
    expect(nextChanged(order, changed, 'd')).toBe('b');
    expect(nextChanged(order, new Set(['gone']), 'a')).toBeNull();
  });

  it('finds the notebook in the panel\'s project, else in its own folder', () => {
    expect(locate('work/nb.ipynb', 'work')).toEqual({ project: 'work', path: 'nb.ipynb' });
    expect(locate('work/sub/nb.ipynb', 'work/')).toEqual({ project: 'work', path: 'sub/nb.ipynb' });
    expect(locate('work/nb.ipynb', '')).toEqual({ project: '', path: 'work/nb.ipynb' });
    expect(locate('other/nb.ipynb', 'work')).toEqual({ project: 'other', path: 'nb.ipynb' });
    expect(locate('nb.ipynb', 'work')).toEqual({ project: '', path: 'nb.ipynb' });
  });

  it('says which cells an undo left as the user has them', () => {
    const conflict = { id: 'c1/x', path: 'nb.ipynb', cell_id: 'x', action: 'edited', status: 'conflict', reason: 'cell x was edited since', forced: false };
    const results = [{ conflicts: [conflict] }, { conflicts: [] }] as unknown as UndoResult[];
    expect(conflictText(results)).toBe('changed since, left as it is: cell x was edited since');
    expect(conflictText([{ conflicts: [] }] as unknown as UndoResult[])).toBeNull();
  });
});

describe('a call waiting for approval', () => {
  it('keeps the diff of the change it would make, to show before the buttons', () => {
    const event = (fields: Record<string, unknown>) => ({ type: 'event', event: { run_id: 'run_1', ts: '', ...fields } }) as Action;
    const state = [
      event({ type: 'tool.call.started', seq: 1, tool_call_id: 'c1', name: 'notebook.edit' }),
      event({ type: 'approval.requested', seq: 2, tool_call_id: 'c1', name: 'notebook.edit', arguments: {}, diff: '-x + 1\n+x * 3\n' })
    ].reduce(reduce, initialState());
    const blocks = state.items.flatMap(item => item.blocks);
    expect(blocks).toContainEqual(expect.objectContaining({ kind: 'tool', status: 'waiting_approval', diff: '-x + 1\n+x * 3\n' }));
  });
});
