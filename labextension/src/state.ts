/**
 * The pure reducer that builds the view state of one session (`chatstate.ts`) from stored
 * history and live events (DESIGN.md section 4). The same reducer serves a streamed reply,
 * the session stream (runs started from a notebook), and a replay after a reload, so all three
 * look the same. Events are de-duplicated by `(run_id, seq)` and stored messages by id, which
 * makes a replay of events already seen harmless. The transcript edits are in `transcript.ts`.
 */

import { emptyRun, initialState, patchRun, upsertRun, type ChatState } from './chatstate';
import { emptyItem, HOSTED_TOOL_TYPE, type ArtifactSummary } from './items';
import { formatBudget } from './format';
import {
  appendText,
  applyError,
  applyFinal,
  applyHistory,
  applyNotice,
  compactionNote,
  COMPACTED,
  applyReset,
  setTurnUsage,
  startTool,
  updateDraft,
  updateTool,
  upsertMessage
} from './transcript';
import type { AgiEvent, Compaction, Message, Run, Session } from './types';
import { isTerminal } from './types';

export { activeRuns, initialState, promptPreview, sortedRuns } from './chatstate';
export type { ChatState, RunView } from './chatstate';
export { messageItem, visibleBlocks } from './items';
export type { ArtifactSummary, Block, ChatItem, ItemStatus, ToolBlock } from './items';

export type Action =
  | { type: 'reset'; session: Session | null }
  | { type: 'session'; session: Session }
  | { type: 'history'; messages: Message[]; compactions?: Compaction[] }
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
      return applyHistory(state, action.messages, action.compactions ?? []);
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

function applyEvent(state: ChatState, event: AgiEvent): ChatState {
  if (!event.run_id) {
    return applySessionEvent(state, event);
  }
  const runId = event.run_id;
  const known = state.runs[runId];
  if (known && event.seq <= known.lastSeq && event.type !== 'run.final') {
    return state; // already applied (replay, or the same event from a second stream)
  }
  const next = patchRun(state, runId, { lastSeq: Math.max(event.seq, known?.lastSeq ?? 0) });
  return applyRunEvent(next, runId, event);
}

function applySessionEvent(state: ChatState, event: AgiEvent): ChatState {
  switch (event.type) {
    case 'session.created':
    case 'session.updated':
      return { ...state, session: event.session };
    case 'message.created':
    case 'message.completed':
      return upsertMessage(state, event.message);
    default:
      return state;
  }
}

function applyRunEvent(state: ChatState, runId: string, event: AgiEvent): ChatState {
  switch (event.type) {
    case 'run.meta':
      return patchRun(state, runId, {
        provider: event.provider || null,
        model: event.model || null,
        agent: event.agent || null,
        status: state.runs[runId]?.status ?? 'queued'
      });
    case 'run.status': {
      const old = state.runs[runId];
      return old && isTerminal(old.status) ? state : patchRun(state, runId, { status: event.status });
    }
    case 'iteration':
      return patchRun(state, runId, { iteration: event.iteration });
    case 'output.text.delta':
      return updateDraft(state, runId, item => appendText(item, 'text', event.delta, false));
    case 'output.text.done':
      return updateDraft(state, runId, item => appendText(item, 'text', event.text, true));
    case 'output.text.reset':
      return applyReset(state, runId, event.discarded_chars ?? 0, event.discarded_reasoning_chars ?? 0);
    case 'reasoning.delta':
      return updateDraft(state, runId, item => appendText(item, 'reasoning', event.delta, false));
    case 'reasoning.done':
      return updateDraft(state, runId, item => appendText(item, 'reasoning', event.text, true));
    case 'tool.call.started':
      return startTool(state, runId, event.tool_call_id, event.name, event.tool_type === HOSTED_TOOL_TYPE);
    case 'tool.call.arguments.delta':
      return updateTool(state, runId, event.tool_call_id, b => ({ argumentsText: b.argumentsText + event.delta }));
    case 'tool.call.arguments.done':
      return updateTool(state, runId, event.tool_call_id, () => ({ arguments: event.arguments, status: 'running' }));
    case 'tool.call.delta':
      return updateTool(state, runId, event.tool_call_id, b => ({ live: b.live + event.chunk }));
    case 'approval.requested':
      return updateTool(state, runId, event.tool_call_id, () => ({
        arguments: event.arguments,
        status: 'waiting_approval',
        diff: event.diff ?? null
      }));
    case 'approval.decided': {
      const decided = { decision: event.decision, door: event.door ?? null, by: event.by ?? null };
      // a denial comes as its output; an approval runs on
      return updateTool(state, runId, event.tool_call_id, () =>
        event.decision === 'deny' ? { decided } : { decided, status: 'running' }
      );
    }
    case 'tool.call.output':
      return updateTool(state, runId, event.tool_call_id, () => ({
        ok: event.ok,
        output: event.output,
        status: event.status,
        artifact: event.artifact ? (event.artifact as unknown as ArtifactSummary) : null
      }));
    case 'usage': {
      const next = applyUsage(state, runId, event.input_tokens, event.output_tokens, event.cost_usd);
      const { context_tokens: tokens, context_window: window, compacts_at: compactsAt } = event;
      return typeof tokens === 'number' && typeof window === 'number'
        ? patchRun(next, runId, { context: { tokens, window, compactsAt: compactsAt ?? null } })
        : next;
    }
    case 'context.compacted':
      return applyNotice(
        state,
        runId,
        COMPACTED,
        compactionNote(event.message_count),
        event.seq
      );
    case 'budget': {
      const budgets = { ...(state.runs[runId]?.budgets ?? {}), [event.scope]: formatBudget(event) };
      // An asking refusal is the question the run now waits on; any later budget event (after
      // the next model call) means it was answered.
      const budgetAsk = event.asking ? `${formatBudget(event)}: ${event.reason ?? ''}` : null;
      return patchRun(state, runId, { budgets, budgetAsk });
    }
    case 'message.completed':
    case 'message.created': {
      return upsertMessage(state, { ...event.message, run_id: event.message.run_id ?? runId });
    }
    case 'notice':
      return applyNotice(state, runId, event.code, event.message, event.seq);
    case 'error':
      return applyError(state, runId, event.code, event.message, event.retryable, event.seq);
    case 'run.final':
      return applyFinal(state, runId, event.run);
    default:
      return applySessionEvent(state, event);
  }
}

function applyUsage(state: ChatState, runId: string, input: number, output: number, cost: number | null): ChatState {
  const run = state.runs[runId] ?? emptyRun(runId);
  const next = patchRun(state, runId, {
    inputTokens: run.inputTokens + input,
    outputTokens: run.outputTokens + output,
    // Unknown stays unknown: never a sum that counts a turn without a price as $0.
    costUsd: run.costUsd === null || cost === null ? null : run.costUsd + cost
  });
  return setTurnUsage(next, runId, input, output, cost);
}
