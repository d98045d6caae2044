/** Small pure formatting helpers of the panel (unit-tested). */

import type { Trans } from './i18n';
import { sdkBadge } from './sdks';

export function formatTokens(input: number | null, output: number | null, trans: Trans): string {
  if (input === null && output === null) {
    return '';
  }
  return trans.__('%1 in / %2 out', input ?? 0, output ?? 0);
}

export function formatCost(cost: number | null | undefined): string {
  if (cost === null || cost === undefined || !Number.isFinite(cost)) {
    return '';
  }
  if (cost === 0) {
    return '$0';
  }
  if (cost < 0.01) {
    return `$${cost.toPrecision(2)}`;
  }
  return `$${cost.toFixed(2)}`;
}

/** What a `budget` event says: "session budget: 60/100 tokens, $0.0100/$0.5" (as the magic's
 * footer and `agi` say it). */
export function formatBudget(event: {
  scope: string;
  notebook_path?: string | null;
  max_tokens?: number | null;
  max_usd?: number | null;
  spent_tokens?: number;
  spent_usd?: number;
}): string {
  const parts: string[] = [];
  if (event.max_tokens !== null && event.max_tokens !== undefined) {
    parts.push(`${event.spent_tokens ?? 0}/${event.max_tokens} tokens`);
  }
  if (event.max_usd !== null && event.max_usd !== undefined) {
    parts.push(`$${(event.spent_usd ?? 0).toFixed(4)}/$${event.max_usd}`);
  }
  const where = event.scope === 'notebook' ? `notebook ${event.notebook_path ?? ''}` : 'session';
  return `${where} budget: ${parts.join(', ')}`;
}

/** "model · 12 in / 3 out · $0.0012", leaving out what is unknown; prefixed by the agent
 * SDK when it is not `native` ("claude · model · …"). */
export function metaLine(
  model: string | null,
  input: number | null,
  output: number | null,
  cost: number | null,
  sdk: string | null,
  trans: Trans
): string {
  return [sdkBadge(sdk) ?? '', model ?? '', formatTokens(input, output, trans), formatCost(cost)]
    .filter(Boolean)
    .join(' · ');
}

/** A short local time of an ISO timestamp ('' if missing or invalid). */
export function shortTime(iso: string | null | undefined): string {
  if (!iso) {
    return '';
  }
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) {
    return '';
  }
  return date.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

/** Pretty JSON for tool arguments; the raw text while it is still streaming. */
export function prettyArguments(args: Record<string, unknown> | null, streamed: string): string {
  if (args !== null) {
    return JSON.stringify(args, null, 2);
  }
  try {
    return JSON.stringify(JSON.parse(streamed), null, 2);
  } catch {
    return streamed;
  }
}

/** A one-line preview of tool arguments for the collapsed block. */
export function argumentsPreview(args: Record<string, unknown> | null, streamed: string, max = 60): string {
  const text = args !== null ? JSON.stringify(args) : streamed;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export type DiffLineKind = 'add' | 'del' | 'hunk' | 'file' | 'context';

/** Classify the lines of a unified diff for colouring. */
export function diffLines(text: string): { kind: DiffLineKind; text: string }[] {
  return text.split('\n').map(line => {
    let kind: DiffLineKind = 'context';
    if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff ') || line.startsWith('*** ')) {
      kind = 'file';
    } else if (line.startsWith('@@')) {
      kind = 'hunk';
    } else if (line.startsWith('+')) {
      kind = 'add';
    } else if (line.startsWith('-')) {
      kind = 'del';
    }
    return { kind, text: line };
  });
}

/** The label of a session in the picker: its title (or agent and model), then when. */
export function sessionLabel(session: {
  id: string;
  title: string | null;
  agent: string;
  sdk: string;
  model: string | null;
  created_at: string;
}): string {
  const name = session.title || `${session.agent}${session.model ? ` · ${session.model}` : ''}`;
  const badge = sdkBadge(session.sdk);
  const when = shortTime(session.created_at);
  return `${name}${badge ? ` [${badge}]` : ''}${when ? ` (${when})` : ''}`;
}
