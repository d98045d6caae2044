/**
 * The view state of one session (its session row, transcript items and runs) and the run
 * records in it: how a run object from the API or an event patches a run. Pure functions,
 * used by the reducer of `state.ts` and by the transcript edits of `transcript.ts`.
 */

import type { ChatItem } from './items';
import type { Run, Session } from './types';
import { isTerminal } from './types';

export interface RunView {
  id: string;
  status: string;
  provider: string | null;
  model: string | null;
  type: string | null;
  executionMode: string | null;
  notebookPath: string | null;
  cellId: string | null;
  error: string | null;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  iteration: number | null;
  createdAt: string | null;
  completedAt: string | null;
  /** The highest event `seq` applied; where a resumed stream starts (`after_seq`). */
  lastSeq: number;
}

export interface ChatState {
  session: Session | null;
  items: ChatItem[];
  runs: Record<string, RunView>;
}

export function initialState(session: Session | null = null): ChatState {
  return { session, items: [], runs: {} };
}

/** Runs newest first (ids are time-ordered). */
export function sortedRuns(state: ChatState): RunView[] {
  return Object.values(state.runs).sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

/** The session's runs that have not ended. */
export function activeRuns(state: ChatState): RunView[] {
  return sortedRuns(state).filter(r => !isTerminal(r.status));
}

export function emptyRun(id: string): RunView {
  return {
    id,
    status: 'queued',
    provider: null,
    model: null,
    type: null,
    executionMode: null,
    notebookPath: null,
    cellId: null,
    error: null,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: 0,
    iteration: null,
    createdAt: null,
    completedAt: null,
    lastSeq: 0
  };
}

export function upsertRun(state: ChatState, run: Run): ChatState {
  const old = state.runs[run.id] ?? emptyRun(run.id);
  const usage = run.usage ?? {};
  const next: RunView = {
    ...old,
    // A run object from a listing can be older than events already applied: never go back
    // from an ended status.
    status: isTerminal(old.status) && !isTerminal(run.status) ? old.status : run.status,
    provider: run.provider ?? old.provider,
    model: run.model ?? old.model,
    type: run.type ?? old.type,
    executionMode: run.execution_mode ?? old.executionMode,
    notebookPath: run.notebook_path ?? old.notebookPath,
    cellId: run.cell_id ?? old.cellId,
    error: run.error ? (run.error.message ?? run.error.code ?? 'error') : old.error,
    inputTokens: typeof usage.input_tokens === 'number' ? usage.input_tokens : old.inputTokens,
    outputTokens: typeof usage.output_tokens === 'number' ? usage.output_tokens : old.outputTokens,
    costUsd: typeof run.cost_usd === 'number' ? run.cost_usd : old.costUsd,
    createdAt: run.created_at ?? old.createdAt,
    completedAt: run.completed_at ?? old.completedAt
  };
  return { ...state, runs: { ...state.runs, [run.id]: next } };
}

export function patchRun(state: ChatState, id: string, patch: Partial<RunView>): ChatState {
  const old = state.runs[id] ?? emptyRun(id);
  return { ...state, runs: { ...state.runs, [id]: { ...old, ...patch } } };
}
