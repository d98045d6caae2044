/**
 * What inline completion asks the server, apart from JupyterLab (unit-tested with a fake
 * transport): where the cursor is (`placeOf`), the debounce, superseding the request in flight
 * (`CompletionSource.cancel`: its wait or its HTTP request, and with it the model request),
 * and the streamed insertion. The provider registered with JupyterLab is `completion.ts`.
 */

import type { CompletionHandler } from '@jupyterlab/completer';

import { type AgiClient, ApiError, isAbort } from './api';
import type { components } from './openapi';
import { ErrorCode } from './openapi';
import { folderOf } from './snapshot';

export type CompletionBody = components['schemas']['CompletionCreate'];
export type CompletionChunk = components['schemas']['CompletionChunk'];
type CompletionCell = components['schemas']['CompletionCell'];
type CompletionVariable = components['schemas']['CompletionVariable'];

/** At most this many kernel variables go with a request (names, types, one-line summaries). */
export const MAX_VARIABLES = 50;
/** A notebook's variables are asked again after this long (they change as cells run). */
export const VARIABLES_TTL_MS = 5_000;
/** How long a request waits for the variables before it goes without them. */
export const VARIABLES_WAIT_MS = 200;

export interface CompletionSettings {
  enabled: boolean;
  model: string; // '' : the project's completion.model
  debounceMs: number | null; // null: the project's completion.debounce_ms
  disabledLanguages: string[];
  contextCells: number; // cells above and below sent as context
}

export const DEFAULT_SETTINGS: CompletionSettings = {
  enabled: true,
  model: '',
  debounceMs: null,
  disabledLanguages: ['markdown'],
  contextCells: 3
};

/** Where the cursor is: the document's path, language, the text around it, the cells. */
export interface Place {
  path: string | null;
  language: string;
  prefix: string;
  suffix: string;
  cellId?: string | null;
  cellsBefore?: CompletionCell[];
  cellsAfter?: CompletionCell[];
  off?: boolean; // the notebook turned completion off (metadata agi.completion: false)
  kernel?: boolean; // a kernel is attached: its variables go with the request
}

/** The language of an editor's MIME type: `text/x-ipython` is python, `text/x-sql` sql. */
export function languageOf(mimeType: string | undefined): string {
  const name = (mimeType ?? 'text/x-python').split('/').pop() ?? 'python';
  const bare = name.replace(/^x-/, '').replace(/src$/, '').toLowerCase();
  return bare === 'ipython' || bare === '' ? 'python' : bare;
}

/** Resolves after `ms`, or rejects with an AbortError when `signal` aborts first. */
export function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new DOMException('superseded', 'AbortError'));
      return;
    }
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new DOMException('superseded', 'AbortError'));
      },
      { once: true }
    );
  });
}

/** The requests of the provider, apart from JupyterLab (unit-tested with a fake transport). */
export class CompletionSource {
  settings: CompletionSettings = { ...DEFAULT_SETTINGS };
  /** Requests sent to the server (after the debounce): what the benchmark counts. */
  sent = 0;
  private controller: AbortController | null = null;
  private readonly projectDebounce = new Map<string, Promise<number>>();
  private readonly off = new Set<string>(); // project|language|path the server turned off
  private readonly variables = new Map<string, { at: number; list: Promise<CompletionVariable[]> }>();

  constructor(private readonly client: AgiClient) {}

  /** Supersede the request in flight (its wait or its HTTP request, and so its model call). */
  cancel(): void {
    this.controller?.abort();
    this.controller = null;
  }

  /** The insertion as it streams: the first line once the debounce passed and the model
   * answered, then the rest. Empty when superseded, turned off or refused. */
  async *complete(place: Place): AsyncGenerator<CompletionChunk> {
    this.cancel();
    const controller = new AbortController();
    this.controller = controller;
    const project = folderOf(place.path ?? '');
    const key = `${project}|${place.language}|${place.path ?? ''}`;
    if (!this.settings.enabled || place.off || this.settings.disabledLanguages.includes(place.language) || this.off.has(key)) {
      return;
    }
    try {
      const variables = this.variablesOf(place, project);
      await delay(await this.debounce(project), controller.signal);
      const body = this.body(place);
      const known = await Promise.race([variables, delay(VARIABLES_WAIT_MS, controller.signal).then(() => [])]);
      if (known.length) {
        body.variables = known;
      }
      this.sent += 1;
      const stream = this.client.stream('post', '/agi/v1/completions', { query: { project }, body }, controller.signal);
      for await (const line of stream) {
        yield line as unknown as CompletionChunk;
      }
    } catch (error) {
      if (error instanceof ApiError && error.code === ErrorCode.COMPLETION_DISABLED) {
        this.off.add(key);
      } else if (!isAbort(error)) {
        throw error;
      }
    } finally {
      if (this.controller === controller) {
        this.controller = null;
      }
    }
  }

  private body(place: Place): CompletionBody {
    const body: CompletionBody = { prefix: place.prefix, suffix: place.suffix, language: place.language };
    if (place.path) {
      body.path = place.path.slice(folderOf(place.path).length).replace(/^\//, '');
    }
    if (place.cellId) {
      body.cell_id = place.cellId;
    }
    if (this.settings.model) {
      body.model = this.settings.model;
    }
    const n = this.settings.contextCells;
    if (n > 0 && place.cellsBefore?.length) {
      body.cells_before = place.cellsBefore.slice(-n);
    }
    if (n > 0 && place.cellsAfter?.length) {
      body.cells_after = place.cellsAfter.slice(0, n);
    }
    return body;
  }

  /** The variables of the notebook's kernel (`GET /agi/v1/mentions?kind=var`), asked at most
   * every `VARIABLES_TTL_MS`; none without a kernel, or when the kernel does not answer. */
  private variablesOf(place: Place, project: string): Promise<CompletionVariable[]> {
    if (!place.kernel || !place.path) {
      return Promise.resolve([]);
    }
    const now = Date.now();
    const cached = this.variables.get(place.path);
    if (cached && now - cached.at < VARIABLES_TTL_MS) {
      return cached.list;
    }
    const query = { project, kind: 'var' as const, notebook_path: place.path, limit: MAX_VARIABLES };
    const list = this.client
      .request('get', '/agi/v1/mentions', { query })
      .then(found => found.items.map(v => ({ name: v.ref, type: (v.type ?? '').slice(0, 200), summary: v.detail.slice(0, 2_000) })))
      .catch(() => []);
    this.variables.set(place.path, { at: now, list });
    return list;
  }

  /** The debounce in ms: the setting, else the project's `completion.debounce_ms` (asked once). */
  private debounce(project: string): Promise<number> {
    if (this.settings.debounceMs !== null) {
      return Promise.resolve(this.settings.debounceMs);
    }
    let known = this.projectDebounce.get(project);
    if (!known) {
      known = this.client
        .request('get', '/agi/v1/completions', { query: { project } })
        .then(settings => settings.debounce_ms)
        .catch(() => 300);
      this.projectDebounce.set(project, known);
    }
    return known;
  }
}

interface CellLike {
  model: { id: string; type: string; sharedModel: { getSource(): string } };
}
/** What the provider reads of a notebook panel or a document widget (structural). */
interface DocumentLike {
  context?: { path?: string };
  sessionContext?: { session?: { kernel?: unknown } | null };
  content?: { activeCell?: CellLike | null; widgets?: readonly CellLike[]; model?: { getMetadata?(key: string): unknown } | null };
}

/** Where the cursor of `request` is, in the widget that asked. */
export function placeOf(request: CompletionHandler.IRequest, widget: unknown): Place {
  const doc = (widget ?? {}) as DocumentLike;
  const place: Place = {
    path: doc.context?.path ?? null,
    language: languageOf(request.mimeType),
    prefix: request.text.slice(0, request.offset),
    suffix: request.text.slice(request.offset),
    kernel: !!doc.sessionContext?.session?.kernel
  };
  const active = doc.content?.activeCell;
  const cells = doc.content?.widgets;
  if (active && cells) {
    const at = cells.indexOf(active);
    const asCell = (c: CellLike): CompletionCell => ({
      cell_type: c.model.type === 'markdown' ? 'markdown' : c.model.type === 'raw' ? 'raw' : 'code',
      source: c.model.sharedModel.getSource().slice(0, 20_000)
    });
    place.cellId = active.model.id;
    place.cellsBefore = cells.slice(0, Math.max(0, at)).map(asCell);
    place.cellsAfter = cells.slice(at + 1).map(asCell);
    const meta = doc.content?.model?.getMetadata?.('agi') as { completion?: boolean } | undefined;
    place.off = meta?.completion === false;
  }
  return place;
}

