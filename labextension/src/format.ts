/** Small pure formatting helpers of the panel (unit-tested). */

import type { ContextGauge } from './chatstate';
import type { Trans } from './i18n';
import { sdkBadge } from './sdks';

export function formatTokens(input: number | null, output: number | null, trans: Trans): string {
  if (input === null && output === null) {
    return '';
  }
  return trans.__('%1 in / %2 out', input ?? 0, output ?? 0);
}

/** The context gauge of a run's last model request: "context 3,085 / 8,000 tokens · compacts
 * at 6,000". */
/** A token count in a few characters: 950, 3.5k, 128k, 1M, 1.5M. */
export function shortTokens(value: number): string {
  const scaled = (n: number, unit: string): string =>
    `${Number(n.toPrecision(n < 10 ? 2 : 3)).toLocaleString('en-US')}${unit}`;
  if (value >= 1_000_000) {
    return scaled(value / 1_000_000, 'M');
  }
  if (value >= 1000) {
    return scaled(value / 1000, 'k');
  }
  return String(value);
}

/** The context gauge of the last request: a short label for the run line ("context 3.5k / 1M")
 * and the whole of it for the tooltip ("context 3,546 / 1,000,000 tokens · compacts at 991,808").
 */
export function formatContext(
  gauge: ContextGauge | null,
  trans: Trans
): { short: string; full: string } | null {
  if (gauge === null) {
    return null;
  }
  const n = (value: number): string => value.toLocaleString('en-US');
  const used = trans.__('context %1 / %2 tokens', n(gauge.tokens), n(gauge.window));
  return {
    short: trans.__('context %1 / %2', shortTokens(gauge.tokens), shortTokens(gauge.window)),
    full: gauge.compactsAt === null ? used : `${used} · ${trans.__('compacts at %1', n(gauge.compactsAt))}`
  };
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

/** How a cost nobody measured is written (a model turn without usage, or a model without a
 * catalog price): never $0, as every other door writes it (`agi_jupyter/amounts.py`). */
export const UNKNOWN = '?';

/** "model · 12 in / 3 out · $0.0012", leaving out what is not there yet; a cost that is
 * unknown is "cost ?"; prefixed by the agent SDK when it is not `native` ("claude · model · …"). */
export function metaLine(
  model: string | null,
  input: number | null,
  output: number | null,
  cost: number | null,
  sdk: string | null,
  trans: Trans,
  costUnknown = false
): string {
  const price = costUnknown ? `cost ${UNKNOWN}` : formatCost(cost);
  return [sdkBadge(sdk) ?? '', model ?? '', formatTokens(input, output, trans), price].filter(Boolean).join(' · ');
}

/** Why an answer stopped short (a message's `meta` or a run's `usage`), as the CLI and the
 * magics say it: a full context window with its tokens, or the output token limit; else null. */
export function stopNote(meta: {
  truncated?: unknown;
  context_full?: unknown;
  context_window?: unknown;
  context_tokens?: unknown;
}): string | null {
  if (meta.context_full) {
    const known = typeof meta.context_window === 'number' && typeof meta.context_tokens === 'number';
    return `truncated: the context window is full${known ? ` (${meta.context_tokens} of ${meta.context_window} tokens)` : ''}`;
  }
  return meta.truncated ? 'truncated: output token limit' : null;
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
