/**
 * The transcript as turns: a person's message, or one whole answer of the assistant (every
 * model turn of a run, with its tool calls) under one header, as chat UIs show it. Pure.
 */

import type { Block, ChatItem, ItemStatus } from './items';

export interface Entry {
  item: ChatItem;
  blocks: Block[];
}

export interface Turn {
  key: string;
  role: 'user' | 'assistant' | 'system';
  runId: string | null;
  entries: Entry[];
  status: ItemStatus;
  model: string | null;
  sdk: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  costUsd: number | null;
  costUnknown: boolean;
  stop: string | null;
  createdAt: string | null;
}

export function groupTurns(entries: Entry[]): Turn[] {
  const turns: Turn[] = [];
  for (const entry of entries) {
    const role = entry.item.role === 'user' ? 'user' : entry.item.role === 'system' ? 'system' : 'assistant';
    const last = turns[turns.length - 1];
    if (last && role === 'assistant' && last.role === 'assistant' && entry.item.runId && entry.item.runId === last.runId) {
      last.entries.push(entry);
    } else {
      turns.push({ key: entry.item.key, role, runId: entry.item.runId, entries: [entry], ...EMPTY });
    }
  }
  return turns.map(summarize);
}

const EMPTY = {
  status: 'complete' as ItemStatus,
  model: null,
  sdk: null,
  inputTokens: null,
  outputTokens: null,
  costUsd: null,
  costUnknown: false,
  stop: null,
  createdAt: null
};

function summarize(turn: Turn): Turn {
  const items = turn.entries.map(e => e.item);
  const sum = (values: (number | null)[]): number | null =>
    values.some(v => v !== null) ? values.reduce<number>((total, v) => total + (v ?? 0), 0) : null;
  return {
    ...turn,
    status: turnStatus(items),
    model: items.find(i => i.model)?.model ?? null,
    sdk: items.find(i => i.sdk)?.sdk ?? null,
    inputTokens: sum(items.map(i => i.inputTokens)),
    outputTokens: sum(items.map(i => i.outputTokens)),
    costUsd: sum(items.map(i => i.costUsd)),
    costUnknown: items.some(i => i.costUnknown),
    stop: items.find(i => i.stop)?.stop ?? null,
    createdAt: items[0]?.createdAt ?? null
  };
}

function turnStatus(items: ChatItem[]): ItemStatus {
  for (const status of ['streaming', 'pending', 'cancelled', 'error'] as ItemStatus[]) {
    if (items.some(i => i.status === status)) {
      return status;
    }
  }
  return 'complete';
}
