/**
 * The view state of one session (its session row, transcript items and runs) and the run
 * records in it: how a run object from the API or an event patches a run. Pure functions,
 * used by the reducer of `state.ts` and by the transcript edits of `transcript.ts`.
 */

import { stopNote } from './format';
import type { ChatItem } from './items';
import type { Run, Session } from './types';
import { isTerminal } from './types';

export interface RunView {
  id: string;
  status: string;
  provider: string | null;
  model: string | null;
  /** The run's own agent when it is not the session's (`%%agi -a X`), or from `run.meta`. */
  agent: string | null;
  type: string | null;
  executionMode: string | null;
  notebookPath: string | null;
  cellId: string | null;
  error: string | null;
  inputTokens: number;
  outputTokens: number;
  /** null: unknown (a model turn without usage, or a model without a catalog price). */
  costUsd: number | null;
  /** Why an answer of the run stopped short (`stopNote` of its usage), or null. */
  stop: string | null;
  iteration: number | null;
  /** Spent and limit of each budget that applies (by scope: session, notebook). */
  budgets: Record<string, string>;
  /** The budget question the run waits on (review mode ask: a larger session budget, or deny). */
  budgetAsk: string | null;
  /** How full its last model request filled the context (the gauge of its `usage` events). */
  context: ContextGauge | null;
  createdAt: string | null;
  completedAt: string | null;
  /** The highest event `seq` applied; where a resumed stream starts (`after_seq`). */
  lastSeq: number;
  /** The prompt it answers, while it waits in the run (queued); else its user message's. */
  prompt: string | null;
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

/** A request's estimated tokens of the model's window, and the size past which older messages
 * are left out and compacted (null: no compaction). */
export interface ContextGauge {
  tokens: number;
  window: number;
  compactsAt: number | null;
}

export function emptyRun(id: string): RunView {
  return {
    id,
    status: 'queued',
    provider: null,
    model: null,
    agent: null,
    type: null,
    executionMode: null,
    notebookPath: null,
    cellId: null,
    error: null,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: 0,
    stop: null,
    iteration: null,
    budgets: {},
    budgetAsk: null,
    context: null,
    createdAt: null,
    completedAt: null,
    lastSeq: 0,
    prompt: null
  };
}

export function upsertRun(state: ChatState, run: Run): ChatState {
  const old = state.runs[run.id] ?? emptyRun(run.id);
  const usage = run.usage as { input_tokens?: number; output_tokens?: number };
  const error = run.error as { code?: string; message?: string } | null;
  const next: RunView = {
    ...old,
    // A run object from a listing can be older than events already applied: never go back
    // from an ended status.
    status: isTerminal(old.status) && !isTerminal(run.status) ? old.status : run.status,
    provider: run.provider ?? old.provider,
    model: run.model ?? old.model,
    agent: run.agent ?? old.agent,
    type: run.type,
    executionMode: run.execution_mode,
    notebookPath: run.notebook_path ?? old.notebookPath,
    cellId: run.cell_id ?? old.cellId,
    error: error ? (error.message ?? error.code ?? 'error') : old.error,
    inputTokens: usage.input_tokens ?? old.inputTokens,
    outputTokens: usage.output_tokens ?? old.outputTokens,
    costUsd: run.cost_usd,
    stop: stopNote(run.usage) ?? old.stop,
    createdAt: run.created_at || old.createdAt,
    completedAt: run.completed_at ?? old.completedAt,
    prompt: runPrompt(run) ?? old.prompt
  };
  return { ...state, runs: { ...state.runs, [run.id]: next } };
}

export function patchRun(state: ChatState, id: string, patch: Partial<RunView>): ChatState {
  const old = state.runs[id] ?? emptyRun(id);
  return { ...state, runs: { ...state.runs, [id]: { ...old, ...patch } } };
}

/** The prompt of a run that has not started yet: it waits in `loop_state.input` as parts. */
function runPrompt(run: Run): string | null {
  const input = (run.loop_state as { input?: { type?: string; text?: string }[] } | null)?.input;
  if (!Array.isArray(input)) {
    return null;
  }
  const text = input.map(part => (part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
  return text || null;
}

/** The first line of a run's prompt (its user message, or its queued input), or null. */
export function promptPreview(state: ChatState, run: RunView): string | null {
  const message = state.items.find(item => item.runId === run.id && item.role === 'user');
  const text = message ? message.blocks.map(b => (b.kind === 'text' ? b.text : '')).join('') : run.prompt;
  const line = (text ?? '').trim().split('\n')[0] ?? '';
  return line || null;
}
