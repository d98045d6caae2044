/**
 * The Undo button of a run in the runs list: shown for an ended run that changed notebooks or
 * files, it puts them back as they were before the run (`POST /runs/{id}/undo`). A run whose
 * changes span several model turns also gets a turn picker: "from turn N" rewinds to before
 * that turn (`{"turn": N}`). Undo works cell by cell: cells or files changed after the run are
 * left as they are and named (`conflicts`); the button then offers to undo them anyway. A run
 * whose changes are all undone offers no Undo.
 */

import React, { useEffect, useState } from 'react';

import { ApiError, errorText } from './api';
import type { PanelModel } from './model';
import { ErrorCode } from './openapi';
import { isTerminal } from './types';

type State =
  | { kind: 'checking' | 'none' | 'ready' | 'working' }
  | { kind: 'done'; text: string }
  | { kind: 'conflict' | 'error'; text: string };

export function UndoButton(props: { runId: string; status: string; model: PanelModel }): JSX.Element | null {
  const { runId, status, model } = props;
  const [state, setState] = useState<State>({ kind: 'checking' });
  const [turns, setTurns] = useState<number[]>([]);
  const [turn, setTurn] = useState<number | null>(null);
  const terminal = isTerminal(status);
  useEffect(() => {
    if (!terminal) {
      return;
    }
    let live = true;
    model.client
      .runChanges(model.snapshot.project, runId)
      .then(changes => {
        if (!live) {
          return;
        }
        const standing = changes.filter(c => !c.undone);
        setTurns(changeTurns(standing));
        setState({ kind: standing.length ? 'ready' : 'none' });
      })
      .catch(() => live && setState({ kind: 'none' }));
    return () => {
      live = false;
    };
  }, [runId, terminal]);
  if (!terminal || state.kind === 'checking' || state.kind === 'none') {
    return null;
  }
  const undo = async (force: boolean): Promise<void> => {
    setState({ kind: 'working' });
    try {
      const result = await model.client.undoRun(model.snapshot.project, runId, force, turn);
      model.changesUndone();
      const conflicts = result.conflicts ?? [];
      if (conflicts.length) {
        const named = conflicts.map(c => `${c.path}${c.cell_id ? ` cell ${c.cell_id}` : ''}: ${c.reason}`);
        setState({ kind: 'conflict', text: `left as changed since (${named.join('; ')})` });
        return;
      }
      const undone = [...result.notebooks, ...(result.files ?? [])];
      const text = undone.map(n => `${n.status} ${n.path}`).join(', ') || 'nothing to undo';
      setState({ kind: 'done', text });
    } catch (error) {
      const conflict = error instanceof ApiError && error.code === ErrorCode.UNDO_CONFLICT;
      setState({ kind: conflict ? 'conflict' : 'error', text: conflict ? (error as ApiError).message : errorText(error) });
    }
  };
  return (
    <span className="jp-AgiUndo" data-undo-state={state.kind}>
      {(state.kind === 'ready' || state.kind === 'working' || state.kind === 'done') && turns.length > 1 ? (
        <select
          className="jp-AgiUndoTurn"
          aria-label="Undo from turn"
          value={turn ?? ''}
          onChange={event => setTurn(event.target.value ? Number(event.target.value) : null)}
        >
          <option value="">whole run</option>
          {turns.map(n => (
            <option key={n} value={n}>
              from turn {n}
            </option>
          ))}
        </select>
      ) : null}
      {state.kind === 'ready' || state.kind === 'working' || state.kind === 'done' ? (
        <button
          className="jp-AgiButton jp-mod-small"
          disabled={state.kind === 'working'}
          title="Put the notebooks and files this run changed back as they were before it (or before the chosen turn)"
          onClick={() => void undo(false)}
        >
          Undo
        </button>
      ) : null}
      {state.kind === 'conflict' ? (
        <>
          <span className="jp-AgiBlockError" role="alert">
            {state.text}
          </span>
          <button className="jp-AgiButton jp-mod-small" onClick={() => void undo(true)}>
            Undo anyway
          </button>
        </>
      ) : null}
      {state.kind === 'done' ? <span className="jp-AgiDim">{state.text}</span> : null}
      {state.kind === 'error' ? (
        <span className="jp-AgiBlockError" role="alert">
          {state.text}
        </span>
      ) : null}
    </span>
  );
}

/** The model turns a run's changes were made in, ascending (none when any change has no turn:
 * such a run can only be undone as a whole). */
export function changeTurns(changes: { turn?: number | null }[]): number[] {
  if (changes.some(c => c.turn === null || c.turn === undefined)) {
    return [];
  }
  return [...new Set(changes.map(c => c.turn as number))].sort((a, b) => a - b);
}
