/**
 * The items of the transcript (messages as blocks of text, reasoning, tool calls, errors,
 * artifacts, images) and how a stored message becomes one. Used by the reducer of `state.ts`.
 */

import { stopNote } from './format';
import type { Message, Part, Role, ToolResultPart } from './types';

export interface ArtifactSummary {
  id: string;
  kind: string;
  title?: string | null;
  size?: number;
  summary?: unknown;
}

/** `tool.call.started`'s `tool_type` of a provider-hosted tool's call (Python: `events.HOSTED_TOOL_TYPE`). */
export const HOSTED_TOOL_TYPE = 'hosted';

export interface ToolBlock {
  kind: 'tool';
  toolCallId: string;
  name: string;
  /** Parsed arguments once known; `argumentsText` holds the streamed JSON until then. */
  arguments: Record<string, unknown> | null;
  argumentsText: string;
  /** `streaming` (arguments arriving), `running`, then the tool call's final status. */
  status: string;
  ok: boolean | null;
  output: string | null;
  /** Live stdout/stderr/patch chunks of a running tool. */
  live: string;
  artifact: ArtifactSummary | null;
  /** The change a call waiting for approval would make, as a unified diff (edits only). */
  diff?: string | null;
  /** Who decided a call that waited, and where (`approval.decided`), wherever it was decided. */
  decided?: { decision: string; door: string | null; by: string | null } | null;
  /** A provider-hosted tool's call (web search, code interpreter): the provider ran it inside its answer. */
  hosted?: boolean;
}

export type Block =
  | { kind: 'text'; text: string }
  | { kind: 'reasoning'; text: string }
  | ToolBlock
  | { kind: 'error'; code: string; message: string }
  | { kind: 'notice'; code: string; message: string }
  | { kind: 'artifact'; artifactId: string; artifactKind: string; title: string | null }
  | { kind: 'image'; mime: string; src: string; artifactId?: string }
  | { kind: 'mention'; mentionKind: string; ref: string };

export type ItemStatus = 'pending' | 'streaming' | 'complete' | 'error' | 'cancelled';

export interface ChatItem {
  /** Stable React key: the message id, or `draft:<run>` / `pending:<n>` before it has one. */
  key: string;
  messageId: string | null;
  role: Role;
  runId: string | null;
  status: ItemStatus;
  blocks: Block[];
  provider: string | null;
  model: string | null;
  /** The agent SDK that wrote the message (`native`, `claude`, `codex`), when known. */
  sdk: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  costUsd: number | null;
  /** The answer's cost is unknown (no usage, or no catalog price): shown as "?", never $0. */
  costUnknown: boolean;
  /** Why the answer stopped short (`stopNote`), or null. */
  stop: string | null;
  createdAt: string | null;
}

/** What the simple view shows of an item: its text (and errors, and the user's mentions and
 * images);
 * null hides the item. */
export function visibleBlocks(item: ChatItem, view: 'simple' | 'full'): Block[] | null {
  if (view === 'full') {
    return item.blocks;
  }
  if (item.role !== 'user' && item.role !== 'assistant' && !item.blocks.some(b => b.kind === 'notice')) {
    return null;
  }
  const shown = new Set(['text', 'error', 'notice', 'mention', 'image']);
  const blocks = item.blocks.filter(b => shown.has(b.kind));
  return blocks.length || item.status === 'streaming' ? blocks : null;
}

/** What a stored tool result tells a tool block; `status` is the call's own (a denied call
 * stays denied), read from `is_error` in results stored before the status was. */
export function resultFields(result: ToolResultPart): Partial<ToolBlock> {
  return {
    ok: !result.is_error,
    output: result.output,
    status: result.status ?? (result.is_error ? 'failed' : 'completed'),
    artifact: result.artifact_id ? { id: result.artifact_id, kind: 'artifact' } : null
  };
}

export function emptyItem(key: string, role: Role, runId: string | null): ChatItem {
  return {
    key,
    messageId: null,
    role,
    runId,
    status: 'complete',
    blocks: [],
    provider: null,
    model: null,
    sdk: null,
    inputTokens: null,
    outputTokens: null,
    costUsd: null,
    costUnknown: false,
    stop: null,
    createdAt: null
  };
}

/** What the runtime keeps in a message's `meta` (an open JSON object in the API). */
interface MessageMeta {
  provider?: string;
  model?: string;
  sdk?: string;
  cost_usd?: number | null;
  usage?: { input_tokens?: number; output_tokens?: number };
  /** The answer a cancelled or failed run had streamed (status `error`). */
  partial?: boolean;
  truncated?: boolean;
  context_full?: boolean;
  context_window?: number;
  context_tokens?: number;
}

/** A stored message as a chat item. */
export function messageItem(message: Message): ChatItem {
  const meta = message.meta as MessageMeta;
  const usage = meta.usage ?? {};
  return {
    ...emptyItem(message.id, message.role, message.run_id),
    messageId: message.id,
    // A partial answer (the run ended mid-answer) shows as the cut-short draft did.
    status: meta.partial ? 'cancelled' : message.status === 'error' ? 'error' : 'complete',
    blocks: message.parts.flatMap(partBlocks),
    provider: meta.provider ?? null,
    model: meta.model ?? null,
    sdk: meta.sdk || null,
    inputTokens: usage.input_tokens ?? null,
    outputTokens: usage.output_tokens ?? null,
    costUsd: meta.cost_usd ?? null,
    costUnknown: message.role === 'assistant' && 'cost_usd' in meta && meta.cost_usd === null,
    stop: message.role === 'assistant' ? stopNote(meta) : null,
    createdAt: message.created_at || null
  };
}

function partBlocks(part: Part): Block[] {
  switch (part.type) {
    case 'text':
      return part.text ? [{ kind: 'text', text: part.text }] : [];
    case 'mention':
      return [{ kind: 'mention', mentionKind: part.kind, ref: part.ref }];
    case 'reasoning':
      return part.text ? [{ kind: 'reasoning', text: part.text }] : [];
    case 'tool_call':
      return [
        {
          kind: 'tool',
          toolCallId: part.tool_call_id,
          name: part.name,
          arguments: part.arguments,
          argumentsText: '',
          status: 'running',
          ok: null,
          output: null,
          live: '',
          artifact: null
        }
      ];
    case 'tool_result':
      return [
        {
          kind: 'tool',
          toolCallId: part.tool_call_id,
          name: part.name,
          arguments: null,
          argumentsText: '',
          live: '',
          ...(resultFields(part) as Pick<ToolBlock, 'ok' | 'output' | 'status' | 'artifact'>)
        }
      ];
    case 'hosted_tool':
      return [
        {
          kind: 'tool',
          toolCallId: part.tool_call_id,
          name: part.name,
          arguments: part.input,
          argumentsText: '',
          status: part.is_error ? 'failed' : 'completed',
          ok: !part.is_error,
          output: part.output,
          live: '',
          artifact: null,
          hosted: true
        }
      ];
    case 'error':
      return [{ kind: 'error', code: part.code, message: part.message }];
    case 'artifact_ref':
      return [{ kind: 'artifact', artifactId: part.artifact_id, artifactKind: part.kind, title: part.title }];
    case 'image': {
      // An attached image's bytes are an artifact (loaded when shown).
      const src = part.url ?? (part.data_base64 ? `data:${part.mime};base64,${part.data_base64}` : '');
      const artifactId = part.artifact_id ?? undefined;
      return src || artifactId ? [{ kind: 'image', mime: part.mime, src, ...(artifactId ? { artifactId } : {}) }] : [];
    }
    default:
      return [];
  }
}
