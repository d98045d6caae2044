/**
 * The Undo button of a run in the runs list: shown for an ended run that changed notebooks,
 * it puts them back as they were before the run (`POST /runs/{id}/undo`). When the cells were
 * changed after the run, the server refuses (`UNDO_CONFLICT`) and says which; the button then
 * offers to undo anyway.
 */

import React, { useEffect, useState } from 'react';

import { ApiError, errorText } from './api';
import type { PanelModel } from './model';
import { isTerminal } from './types';

type State =
  | { kind: 'checking' | 'none' | 'ready' | 'working' }
  | { kind: 'done'; text: string }
  | { kind: 'conflict' | 'error'; text: string };

export function UndoButton(props: { runId: string; status: string; model: PanelModel }): JSX.Element | null {
  const { runId, status, model } = props;
  const [state, setState] = useState<State>({ kind: 'checking' });
  const terminal = isTerminal(status);
  useEffect(() => {
    if (!terminal) {
      return;
    }
    let live = true;
    model.client
      .runChanges(model.snapshot.project, runId)
      .then(changes => live && setState({ kind: changes.some(c => c.kind === 'notebook') ? 'ready' : 'none' }))
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
      const result = await model.client.undoRun(model.snapshot.project, runId, force);
      const text = result.notebooks.map(n => `${n.status} ${n.path}`).join(', ') || 'nothing to undo';
      setState({ kind: 'done', text });
    } catch (error) {
      const conflict = error instanceof ApiError && error.code === 'UNDO_CONFLICT';
      setState({ kind: conflict ? 'conflict' : 'error', text: conflict ? (error as ApiError).message : errorText(error) });
    }
  };
  return (
    <span className="jp-AgiUndo" data-undo-state={state.kind}>
      {state.kind === 'ready' || state.kind === 'working' ? (
        <button
          className="jp-AgiButton jp-mod-small"
          disabled={state.kind === 'working'}
          title="Put the notebooks this run changed back as they were before it"
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
