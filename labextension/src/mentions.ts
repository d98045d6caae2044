/**
 * `@` mentions in the composer, apart from React and JupyterLab (unit-tested): the mention
 * being typed at the caret (`mentionAt`), what it may name (`MentionSource.candidates`: the
 * active notebook's kernel variables and project files from `GET /agi/v1/mentions`, the open
 * notebooks and their cells from the tabs, the MCP servers' resources and prompts without
 * required arguments from `GET /agi/v1/mcp/resources`, grouped by server: `withHeadings`),
 * the text once one is picked (`pick`), and the
 * structured mentions sent with the message (`mentionsToSend`: the server resolves them into
 * bounded context stored with the message).
 */

import type { AgiClient } from './api';
import type { components } from './openapi';

export type MentionInput = components['schemas']['MentionInput'];
export type MentionKindName = components['schemas']['MentionKind'];
export type McpResourceList = components['schemas']['McpResourceList'];

/** A mention the user picked: what goes to the server, and its chip's label. `server`: the
 * MCP server of a resource or a prompt. */
export interface Mention {
  kind: MentionKindName;
  ref: string;
  notebook_path?: string;
  server?: string;
  label: string;
}

/** A line of the completion list; `group` heads the lines that share it (`MCP · server`). */
export interface Candidate extends Mention {
  detail: string;
  group?: string;
}

/** A notebook open in a tab: its path (from the server root) and its cells. */
export interface OpenNotebook {
  path: string;
  cells: { id: string; type: string; source: string }[];
}

/** The `@…` being typed just before `caret`: where it starts and what follows the `@`. */
export interface Typed {
  start: number;
  query: string;
}

const TYPED = /(^|[\s(])@([^\s@]*)$/;

export function mentionAt(text: string, caret: number): Typed | null {
  const query = TYPED.exec(text.slice(0, caret))?.[2];
  return query === undefined ? null : { start: caret - query.length - 1, query };
}

/** `text` with the typed mention replaced by `@label ` and where the caret goes after it. */
export function pick(text: string, caret: number, typed: Typed, mention: Mention): { text: string; caret: number } {
  const inserted = `@${mention.label} `;
  const after = text.slice(caret).replace(/^ /, '');
  return { text: text.slice(0, typed.start) + inserted + after, caret: typed.start + inserted.length };
}

/** The mentions whose `@label` is still in `text` (a deleted one is not sent), once each. */
export function mentionsToSend(text: string, picked: Mention[]): MentionInput[] {
  const seen = new Set<string>();
  const sent: MentionInput[] = [];
  for (const m of picked) {
    const key = `${m.kind}|${m.ref}|${m.notebook_path ?? ''}|${m.server ?? ''}`;
    if (seen.has(key) || !text.includes(`@${m.label}`)) {
      continue;
    }
    seen.add(key);
    sent.push({ kind: m.kind, ref: m.ref, ...(m.notebook_path ? { notebook_path: m.notebook_path } : {}), ...(m.server ? { server: m.server } : {}) });
  }
  return sent;
}

/** A name as a mention's label: no white space (the label ends at one). */
function labelOf(server: string, name: string): string {
  return `${server}:${name.trim().replace(/\s+/g, '_')}`;
}

/** The MCP servers' resources and the prompts that take no required argument, as candidates
 * grouped by server (`MCP · server`), filtered by `query` (name, URI, description). Resource
 * templates and prompts with required arguments are not offered. */
export function mcpCandidates(listing: McpResourceList, query: string): Candidate[] {
  const q = query.toLowerCase();
  const hit = (...texts: (string | null | undefined)[]): boolean => texts.some(t => (t ?? '').toLowerCase().includes(q));
  const found: Candidate[] = [];
  for (const server of listing.servers) {
    const group = `MCP · ${server.name}`;
    for (const r of server.resources) {
      if (hit(r.name, r.uri, r.title, r.description, server.name)) {
        found.push({ kind: 'resource', ref: r.uri, server: server.name, label: labelOf(server.name, r.name), detail: r.description ?? r.uri, group });
      }
    }
    for (const p of server.prompts) {
      if (p.mentionable && hit(p.name, p.title, p.description, server.name, 'prompt')) {
        found.push({ kind: 'prompt', ref: p.name, server: server.name, label: labelOf(server.name, p.name), detail: p.description ?? '', group });
      }
    }
  }
  return found;
}

/** A line of the menu: a group's heading, or a candidate with its place in the list (what
 * the arrow keys move over). */
export type MenuLine = { heading: string } | { candidate: Candidate; index: number };

/** The candidates with a heading before each run of a group (ungrouped ones have none). */
export function withHeadings(items: Candidate[]): MenuLine[] {
  const lines: MenuLine[] = [];
  let group: string | undefined;
  items.forEach((candidate, index) => {
    if (candidate.group && candidate.group !== group) {
      lines.push({ heading: candidate.group });
    }
    group = candidate.group;
    lines.push({ candidate, index });
  });
  return lines;
}

/** `path` (from the server root) relative to `project`, when it is inside it. */
export function inProject(path: string, project: string): string {
  return project && path.startsWith(`${project}/`) ? path.slice(project.length + 1) : path;
}

function firstLine(source: string): string {
  const line = source.split('\n').find(l => l.trim()) ?? '';
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** The open notebooks and their cells as candidates, filtered by `query`. */
export function notebookCandidates(notebooks: OpenNotebook[], project: string, active: string | null, query: string): Candidate[] {
  const q = query.toLowerCase();
  const found: Candidate[] = [];
  for (const nb of notebooks) {
    const ref = inProject(nb.path, project);
    if (baseName(ref).toLowerCase().includes(q) || `notebook`.startsWith(q)) {
      found.push({ kind: 'notebook', ref, label: baseName(ref), detail: ref });
    }
    if (nb.path !== active) {
      continue; // cells of the notebook the user is in
    }
    nb.cells.forEach((cell, index) => {
      const line = firstLine(cell.source);
      if (cell.id.toLowerCase().startsWith(q) || line.toLowerCase().includes(q) || `cell${index + 1}`.startsWith(q)) {
        found.push({ kind: 'cell', ref: cell.id, notebook_path: nb.path, label: `cell${index + 1}`, detail: line || `(${cell.type})` });
      }
    });
  }
  return found;
}

/** What a mention may name, asked as the user types. */
export class MentionSource {
  constructor(
    private readonly client: AgiClient,
    readonly notebooks: () => OpenNotebook[] = () => []
  ) {}

  /** Variables of the active notebook's kernel first, then its cells, the open notebooks,
   * and the project's files; at most `limit`. A part that fails (no kernel) is left out. */
  async candidates(project: string, active: string | null, query: string, limit = 30): Promise<Candidate[]> {
    const ask = (kind: 'file' | 'var'): Promise<Candidate[]> => {
      const q = { project, kind, q: query, limit, ...(kind === 'var' && active ? { notebook_path: active } : {}) };
      return this.client
        .request('get', '/agi/v1/mentions', { query: q })
        .then(list =>
          list.items.map(item =>
            item.kind === 'var'
              ? { kind: 'var' as const, ref: item.ref, notebook_path: active ?? undefined, label: item.ref, detail: `${item.type ?? ''} ${item.detail}`.trim() }
              : { kind: 'file' as const, ref: item.ref, label: item.ref, detail: '' }
          )
        )
        .catch(() => []);
    };
    const [vars, files, listing] = await Promise.all([active ? ask('var') : Promise.resolve([]), ask('file'), this.mcp(project)]);
    const notebooks = notebookCandidates(this.notebooks(), project, active, query);
    const fileRefs = new Set(notebooks.filter(c => c.kind === 'notebook').map(c => c.ref));
    const local = [...vars, ...notebooks, ...files.filter(f => !fileRefs.has(f.ref))];
    const servers = listing ? mcpCandidates(listing, query) : [];
    // The MCP servers' lines keep a share of the list when the project has many files.
    const room = Math.max(limit - servers.length, Math.ceil(limit / 2));
    return [...local.slice(0, room), ...servers].slice(0, limit);
  }

  private listings = new Map<string, { at: number; listing: Promise<McpResourceList | null> }>();

  /** The MCP servers' listing of `project`, asked again after `MCP_FRESH_MS` (null: none). */
  private mcp(project: string): Promise<McpResourceList | null> {
    const held = this.listings.get(project);
    if (held && Date.now() - held.at < MCP_FRESH_MS) {
      return held.listing;
    }
    const listing = this.client.request('get', '/agi/v1/mcp/resources', { query: { project } }).catch(() => null);
    this.listings.set(project, { at: Date.now(), listing });
    return listing;
  }
}

/** How long the MCP servers' listing is reused while the user types mentions. */
export const MCP_FRESH_MS = 30_000;

/** What `openNotebooks` reads of JupyterLab's notebook tracker (structural). */
export interface NotebookTrackerLike {
  forEach(fn: (panel: { context: { path: string }; content: { widgets: readonly { model: { id: string; type: string; sharedModel: { getSource(): string } } }[] } }) => void): void;
}

/** The notebooks open in tabs, with their cells (ids, types, sources). */
export function openNotebooks(tracker: NotebookTrackerLike | null): OpenNotebook[] {
  const found: OpenNotebook[] = [];
  tracker?.forEach(panel => {
    const cells = panel.content.widgets.map(cell => ({ id: cell.model.id, type: cell.model.type, source: cell.model.sharedModel.getSource() }));
    found.push({ path: panel.context.path, cells });
  });
  return found;
}
