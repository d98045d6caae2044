import { describe, expect, it } from 'vitest';

import { bundle } from '../src/i18n';
import { cellsNote, mayHaveCellsRunning } from '../src/runningcells';
import { type Action, type ChatState, initialState, reduce } from '../src/state';
import type { WireEvent } from '../src/stream';
import { wire } from './fixtures';

const R = 'run_01';
const trans = bundle();

function state(list: WireEvent[]): ChatState {
  const actions: Action[] = list.map(event => ({ type: 'event', event: wire(event) }));
  return actions.reduce(reduce, initialState());
}

function call(seq: number, id: string, name: string): WireEvent[] {
  return [
    { type: 'tool.call.started', run_id: R, seq, tool_call_id: id, name },
    { type: 'tool.call.arguments.done', run_id: R, seq: seq + 1, tool_call_id: id, arguments: {} }
  ];
}

function output(seq: number, id: string, name: string, text: string): WireEvent {
  return { type: 'tool.call.output', run_id: R, seq, tool_call_id: id, name, ok: true, output: text, status: 'completed' };
}

const RUNNING: WireEvent = { type: 'run.status', run_id: R, seq: 1, status: 'running' };
const STILL = 'still running after 30 s (not interrupted): execution handle ex-1; the cells go on';

describe('cells the agent left running', () => {
  it('are running while notebook.run waits, or after it answered with a handle', () => {
    expect(mayHaveCellsRunning(state([RUNNING, ...call(2, 'c1', 'notebook.run')]))).toBe(true);
    const handed = [RUNNING, ...call(2, 'c1', 'notebook.run'), output(4, 'c1', 'notebook.run', STILL)];
    expect(mayHaveCellsRunning(state(handed))).toBe(true);
    const ended = [...handed, ...call(5, 'c2', 'notebook.wait'), output(7, 'c2', 'notebook.wait', 'cell load: ok')];
    expect(mayHaveCellsRunning(state(ended))).toBe(false);
  });

  it('are none without a notebook.run, or once the run ended', () => {
    const listing = [RUNNING, ...call(2, 'c1', 'fs.list')];
    expect(mayHaveCellsRunning(state(listing))).toBe(false);
    const cancelled: WireEvent = { type: 'run.status', run_id: R, seq: 4, status: 'cancelled' };
    expect(mayHaveCellsRunning(state([RUNNING, ...call(2, 'c1', 'notebook.run'), cancelled]))).toBe(false);
  });

  it('are named by what the cancel did to them', () => {
    const cell = { handle: 'ex-1', path: 'a.ipynb', cell_id: 'load', interrupted: false };
    expect(cellsNote([], trans)).toBe('');
    expect(cellsNote([cell], trans)).toBe('left running: cell load (a.ipynb)');
    const other = { ...cell, handle: 'ex-2', cell_id: null, interrupted: true };
    expect(cellsNote([cell, other], trans)).toBe('interrupted: cells of a.ipynb; left running: cell load (a.ipynb)');
  });
});
