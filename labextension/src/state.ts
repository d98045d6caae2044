/**
 * The view state of one session and the pure reducer that builds it from stored history and
 * live events (DESIGN.md section 4). The same reducer serves a streamed reply, the session
 * stream (runs started from a notebook), and a replay after a reload, so all three look the
 * same. Events are de-duplicated by `(run_id, seq)` and stored messages by id, which makes a
 * replay of events already seen harmless.
 */

import {
  emptyItem,
  messageItem,
  resultFields,
  type ArtifactSummary,
  type Block,
  type ChatItem,
  type ItemStatus,
  type ToolBlock
} from './items';
import type { AgiEvent, Message, Part, Run, Session } from './types';
import { isTerminal } from './types';

export { messageItem, visibleBlocks } from './items';
export type { ArtifactSummary, Block, ChatItem, ItemStatus, ToolBlock } from './items';

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

export type Action =
  | { type: 'reset'; session: Session | null }
  | { type: 'session'; session: Session }
  | { type: 'history'; messages: Message[] }
  | { type: 'runs'; runs: Run[] }
  | { type: 'run'; run: Run }
  | { type: 'pending'; key: string; text: string }
  | { type: 'pending.failed'; key: string }
  | { type: 'event'; event: AgiEvent };

export function initialState(session: Session | null = null): ChatState {
  return { session, items: [], runs: {} };
}

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

/** Runs newest first (ids are time-ordered). */
export function sortedRuns(state: ChatState): RunView[] {
  return Object.values(state.runs).sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

/** The session's runs that have not ended. */
export function activeRuns(state: ChatState): RunView[] {
  return sortedRuns(state).filter(r => !isTerminal(r.status));
}

// --- history ---------------------------------------------------------------------------------

function applyHistory(state: ChatState, messages: Message[]): ChatState {
  const results = new Map<string, Extract<Part, { type: 'tool_result' }>>();
  for (const message of messages) {
    for (const part of message.parts ?? []) {
      if (part.type === 'tool_result') {
        results.set(part.tool_call_id, part);
      }
    }
  }
  const called = new Set<string>();
  const items: ChatItem[] = [];
  for (const message of messages) {
    if (message.role === 'tool' && message.parts.every(p => p.type === 'tool_result' && called.has(p.tool_call_id))) {
      continue;
    }
    const item = messageItem(message);
    for (const block of item.blocks) {
      if (block.kind === 'tool') {
        called.add(block.toolCallId);
        const result = results.get(block.toolCallId);
        if (result) {
          Object.assign(block, resultFields(result));
        }
      }
    }
    items.push(item);
  }
  // Keep what is still live: drafts of runs that have not ended and messages not yet stored.
  const stored = new Set(items.map(i => i.messageId));
  const live = state.items.filter(
    i =>
      (i.status === 'pending' || (i.status === 'streaming' && i.runId && !isTerminal(state.runs[i.runId]?.status))) &&
      !stored.has(i.messageId)
  );
  return { ...state, items: [...items, ...live] };
}

// --- runs ------------------------------------------------------------------------------------

function emptyRun(id: string): RunView {
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

function upsertRun(state: ChatState, run: Run): ChatState {
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

function patchRun(state: ChatState, id: string, patch: Partial<RunView>): ChatState {
  const old = state.runs[id] ?? emptyRun(id);
  return { ...state, runs: { ...state.runs, [id]: { ...old, ...patch } } };
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

const draftKey = (runId: string): string => `draft:${runId}`;

/** Apply `change` to the run's streaming assistant item, creating it at the end if needed. */
function updateDraft(state: ChatState, runId: string, change: (item: ChatItem) => ChatItem): ChatState {
  const key = draftKey(runId);
  const index = state.items.findIndex(i => i.key === key);
  const items = [...state.items];
  if (index < 0) {
    const run = state.runs[runId];
    const draft: ChatItem = {
      ...emptyItem(key, 'assistant', runId),
      status: 'streaming',
      provider: run?.provider ?? null,
      model: run?.model ?? null
    };
    items.push(change(draft));
  } else {
    items[index] = change(items[index] as ChatItem);
  }
  return { ...state, items };
}

function appendText(item: ChatItem, kind: 'text' | 'reasoning', text: string, done: boolean): ChatItem {
  const blocks = [...item.blocks];
  const last = blocks[blocks.length - 1];
  if (last && last.kind === kind) {
    blocks[blocks.length - 1] = { kind, text: done ? text : last.text + text };
  } else if (text) {
    blocks.push({ kind, text });
  }
  return { ...item, blocks };
}

function startTool(state: ChatState, runId: string, toolCallId: string, name: string): ChatState {
  if (findTool(state, toolCallId)) {
    return state;
  }
  const block: ToolBlock = {
    kind: 'tool',
    toolCallId,
    name,
    arguments: null,
    argumentsText: '',
    status: 'streaming',
    ok: null,
    output: null,
    live: '',
    artifact: null
  };
  return updateDraft(state, runId, item => ({ ...item, blocks: [...item.blocks, block] }));
}

function findTool(state: ChatState, toolCallId: string): [number, number] | null {
  for (let i = state.items.length - 1; i >= 0; i--) {
    const blocks = (state.items[i] as ChatItem).blocks;
    const j = blocks.findIndex(b => b.kind === 'tool' && b.toolCallId === toolCallId);
    if (j >= 0) {
      return [i, j];
    }
  }
  return null;
}

function updateTool(
  state: ChatState,
  runId: string,
  toolCallId: string,
  change: (block: ToolBlock) => Partial<ToolBlock>
): ChatState {
  let next = state;
  let where = findTool(next, toolCallId);
  if (!where) {
    next = startTool(next, runId, toolCallId, '');
    where = findTool(next, toolCallId);
    if (!where) {
      return state;
    }
  }
  const [i, j] = where;
  const item = next.items[i] as ChatItem;
  const block = item.blocks[j] as ToolBlock;
  const blocks = [...item.blocks];
  blocks[j] = { ...block, ...change(block) };
  const items = [...next.items];
  items[i] = { ...item, blocks };
  return { ...next, items };
}

/** Put a stored message in place: over the same id, over the run's draft, or at the end.
 * A tool message only fills in the results of the tool blocks it answers. */
function upsertMessage(state: ChatState, message: Message): ChatState {
  if (message.role === 'tool') {
    const unmatched = message.parts.filter(
      p => !(p.type === 'tool_result' && findTool(state, p.tool_call_id))
    );
    let next = state;
    for (const part of message.parts) {
      if (part.type === 'tool_result' && findTool(next, part.tool_call_id)) {
        next = updateTool(next, message.run_id ?? '', part.tool_call_id, () => resultFields(part));
      }
    }
    if (!unmatched.length) {
      return next;
    }
    state = next;
    message = { ...message, parts: unmatched };
  }
  const fresh = messageItem(message);
  const items = [...state.items];
  let index = items.findIndex(i => i.messageId === message.id);
  if (index < 0 && message.run_id && message.role === 'assistant') {
    index = items.findIndex(i => i.key === draftKey(message.run_id as string));
  }
  if (index < 0 && message.role === 'user') {
    const text = fresh.blocks.map(b => (b.kind === 'text' ? b.text : '')).join('');
    index = items.findIndex(
      i => i.status === 'pending' && i.blocks.map(b => (b.kind === 'text' ? b.text : '')).join('') === text
    );
  }
  if (index < 0) {
    items.push(fresh);
  } else {
    items[index] = mergeItem(items[index] as ChatItem, fresh);
  }
  // A draft of the same run left over (replay of a message already stored) goes away.
  const dropDraft = message.role === 'assistant' && message.run_id;
  return {
    ...state,
    items: dropDraft ? items.filter((i, k) => k === index || i.key !== draftKey(message.run_id as string)) : items
  };
}

/** The stored item, keeping what only live events knew (tool results, live output, cost). */
function mergeItem(old: ChatItem, fresh: ChatItem): ChatItem {
  const oldTools = new Map(
    old.blocks.filter((b): b is ToolBlock => b.kind === 'tool').map(b => [b.toolCallId, b])
  );
  const blocks = fresh.blocks.map(block => {
    if (block.kind !== 'tool') {
      return block;
    }
    const before = oldTools.get(block.toolCallId);
    if (!before) {
      return block;
    }
    const known = before.output !== null;
    return {
      ...block,
      live: before.live,
      ok: known ? before.ok : block.ok,
      output: known ? before.output : block.output,
      status: known ? before.status : block.status,
      artifact: before.artifact ?? block.artifact
    };
  });
  return {
    ...fresh,
    blocks,
    costUsd: fresh.costUsd ?? old.costUsd,
    inputTokens: fresh.inputTokens ?? old.inputTokens,
    outputTokens: fresh.outputTokens ?? old.outputTokens
  };
}

function applyUsage(state: ChatState, runId: string, e: Record<string, unknown>): ChatState {
  const input = num(e.input_tokens) ?? 0;
  const output = num(e.output_tokens) ?? 0;
  const cost = num(e.cost_usd);
  const run = state.runs[runId] ?? emptyRun(runId);
  let next = patchRun(state, runId, {
    inputTokens: run.inputTokens + input,
    outputTokens: run.outputTokens + output,
    costUsd: run.costUsd + (cost ?? 0)
  });
  // The usage of a turn follows its assistant message: put it on the run's newest one.
  for (let i = next.items.length - 1; i >= 0; i--) {
    const item = next.items[i] as ChatItem;
    if (item.runId === runId && item.role === 'assistant') {
      const items = [...next.items];
      items[i] = { ...item, inputTokens: input, outputTokens: output, costUsd: cost };
      next = { ...next, items };
      break;
    }
  }
  return next;
}

function applyError(
  state: ChatState,
  runId: string,
  code: string,
  message: string,
  retryable: boolean,
  seq: number | null
): ChatState {
  const block: Block = { kind: 'error', code, message: retryable ? `${message} (retrying)` : message };
  const status: ItemStatus = /CANCEL/i.test(code) ? 'cancelled' : 'error';
  const key = draftKey(runId);
  const items = [...state.items];
  const index = items.findIndex(i => i.key === key);
  if (index >= 0) {
    const draft = items[index] as ChatItem;
    // The draft is closed: a retry streams its answer into a new one.
    items[index] = { ...draft, key: `${key}:${seq ?? items.length}`, status, blocks: [...draft.blocks, block] };
  } else {
    items.push({ ...emptyItem(`error:${runId}:${seq ?? items.length}`, 'assistant', runId), status, blocks: [block] });
  }
  return { ...state, items };
}

function applyFinal(state: ChatState, runId: string, run: Run | null): ChatState {
  let next = run ? upsertRun(state, { ...run, id: runId }) : state;
  const status = next.runs[runId]?.status ?? 'succeeded';
  const ended: ItemStatus = status === 'cancelled' ? 'cancelled' : status === 'failed' ? 'error' : 'complete';
  // A draft still open at the end (cancelled mid-answer) stays visible as what was said.
  const items = next.items.map(i =>
    i.key === draftKey(runId) ? { ...i, key: `partial:${runId}`, status: ended } : i
  );
  next = { ...next, items };
  return next;
}
