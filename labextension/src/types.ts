/**
 * The wire types of the `/agi/v1` API (DESIGN.md section 9), mirroring `agi_jupyter/records.py`
 * (sessions, messages and their parts, runs, artifacts) and `agi_jupyter/events.py` (the live
 * event vocabulary). Fields the panel does not read are left out or optional, so a server that
 * adds fields never breaks the panel.
 */

export type Role = 'system' | 'user' | 'assistant' | 'tool';

export type RunStatus =
  | 'queued'
  | 'running'
  | 'waiting_webhook'
  | 'processing_webhook'
  | 'succeeded'
  | 'failed'
  | 'cancelled';

export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled']);

export function isTerminal(status: string | undefined | null): boolean {
  return status !== undefined && status !== null && TERMINAL_STATUSES.has(status);
}

export interface TextPart {
  type: 'text';
  text: string;
}

export interface ReasoningPart {
  type: 'reasoning';
  text: string;
}

export interface ToolCallPart {
  type: 'tool_call';
  tool_call_id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface ToolResultPart {
  type: 'tool_result';
  tool_call_id: string;
  name: string;
  output: string;
  is_error?: boolean;
  artifact_id?: string | null;
}

export interface ImagePart {
  type: 'image';
  mime: string;
  data_base64?: string | null;
  url?: string | null;
}

export interface ErrorPart {
  type: 'error';
  code: string;
  message: string;
}

export interface ArtifactRefPart {
  type: 'artifact_ref';
  artifact_id: string;
  kind: string;
  title?: string | null;
}

export type Part =
  | TextPart
  | ReasoningPart
  | ToolCallPart
  | ToolResultPart
  | ImagePart
  | ErrorPart
  | ArtifactRefPart;

export interface Usage {
  input_tokens?: number;
  output_tokens?: number;
  [key: string]: unknown;
}

export interface MessageMeta {
  provider?: string | null;
  model?: string | null;
  usage?: Usage;
  cost_usd?: number | null;
  stop_reason?: string | null;
  /** The agent SDK that ran the turn: `native`, `claude` or `codex`. */
  sdk?: string | null;
  [key: string]: unknown;
}

export interface Message {
  id: string;
  session_id: string;
  role: Role;
  run_id?: string | null;
  status?: 'pending' | 'complete' | 'error';
  text?: string;
  meta?: MessageMeta;
  parts: Part[];
  created_at?: string;
}

export interface Session {
  id: string;
  title?: string | null;
  agent: string;
  sdk?: string;
  provider?: string | null;
  model?: string | null;
  queue_mode?: string;
  notebook_path?: string | null;
  message_count?: number;
  input_tokens?: number;
  output_tokens?: number;
  cost_usd?: number;
  created_at?: string;
  updated_at?: string;
}

export interface RunError {
  code?: string;
  message?: string;
}

export interface Run {
  id: string;
  session_id: string;
  type?: string;
  execution_mode?: string;
  status: RunStatus | string;
  provider?: string | null;
  model?: string | null;
  error?: RunError | null;
  attempt?: number;
  usage?: Usage;
  cost_usd?: number;
  notebook_path?: string | null;
  cell_id?: string | null;
  execution_count?: number | null;
  started_at?: string | null;
  completed_at?: string | null;
  created_at?: string;
}

/** A change a run made to a notebook (or a file), with the sha256 of its snapshots. */
export interface Change {
  id: string;
  run_id?: string | null;
  tool_call_id?: string | null;
  kind: 'notebook' | 'file' | string;
  path: string;
  before_sha?: string | null;
  after_sha?: string | null;
  created_at?: string;
}

/** What `POST /runs/{id}/undo` did, per notebook. */
export interface UndoResult {
  run_id: string;
  notebooks: { path: string; status: string; backend: string; forced: boolean }[];
}

export interface Artifact {
  id: string;
  kind: string;
  run_id?: string | null;
  session_id?: string | null;
  title?: string | null;
  mime?: string | null;
  path?: string | null;
  size?: number;
  data?: Record<string, unknown> | null;
  text?: string | null;
  created_at?: string;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface AgentInfo {
  name: string;
  description?: string;
  model?: string | null;
  tools?: string[];
  read_only?: boolean;
  /** The agent's own SDK; null: the project default. */
  sdk?: string | null;
}

export interface ModelInfo {
  id: string;
  label?: string;
}

export interface ProviderInfo {
  name: string;
  label?: string;
  configured?: boolean;
  enabled?: boolean;
  /** `provider:model` choices (the provider's default model first). */
  models: ModelInfo[];
}

export interface SdkCapabilities {
  queue_while_streaming: boolean;
  interrupt: boolean;
  tool_events: boolean;
  full_history: boolean;
}

/** An agent SDK a session can run on (`GET /sdks`). */
export interface SdkInfo {
  id: string;
  display_name: string;
  capabilities: SdkCapabilities;
  /** Whether the SDK / CLI is installed where the server runs. */
  available: boolean;
  /** Why not, with the install command. */
  reason: string | null;
}

/** A live event (DESIGN.md section 4): `type`, `run_id`, `seq`, `ts` and its payload. */
export interface AgiEvent {
  type: string;
  run_id?: string;
  seq?: number;
  ts?: string;
  [key: string]: unknown;
}

export type HistoryView = 'simple' | 'full';
