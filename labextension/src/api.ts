/**
 * A typed client of the `/agi/v1` API (DESIGN.md section 9). Every request is checked against
 * the OpenAPI document at compile time: `request('get', '/agi/v1/sessions/{session_id}', ...)`
 * only type-checks for a documented method and path, with its documented path and query
 * parameters and body, and returns the documented response (types generated into
 * `openapi.ts`). Requests go through a `Transport` (in JupyterLab: `ServerConnection
 * .makeRequest`, which adds the server's auth and XSRF headers), so this module has no
 * JupyterLab import and is unit-tested with a fake one.
 *
 * Errors come back as `ApiError` with the server's code and message.
 */

import type { MessageContent } from './attachments';
import { type components, ErrorCode, type paths } from './openapi';
import { formatOf, readEvents } from './stream';
import type {
  AgentInfo,
  AgiEvent,
  ApprovalDecision,
  Artifact,
  CancelResult,
  Change,
  History,
  HistoryView,
  NewSession,
  ProviderList,
  Run,
  SdkList,
  Session,
  TabReply,
  UndoResult
} from './types';

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
    return this.code && this.code !== ErrorCode.HTTP_ERROR ? `${this.message} (${this.code})` : this.message;
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

// --- the contract, from the generated paths ------------------------------------------------

type Method = 'get' | 'post' | 'patch' | 'delete';
type Path = keyof paths;
/** The documented paths that have `M`. */
export type PathOf<M extends Method> = {
  [P in Path]: [paths[P][M]] extends [undefined] ? never : P;
}[Path];
type Operation<P extends Path, M extends Method> = NonNullable<paths[P][M]>;
type Parameters<O> = O extends { parameters: infer T } ? T : never;
type QueryOf<O> = NonNullable<Parameters<O> extends { query?: infer Q } ? Q : never>;
type PathParams<O> = Parameters<O> extends { path: infer T } ? T : never;
// A body the document marks optional (no field required) is `requestBody?`: still typed.
type Body<O> = O extends { requestBody?: infer R }
  ? [NonNullable<R>] extends [never]
    ? never
    : NonNullable<R> extends { content: { 'application/json': infer B } }
      ? B
      : never
  : never;
type Success<O> = O extends { responses: infer R } ? R[Extract<keyof R, 200 | 201 | 202>] : never;
type Json<O> = Success<O> extends { content: { 'application/json': infer J } } ? J : never;

/** What a request takes besides its method and path; only the documented parts type-check. */
export type RequestParts<O> = ([PathParams<O>] extends [never] ? { path?: undefined } : { path: PathParams<O> }) &
  ([QueryOf<O>] extends [never] ? { query?: undefined } : { query: QueryOf<O> }) &
  ([Body<O>] extends [never] ? { body?: undefined } : { body: Body<O> });

export class AgiClient {
  constructor(private readonly transport: Transport) {}

  /** A JSON request of the documented `method path`; resolves with its documented response. */
  async request<M extends Method, P extends PathOf<M>>(
    method: M,
    path: P,
    parts: RequestParts<Operation<P, M>>,
    signal?: AbortSignal
  ): Promise<Json<Operation<P, M>>> {
    const response = await this.send(method, path, parts as Parts, 'application/json', signal);
    const text = await response.text();
    try {
      return JSON.parse(text) as Json<Operation<P, M>>;
    } catch {
      throw new ApiError(response.status, ErrorCode.BAD_RESPONSE, `the server sent invalid JSON: ${text.slice(0, 200)}`);
    }
  }

  /** The events of a streamed `method path` (NDJSON, or SSE with `accept`). Aborting stops
   * reading; it never cancels a run. */
  async *stream<M extends Method, P extends PathOf<M>>(
    method: M,
    path: P,
    parts: RequestParts<Operation<P, M>>,
    signal?: AbortSignal,
    accept: 'application/x-ndjson' | 'text/event-stream' = 'application/x-ndjson'
  ): AsyncGenerator<AgiEvent, void, undefined> {
    const response = await this.send(method, path, parts as Parts, accept, signal);
    if (!response.body) {
      throw new ApiError(response.status, ErrorCode.BAD_RESPONSE, 'the server sent no stream');
    }
    yield* readEvents(response.body, formatOf(response.headers.get('Content-Type')));
  }

  private async send(
    method: Method,
    path: string,
    parts: Parts,
    accept: string,
    signal?: AbortSignal
  ): Promise<Response> {
    const init: RequestInit = { method: method.toUpperCase(), headers: { Accept: accept }, signal };
    if (parts.body !== undefined) {
      init.body = JSON.stringify(parts.body);
      (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
    }
    const url = fillPath(path, parts.path ?? {}).replace(/^\/agi\//, '');
    const response = await this.transport(url + queryString(parts.query ?? {}), init);
    if (!response.ok) {
      throw await toApiError(response);
    }
    return response;
  }

  // --- what the panel asks (one method per use, over `request` / `stream`) ------------------

  async listSessions(project: string, pageSize = 100): Promise<Session[]> {
    const page = await this.request('get', '/agi/v1/sessions', { query: { project, page_size: pageSize } });
    return page.sessions;
  }

  async createSession(project: string, body: NewSession): Promise<Session> {
    return (await this.request('post', '/agi/v1/sessions', { query: { project }, body: dropEmpty(body) })).session;
  }

  async history(project: string, id: string, view: HistoryView): Promise<History> {
    const path = { session_id: id };
    return await this.request('get', '/agi/v1/sessions/{session_id}/history', { path, query: { project, view } });
  }

  /** Post a user message and stream the run's events (NDJSON); `where` says which notebook
   * and cell the user is in (the run's notebook for the notebook tools and the outline);
   * `mentions`: its `@` mentions (resolved and stored by the server); `content`: its text, or
   * its text and attached images as parts (`attachments.messageContent`). */
  sendMessage(
    project: string,
    sessionId: string,
    content: MessageContent,
    signal?: AbortSignal,
    where: Whereabouts = {},
    mentions: components['schemas']['MentionInput'][] = []
  ): AsyncGenerator<AgiEvent> {
    const path = { session_id: sessionId };
    const body = { content, ...dropEmpty(where), ...(mentions.length ? { mentions } : {}) };
    return this.stream('post', '/agi/v1/sessions/{session_id}/messages', { path, query: { project }, body }, signal);
  }

  /** The session's live stream (SSE): its runs' events and `session.*`. */
  sessionStream(project: string, sessionId: string, signal?: AbortSignal): AsyncGenerator<AgiEvent> {
    const path = { session_id: sessionId };
    return this.stream('get', '/agi/v1/sessions/{session_id}/stream', { path, query: { project } }, signal, 'text/event-stream');
  }

  async listRuns(project: string, sessionId: string, pageSize = 100): Promise<Run[]> {
    const path = { session_id: sessionId };
    return (await this.request('get', '/agi/v1/sessions/{session_id}/runs', { path, query: { project, page_size: pageSize } }))
      .runs;
  }

  async getRun(project: string, runId: string): Promise<Run> {
    return (await this.request('get', '/agi/v1/runs/{run_id}', { path: { run_id: runId }, query: { project } })).run;
  }

  /** Cancel a run: the run, and the cells its `notebook.run` left running (`interrupted` with `interrupt`). */
  async cancelRun(project: string, runId: string, interrupt = false): Promise<CancelResult> {
    const parts = { path: { run_id: runId }, query: { project }, body: { interrupt } };
    return await this.request('post', '/agi/v1/runs/{run_id}/cancel', parts);
  }

  /** Decide a run's tool calls waiting for approval (one, or all without `toolCallId`). */
  async decideApproval(project: string, runId: string, body: ApprovalDecision): Promise<Run> {
    const parts = { path: { run_id: runId }, query: { project }, body };
    return (await this.request('post', '/agi/v1/runs/{run_id}/approvals', parts)).run;
  }

  /** A run's persisted events after `afterSeq`, then (with `follow`) its live events. */
  runEvents(project: string, runId: string, afterSeq: number, follow: boolean, signal?: AbortSignal): AsyncGenerator<AgiEvent> {
    const query = { project, after_seq: afterSeq, follow };
    return this.stream('get', '/agi/v1/runs/{run_id}/events', { path: { run_id: runId }, query }, signal);
  }

  /** The changes a run made to notebooks (empty: nothing to undo). */
  async runChanges(project: string, runId: string): Promise<Change[]> {
    return (await this.request('get', '/agi/v1/runs/{run_id}/changes', { path: { run_id: runId }, query: { project } }))
      .changes;
  }

  /** Restore the notebooks and files a run changed (`UNDO_CONFLICT` when they changed since);
   * with `turn`, only what its turns from `turn` on changed (rewind to before that turn). */
  async undoRun(project: string, runId: string, force = false, turn: number | null = null): Promise<UndoResult> {
    const body = turn === null ? { force } : { force, turn };
    const parts = { path: { run_id: runId }, query: { project }, body };
    return this.request('post', '/agi/v1/runs/{run_id}/undo', parts);
  }

  /** Undo (or force through conflicts) only the chosen changes of a run. */
  async undoChanges(project: string, runId: string, changes: string[], force: boolean | string[] = false): Promise<UndoResult> {
    const parts = { path: { run_id: runId }, query: { project }, body: { changes, force } };
    return this.request('post', '/agi/v1/runs/{run_id}/undo', parts);
  }

  /** Keep the chosen changes of a run (accepted after review): no longer to review. */
  async keepChanges(project: string, runId: string, changes: string[]): Promise<Change[]> {
    const parts = { path: { run_id: runId }, query: { project }, body: { changes } };
    return (await this.request('post', '/agi/v1/runs/{run_id}/keep', parts)).changes;
  }

  /** The changes ended runs made to a notebook (relative to the project) still to review. */
  async changesToReview(project: string, path: string): Promise<Change[]> {
    const query = { project, path, to_review: true };
    return (await this.request('get', '/agi/v1/changes', { query })).changes;
  }

  /** This window's stream of notebook requests from server runs (SSE). */
  notebookRequests(clientId: string, signal?: AbortSignal): AsyncGenerator<AgiEvent> {
    const query = { client_id: clientId };
    return this.stream('get', '/agi/v1/notebook/bridge', { query }, signal, 'text/event-stream');
  }

  /** The notebooks this window has open (paths relative to the server root). */
  async announceNotebooks(clientId: string, open: string[]): Promise<void> {
    await this.request('post', '/agi/v1/notebook/bridge', { body: { client_id: clientId, open } });
  }

  /** The answer to a notebook request; `projectDir` for a kernel's request. */
  async notebookReply(requestId: string, reply: TabReply, projectDir?: string): Promise<void> {
    const body = { request_id: requestId, reply, ...(projectDir ? { project_dir: projectDir } : {}) };
    await this.request('post', '/agi/v1/notebook/replies', { body });
  }

  async runArtifacts(project: string, runId: string): Promise<Artifact[]> {
    return (await this.request('get', '/agi/v1/runs/{run_id}/artifacts', { path: { run_id: runId }, query: { project } }))
      .artifacts;
  }

  async getArtifact(project: string, id: string): Promise<Artifact> {
    return (await this.request('get', '/agi/v1/artifacts/{artifact_id}', { path: { artifact_id: id }, query: { project } }))
      .artifact;
  }

  /** An artifact's bytes as text (`GET /artifacts/{id}/content` answers with the raw file). */
  async artifactContent(project: string, id: string): Promise<string> {
    const parts = { path: { artifact_id: id }, query: { project } };
    return (await this.send('get', '/agi/v1/artifacts/{artifact_id}/content', parts, '*/*')).text();
  }

  /** An artifact's bytes (an attached image, shown in the transcript). */
  async artifactBlob(project: string, id: string): Promise<Blob> {
    const parts = { path: { artifact_id: id }, query: { project } };
    return (await this.send('get', '/agi/v1/artifacts/{artifact_id}/content', parts, '*/*')).blob();
  }

  async agents(project: string): Promise<AgentInfo[]> {
    return (await this.request('get', '/agi/v1/agents', { query: { project } })).agents;
  }

  async providers(project: string): Promise<ProviderList> {
    return this.request('get', '/agi/v1/providers', { query: { project } });
  }

  /** The agent SDKs sessions can run on, whether each is installed, and the default. */
  async sdks(project: string): Promise<SdkList> {
    return this.request('get', '/agi/v1/sdks', { query: { project } });
  }
}

/** Where the user is when sending a message: the active notebook and its active cell. */
export interface Whereabouts {
  notebook_path?: string;
  cell_id?: string;
}

type QueryValues = Record<string, string | number | boolean | undefined | null>;
/** A request's parts once its types were checked by `request` / `stream`. */
interface Parts {
  path?: Record<string, string>;
  query?: QueryValues;
  body?: unknown;
}

function fillPath(template: string, params: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) {
      throw new Error(`no value for {${name}} in ${template}`);
    }
    return encodeURIComponent(value);
  });
}

export function queryString(query: QueryValues): string {
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

/** The body without the fields left empty (the server's defaults apply to those). */
function dropEmpty<T extends object>(body: T): T {
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined && v !== null && v !== '')) as T;
}

/**
 * An `ApiError` from a failed response: the API's `{"error": {code, message}}`; Jupyter's own
 * errors (authentication, XSRF) come as `{"message"}`; anything else is the status line.
 */
export async function toApiError(response: Response): Promise<ApiError> {
  const status = `${response.status} ${response.statusText || 'error'}`.trim();
  let json: unknown = null;
  try {
    json = JSON.parse(await response.text());
  } catch {
    return new ApiError(response.status, ErrorCode.HTTP_ERROR, status);
  }
  const body = (json ?? {}) as { error?: { code?: unknown; message?: unknown }; message?: unknown };
  if (body.error && typeof body.error.message === 'string') {
    return new ApiError(response.status, String(body.error.code ?? ErrorCode.HTTP_ERROR), body.error.message);
  }
  if (typeof body.message === 'string' && body.message) {
    return new ApiError(response.status, ErrorCode.HTTP_ERROR, body.message);
  }
  return new ApiError(response.status, ErrorCode.HTTP_ERROR, status);
}
