/**
 * The pure reducer that builds the view state of one session (`chatstate.ts`) from stored
 * history and live events (DESIGN.md section 4). The same reducer serves a streamed reply,
 * the session stream (runs started from a notebook), and a replay after a reload, so all three
 * look the same. Events are de-duplicated by `(run_id, seq)` and stored messages by id, which
 * makes a replay of events already seen harmless. The transcript edits are in `transcript.ts`.
 */

import { emptyRun, initialState, patchRun, upsertRun, type ChatState } from './chatstate';
import { emptyItem, type ArtifactSummary } from './items';
import {
  appendText,
  applyError,
  applyFinal,
  applyHistory,
  setTurnUsage,
  startTool,
  updateDraft,
  updateTool,
  upsertMessage
} from './transcript';
import type { AgiEvent, Message, Run, Session } from './types';
import { isTerminal } from './types';

export { activeRuns, initialState, sortedRuns } from './chatstate';
export type { ChatState, RunView } from './chatstate';
export { messageItem, visibleBlocks } from './items';
export type { ArtifactSummary, Block, ChatItem, ItemStatus, ToolBlock } from './items';

export type Action =
  | { type: 'reset'; session: Session | null }
  | { type: 'session'; session: Session }
  | { type: 'history'; messages: Message[] }
  | { type: 'runs'; runs: Run[] }
  | { type: 'run'; run: Run }
  | { type: 'pending'; key: string; text: string }
  | { type: 'pending.failed'; key: string }
  | { type: 'event'; event: AgiEvent };

export function reduce(state: ChatState, action: Action): ChatState {
  switch (action.type) {
    case 'reset':
      return initialState(action.session);
    case 'session':
      return { ...state, session: action.session };
    case 'history':
      return applyHistory(state, action.messages);
    case 'runs':
      return action.runs.reduce(upsertRun, state);
    case 'run':
      return upsertRun(state, action.run);
    case 'pending':
      return {
        ...state,
        items: [...state.items, { ...emptyItem(action.key, 'user', null), status: 'pending', blocks: [{ kind: 'text', text: action.text }] }]
      };
    case 'pending.failed':
      return { ...state, items: state.items.filter(i => i.key !== action.key) };
    case 'event':
      return applyEvent(state, action.event);
  }
}

// --- events ----------------------------------------------------------------------------------

function str(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function applyEvent(state: ChatState, event: AgiEvent): ChatState {
  const runId = typeof event.run_id === 'string' && event.run_id ? event.run_id : null;
  if (!runId) {
    return applySessionEvent(state, event);
  }
  const seq = num(event.seq);
  const known = state.runs[runId];
  if (seq !== null && known && seq <= known.lastSeq && event.type !== 'run.final') {
    return state; // already applied (replay, or the same event from a second stream)
  }
  let next = patchRun(state, runId, { lastSeq: Math.max(seq ?? 0, known?.lastSeq ?? 0) });
  next = applyRunEvent(next, runId, event);
  return next;
}

function applySessionEvent(state: ChatState, event: AgiEvent): ChatState {
  const payload = event as Record<string, unknown>;
  if ((event.type === 'session.created' || event.type === 'session.updated') && isSession(payload.session)) {
    return { ...state, session: payload.session };
  }
  if (event.type === 'message.created' || event.type === 'message.completed') {
    return isMessage(payload.message) ? upsertMessage(state, payload.message) : state;
  }
  return state;
}

function isSession(value: unknown): value is Session {
  return typeof value === 'object' && value !== null && typeof (value as Session).id === 'string';
}

function isMessage(value: unknown): value is Message {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Message).id === 'string' &&
    Array.isArray((value as Message).parts)
  );
}

function applyRunEvent(state: ChatState, runId: string, event: AgiEvent): ChatState {
  const e = event as Record<string, unknown>;
  switch (event.type) {
    case 'run.meta':
      return patchRun(state, runId, {
        provider: str(e.provider) || null,
        model: str(e.model) || null,
        status: state.runs[runId]?.status ?? 'queued'
      });
    case 'run.status': {
      const old = state.runs[runId];
      if (old && isTerminal(old.status)) {
        return state;
      }
      return patchRun(state, runId, { status: str(e.status) || 'running' });
    }
    case 'iteration':
      return patchRun(state, runId, { iteration: num(e.iteration) });
    case 'output.text.delta':
      return updateDraft(state, runId, item => appendText(item, 'text', str(e.delta), false));
    case 'output.text.done':
      return updateDraft(state, runId, item => appendText(item, 'text', str(e.text), true));
    case 'reasoning.delta':
      return updateDraft(state, runId, item => appendText(item, 'reasoning', str(e.delta), false));
    case 'reasoning.done':
      return updateDraft(state, runId, item => appendText(item, 'reasoning', str(e.text), true));
    case 'tool.call.started':
      return startTool(state, runId, str(e.tool_call_id), str(e.name));
    case 'tool.call.arguments.delta':
      return updateTool(state, runId, str(e.tool_call_id), b => ({ argumentsText: b.argumentsText + str(e.delta) }));
    case 'tool.call.arguments.done':
      return updateTool(state, runId, str(e.tool_call_id), () => ({
        arguments: isRecord(e.arguments) ? e.arguments : {},
        status: 'running'
      }));
    case 'tool.call.delta':
      return updateTool(state, runId, str(e.tool_call_id), b => ({ live: b.live + str(e.chunk) }));
    case 'tool.call.output':
      return updateTool(state, runId, str(e.tool_call_id), () => ({
        ok: e.ok !== false,
        output: str(e.output),
        status: str(e.status) || (e.ok === false ? 'failed' : 'completed'),
        artifact: isRecord(e.artifact) ? (e.artifact as unknown as ArtifactSummary) : null
      }));
    case 'usage':
      return applyUsage(state, runId, e);
    case 'message.completed':
    case 'message.created':
      return isMessage(e.message) ? upsertMessage(state, { ...e.message, run_id: e.message.run_id ?? runId }) : state;
    case 'error':
      return applyError(state, runId, str(e.code) || 'ERROR', str(e.message), e.retryable === true, num(e.seq));
    case 'run.final':
      return applyFinal(state, runId, isRecord(e.run) ? (e.run as unknown as Run) : null);
    default:
      return applySessionEvent(state, event);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function applyUsage(state: ChatState, runId: string, e: Record<string, unknown>): ChatState {
  const input = num(e.input_tokens) ?? 0;
  const output = num(e.output_tokens) ?? 0;
  const cost = num(e.cost_usd);
  const run = state.runs[runId] ?? emptyRun(runId);
  const next = patchRun(state, runId, {
    inputTokens: run.inputTokens + input,
    outputTokens: run.outputTokens + output,
    costUsd: run.costUsd + (cost ?? 0)
  });
  return setTurnUsage(next, runId, input, output, cost);
}
