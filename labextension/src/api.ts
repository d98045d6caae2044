/**
 * A small typed client of the `/agi/v1` API (DESIGN.md section 9). Requests go through a
 * `Transport` (in JupyterLab: `ServerConnection.makeRequest`, which adds the server's auth and
 * XSRF headers), so this module has no JupyterLab import and is unit-tested with a fake one.
 *
 * Every call takes the project (a folder relative to the server root; '' is the root) because
 * the project picks the store. Errors come back as `ApiError` with the server's code and a
 * readable message.
 */

import { formatOf, readEvents, type WireEvent } from './stream';
import type { AgentInfo, AgiEvent, Artifact, Change, HistoryView, Message, Page, Run, Session, UndoResult } from './types';
import {
  firstString,
  isRecord,
  toAgents,
  toPage,
  toProviders,
  toSdks,
  unwrap,
  type ProviderCatalogue,
  type SdkCatalogue
} from './wire';

/** Sends a request to a path under the server's `agi/` prefix, e.g. `v1/sessions?x=1`. */
export type Transport = (path: string, init: RequestInit) => Promise<Response>;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** What the panel shows: the message, with the code when it says more. */
  get readable(): string {
    return this.code && this.code !== 'HTTP_ERROR' ? `${this.message} (${this.code})` : this.message;
  }
}

/** The readable text of any error (ApiError, network failure, anything thrown). */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) {
    return error.readable;
  }
  if (error instanceof Error) {
    return error.message || error.name;
  }
  return String(error);
}

export function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

export interface NewSession {
  agent?: string;
  /** The agent SDK that runs the session (`native`, `claude`, `codex`); default: the agent's,
   * else the project's. */
  sdk?: string;
  model?: string;
  title?: string;
  notebook_path?: string;
}

/** Where the user is when sending a message: the active notebook and its active cell. */
export interface Whereabouts {
  notebook_path?: string;
  cell_id?: string;
}

type Query = Record<string, string | number | boolean | undefined | null>;

export class AgiClient {
  constructor(private readonly transport: Transport) {}

  // --- sessions --------------------------------------------------------------------------

  async listSessions(project: string, pageSize = 100): Promise<Page<Session>> {
    const json = await this.json('GET', 'sessions', { project, page_size: pageSize });
    return toPage<Session>(json, 'sessions');
  }

  async createSession(project: string, body: NewSession): Promise<Session> {
    return unwrap<Session>(await this.json('POST', 'sessions', { project }, dropEmpty(body)), 'session');
  }

  async getSession(project: string, id: string): Promise<Session> {
    return unwrap<Session>(await this.json('GET', `sessions/${enc(id)}`, { project }), 'session');
  }

  async updateSession(project: string, id: string, body: Partial<NewSession>): Promise<Session> {
    return unwrap<Session>(await this.json('PATCH', `sessions/${enc(id)}`, { project }, body), 'session');
  }

  async deleteSession(project: string, id: string): Promise<void> {
    await this.json('DELETE', `sessions/${enc(id)}`, { project });
  }

  async history(project: string, id: string, view: HistoryView): Promise<Message[]> {
    const json = await this.json('GET', `sessions/${enc(id)}/history`, { project, view });
    return toPage<Message>(json, 'messages').items;
  }

  /**
   * Post a user message and stream the run's events (NDJSON). The run keeps going if the
   * stream is aborted; stop it with `cancelRun`.
   */
  sendMessage(
    project: string,
    sessionId: string,
    content: string,
    signal?: AbortSignal,
    where: Whereabouts = {}
  ): AsyncGenerator<AgiEvent, void, undefined> {
    return this.stream(
      'POST',
      `sessions/${enc(sessionId)}/messages`,
      { project },
      { content, ...dropEmpty(where) },
      signal
    );
  }

  /** The session's live stream (SSE): its runs' events, `message.created`, `session.*`. */
  sessionStream(
    project: string,
    sessionId: string,
    signal?: AbortSignal
  ): AsyncGenerator<AgiEvent, void, undefined> {
    return this.stream(
      'GET',
      `sessions/${enc(sessionId)}/stream`,
      { project },
      undefined,
      signal,
      'text/event-stream'
    );
  }

  // --- runs ------------------------------------------------------------------------------

  async listRuns(project: string, sessionId: string, pageSize = 100): Promise<Page<Run>> {
    const json = await this.json('GET', `sessions/${enc(sessionId)}/runs`, {
      project,
      page_size: pageSize
    });
    return toPage<Run>(json, 'runs');
  }

  async getRun(project: string, runId: string): Promise<Run> {
    return unwrap<Run>(await this.json('GET', `runs/${enc(runId)}`, { project }), 'run');
  }

  async cancelRun(project: string, runId: string): Promise<Run> {
    return unwrap<Run>(await this.json('POST', `runs/${enc(runId)}/cancel`, { project }), 'run');
  }

  /** A run's persisted events after `afterSeq`, then (with `follow`) its live events. */
  runEvents(
    project: string,
    runId: string,
    afterSeq: number,
    follow: boolean,
    signal?: AbortSignal
  ): AsyncGenerator<AgiEvent, void, undefined> {
    return this.stream(
      'GET',
      `runs/${enc(runId)}/events`,
      { project, after_seq: afterSeq, follow },
      undefined,
      signal
    );
  }

  /** The changes a run made to notebooks (empty: nothing to undo). */
  async runChanges(project: string, runId: string): Promise<Change[]> {
    const json = await this.json('GET', `runs/${enc(runId)}/changes`, { project });
    return toPage<Change>(json, 'changes').items;
  }

  /** Restore the notebooks a run changed (`UNDO_CONFLICT` when their cells changed since). */
  async undoRun(project: string, runId: string, force = false): Promise<UndoResult> {
    return (await this.json('POST', `runs/${enc(runId)}/undo`, { project }, { force })) as UndoResult;
  }

  // --- the notebook bridge (labextension <-> server runs and kernels) ----------------------

  /** This window's stream of notebook requests from server runs (SSE). */
  notebookRequests(clientId: string, signal?: AbortSignal): AsyncGenerator<AgiEvent, void, undefined> {
    return this.stream('GET', 'notebook/bridge', { client_id: clientId }, undefined, signal, 'text/event-stream');
  }

  /** The notebooks this window has open (paths relative to the server root). */
  async announceNotebooks(clientId: string, open: string[]): Promise<void> {
    await this.json('POST', 'notebook/bridge', {}, { client_id: clientId, open });
  }

  /** The answer to a notebook request; `projectDir` for a kernel's request. */
  async notebookReply(requestId: string, reply: unknown, projectDir?: string): Promise<void> {
    const body: Record<string, unknown> = { request_id: requestId, reply };
    if (projectDir) {
      body.project_dir = projectDir;
    }
    await this.json('POST', 'notebook/replies', {}, body);
  }

  // --- artifacts -------------------------------------------------------------------------

  async runArtifacts(project: string, runId: string): Promise<Artifact[]> {
    const json = await this.json('GET', `runs/${enc(runId)}/artifacts`, { project });
    return toPage<Artifact>(json, 'artifacts').items;
  }

  async getArtifact(project: string, id: string): Promise<Artifact> {
    return unwrap<Artifact>(await this.json('GET', `artifacts/${enc(id)}`, { project }), 'artifact');
  }

  async artifactContent(project: string, id: string): Promise<string> {
    const response = await this.request('GET', `artifacts/${enc(id)}/content`, { project });
    return response.text();
  }

  // --- catalogue -------------------------------------------------------------------------

  async agents(project: string): Promise<AgentInfo[]> {
    return toAgents(await this.json('GET', 'agents', { project }));
  }

  async providers(project: string): Promise<ProviderCatalogue> {
    return toProviders(await this.json('GET', 'providers', { project }));
  }

  /** The agent SDKs sessions can run on, whether each is installed, and the default. */
  async sdks(project: string): Promise<SdkCatalogue> {
    return toSdks(await this.json('GET', 'sdks', { project }));
  }

  // --- plumbing --------------------------------------------------------------------------

  private async request(
    method: string,
    path: string,
    query: Query,
    body?: unknown,
    accept = 'application/json',
    signal?: AbortSignal
  ): Promise<Response> {
    const init: RequestInit = { method, headers: { Accept: accept }, signal };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
    }
    const response = await this.transport(`v1/${path}${queryString(query)}`, init);
    if (!response.ok) {
      throw await toApiError(response);
    }
    return response;
  }

  private async json(method: string, path: string, query: Query, body?: unknown): Promise<unknown> {
    const response = await this.request(method, path, query, body);
    const text = await response.text();
    if (!text) {
      return null;
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new ApiError(response.status, 'BAD_RESPONSE', `the server sent invalid JSON: ${text.slice(0, 200)}`);
    }
  }

  private async *stream(
    method: string,
    path: string,
    query: Query,
    body: unknown,
    signal: AbortSignal | undefined,
    accept = 'application/x-ndjson'
  ): AsyncGenerator<AgiEvent, void, undefined> {
    const response = await this.request(method, path, query, body, accept, signal);
    if (!response.body) {
      throw new ApiError(response.status, 'BAD_RESPONSE', 'the server sent no stream');
    }
    const format = formatOf(response.headers.get('Content-Type'));
    for await (const event of readEvents(response.body, format)) {
      yield event as WireEvent & AgiEvent;
    }
  }
}

function enc(id: string): string {
  return encodeURIComponent(id);
}

export function queryString(query: Query): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === '') {
      continue;
    }
    params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

function dropEmpty<T extends object>(body: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(body).filter(([, v]) => v !== undefined && v !== null && v !== '')
  ) as Partial<T>;
}

/** An `ApiError` from a failed response: `{"error": {code, message}}`, Jupyter's
 * `{"message"}`, or the status line. */
export async function toApiError(response: Response): Promise<ApiError> {
  let text = '';
  try {
    text = await response.text();
  } catch {
    // no body
  }
  const fallback = `${response.status} ${response.statusText || 'error'}`.trim();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (isRecord(json)) {
    const inner = isRecord(json.error) ? json.error : json;
    const message = firstString(inner.message, inner.detail, json.message, json.reason);
    const code = firstString(inner.code, json.code) ?? 'HTTP_ERROR';
    const details = validationDetails(inner.details ?? json.detail);
    if (message) {
      return new ApiError(response.status, code, details ? `${message}: ${details}` : message);
    }
    if (details) {
      return new ApiError(response.status, code, details);
    }
  }
  const plain = text && !text.trimStart().startsWith('<') ? text.slice(0, 300) : fallback;
  return new ApiError(response.status, 'HTTP_ERROR', plain);
}

/** pydantic-style validation errors (`[{loc, msg}]`) as one line. */
function validationDetails(value: unknown): string | null {
  if (!Array.isArray(value)) {
    return null;
  }
  const lines = value.filter(isRecord).map(item => {
    const loc = Array.isArray(item.loc) ? item.loc.join('.') : '';
    const msg = firstString(item.msg, item.message) ?? '';
    return loc ? `${loc}: ${msg}` : msg;
  });
  return lines.length ? lines.join('; ') : null;
}
