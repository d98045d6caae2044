/**
 * The wire types of the `/agi/v1` API under the names the panel uses. Every one is a schema of
 * the server's OpenAPI document (`openapi.ts`, generated from it by `scripts/gen-types.mjs`), so
 * a field the server renames or drops fails the type check here instead of the panel at run
 * time. Events are one discriminated union on `type`.
 */

import type { components } from './openapi';

type Schemas = components['schemas'];

export type Session = Schemas['Session'];
export type Run = Schemas['Run'];
export type RunStatus = Run['status'];
export type Message = Schemas['Message'];
/** A session's history (`GET …/history`): its messages, and where compactions folded some. */
export type History = Schemas['History'];
/** Older messages folded into a summary the model reads instead (the history stays whole). */
export type Compaction = Schemas['Compaction'];
export type Role = Message['role'];
export type Part = Message['parts'][number];
export type ToolResultPart = Schemas['ToolResultPart'];
export type Artifact = Schemas['Artifact'];
export type AgentInfo = Schemas['AgentInfo'];
export type SdkInfo = Schemas['SdkInfo'];
export type SdkList = Schemas['SdkList'];
export type ProviderList = Schemas['ProviderList'];
export type NewSession = Schemas['SessionCreate'];
export type ApprovalDecision = Schemas['ApprovalDecision'];
/** A change a run made to a notebook (or a file), with the sha256 of its snapshots. */
export type Change = Schemas['Change'];
/** A cell a run's `notebook.run` left running (or interrupted), named by a cancel's answer. */
export type RunningCells = Schemas['RunningCells'];
export type CancelResult = Schemas['CancelResponse'];
/** A tab's answer to a notebook request (the notebook bridge protocol). */
export type TabReply = Schemas['TabReply'];
/** What `POST /runs/{id}/undo` did, per notebook. */
export type UndoResult = Schemas['UndoResponse'];

/** A live event (DESIGN.md section 4): `type`, `run_id`, `seq`, `ts` and its payload. */
export type AgiEvent = Schemas['Event'];
export type EventType = AgiEvent['type'];
export type EventOf<T extends EventType> = Extract<AgiEvent, { type: T }>;

export type HistoryView = 'simple' | 'full';

export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled']);

export function isTerminal(status: string | undefined | null): boolean {
  return status !== undefined && status !== null && TERMINAL_STATUSES.has(status);
}

/** `provider:model` choices of the new-session form (from `GET /providers`). */
export interface ModelChoice {
  id: string;
  provider: string;
  label: string;
  configured: boolean;
}
