/**
 * Edits of a session's transcript (`ChatState.items`): stored history as items, the
 * streaming draft of a run's answer, tool blocks wherever they are, a stored message put in
 * place of its draft or pending copy, usage, errors and the end of a run. Pure functions,
 * used by the reducer of `state.ts`.
 */

import { upsertRun, type ChatState } from './chatstate';
import {
  emptyItem,
  messageItem,
  resultFields,
  type Block,
  type ChatItem,
  type ItemStatus,
  type ToolBlock
} from './items';
import type { Compaction, Message, Run, ToolResultPart } from './types';
import { isTerminal } from './types';

// --- history ---------------------------------------------------------------------------------

/** The notice code, and the words, of older messages folded into a summary (a compaction). */
export const COMPACTED = 'CONTEXT_COMPACTED';
export function compactionNote(count: number): string {
  return `${count} earlier messages compacted into a summary the model reads instead`;
}

export function applyHistory(state: ChatState, messages: Message[], compactions: Compaction[] = []): ChatState {
  const results = new Map<string, ToolResultPart>();
  for (const message of messages) {
    for (const part of message.parts) {
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
    for (const compaction of compactions.filter(c => c.through_message_id === message.id)) {
      items.push({
        ...emptyItem(`compaction:${compaction.id}`, 'system', compaction.run_id ?? null),
        blocks: [{ kind: 'notice', code: COMPACTED, message: compactionNote(compaction.message_count) }]
      });
    }
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

// --- the streaming draft ---------------------------------------------------------------------

const draftKey = (runId: string): string => `draft:${runId}`;

/** Apply `change` to the run's streaming assistant item, creating it at the end if needed. */
export function updateDraft(state: ChatState, runId: string, change: (item: ChatItem) => ChatItem): ChatState {
  const key = draftKey(runId);
  const index = state.items.findIndex(i => i.key === key);
  const items = [...state.items];
  if (index < 0) {
    const run = state.runs[runId];
    const draft: ChatItem = {
      ...emptyItem(key, 'assistant', runId),
      status: 'streaming',
      provider: run?.provider ?? null,
      model: run?.model ?? null,
      sdk: state.session?.sdk ?? null
    };
    items.push(change(draft));
  } else {
    items[index] = change(items[index] as ChatItem);
  }
  return { ...state, items };
}

export function appendText(item: ChatItem, kind: 'text' | 'reasoning', text: string, done: boolean): ChatItem {
  const blocks = [...item.blocks];
  const last = blocks[blocks.length - 1];
  if (last && last.kind === kind) {
    blocks[blocks.length - 1] = { kind, text: done ? text : last.text + text };
  } else if (text) {
    blocks.push({ kind, text });
  }
  return { ...item, blocks };
}

/**
 * `output.text.reset`: the next attempt streams the unfinished turn again, so the text and
 * reasoning streamed for it are taken back (`chars` and `reasoningChars` from the end of the
 * run's draft, still open or closed by the retryable error before the reset).
 */
export function applyReset(state: ChatState, runId: string, chars: number, reasoningChars: number): ChatState {
  const key = draftKey(runId);
  let index = state.items.findIndex(i => i.key === key);
  if (index < 0) {
    index = state.items.map(i => i.key.startsWith(`${key}:`)).lastIndexOf(true);
  }
  if (index < 0) {
    return state;
  }
  const item = state.items[index] as ChatItem;
  const left = { text: chars, reasoning: reasoningChars };
  const blocks: Block[] = [];
  for (const block of [...item.blocks].reverse()) {
    if (block.kind === 'text' || block.kind === 'reasoning') {
      const cut = Math.min(left[block.kind], block.text.length);
      left[block.kind] -= cut;
      const text = block.text.slice(0, block.text.length - cut);
      if (text) {
        blocks.unshift({ kind: block.kind, text });
      }
    } else {
      blocks.unshift(block);
    }
  }
  const items = [...state.items];
  items[index] = { ...item, blocks };
  return { ...state, items };
}

// --- tool blocks -----------------------------------------------------------------------------

export function startTool(state: ChatState, runId: string, toolCallId: string, name: string, hosted = false): ChatState {
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
    artifact: null,
    ...(hosted ? { hosted } : {})
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

export function updateTool(
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

// --- stored messages -------------------------------------------------------------------------

/** Put a stored message in place: over the same id, over the run's draft, or at the end.
 * A tool message only fills in the results of the tool blocks it answers. */
export function upsertMessage(state: ChatState, message: Message): ChatState {
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

// --- usage, errors, the end of a run ---------------------------------------------------------

/** The usage of a turn follows its assistant message: put it on the run's newest one. */
export function setTurnUsage(
  state: ChatState,
  runId: string,
  input: number,
  output: number,
  cost: number | null
): ChatState {
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i] as ChatItem;
    if (item.runId === runId && item.role === 'assistant') {
      const items = [...state.items];
      items[i] = { ...item, inputTokens: input, outputTokens: output, costUsd: cost, costUnknown: cost === null };
      return { ...state, items };
    }
  }
  return state;
}

/** A `notice` (e.g. tools a local model cannot take): an item of its own before the run's
 * answer, so the stored answer that replaces the draft leaves it in place. */
export function applyNotice(state: ChatState, runId: string, code: string, message: string, seq: number): ChatState {
  const item: ChatItem = { ...emptyItem(`notice:${runId}:${seq}`, 'system', runId), blocks: [{ kind: 'notice', code, message }] };
  const draft = state.items.findIndex(i => i.key === draftKey(runId));
  const items = [...state.items];
  items.splice(draft < 0 ? items.length : draft, 0, item);
  return { ...state, items };
}

export function applyError(
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

export function applyFinal(state: ChatState, runId: string, run: Run | null): ChatState {
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
