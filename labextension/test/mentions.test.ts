import { describe, expect, it } from 'vitest';

import { AgiClient, type Transport } from '../src/api';
import {
  inProject,
  type McpResourceList,
  mcpCandidates,
  type Mention,
  mentionAt,
  MentionSource,
  mentionsToSend,
  notebookCandidates,
  openNotebooks,
  pick,
  withHeadings
} from '../src/mentions';

const NOTEBOOK = {
  path: 'work/analysis.ipynb',
  cells: [
    { id: 'c-load', type: 'code', source: '\nimport pandas as pd\ndf = pd.read_csv("x.csv")' },
    { id: 'c-notes', type: 'markdown', source: '# Prices by city' }
  ]
};

describe('mentionAt', () => {
  it('finds the @ being typed at the caret', () => {
    expect(mentionAt('explain @d', 10)).toEqual({ start: 8, query: 'd' });
    expect(mentionAt('@', 1)).toEqual({ start: 0, query: '' });
    expect(mentionAt('see (@notes.md', 14)).toEqual({ start: 5, query: 'notes.md' });
  });

  it('ignores an @ inside a word, after a space, or before the caret', () => {
    expect(mentionAt('mail me@example.com', 19)).toBeNull();
    expect(mentionAt('@df and more', 12)).toBeNull();
    expect(mentionAt('plain text', 10)).toBeNull();
    expect(mentionAt('@df rest', 3)).toEqual({ start: 0, query: 'df' });
  });
});

describe('pick and mentionsToSend', () => {
  const df: Mention = { kind: 'var', ref: 'df', notebook_path: 'work/analysis.ipynb', label: 'df' };

  it('replaces the typed mention with its label and puts the caret after it', () => {
    const typed = mentionAt('mean of @d please', 10);
    expect(typed).not.toBeNull();
    const next = pick('mean of @d please', 10, typed!, df);
    expect(next).toEqual({ text: 'mean of @df please', caret: 12 });
  });

  it('sends each mention still written, once, with its notebook', () => {
    const file: Mention = { kind: 'file', ref: 'data/notes.md', label: 'data/notes.md' };
    const gone: Mention = { kind: 'file', ref: 'old.txt', label: 'old.txt' };
    expect(mentionsToSend('compare @df with @data/notes.md and @df', [df, file, gone, df])).toEqual([
      { kind: 'var', ref: 'df', notebook_path: 'work/analysis.ipynb' },
      { kind: 'file', ref: 'data/notes.md' }
    ]);
  });
});

describe('notebook candidates', () => {
  it('offers the open notebooks, and the cells of the active one by their first line', () => {
    const found = notebookCandidates([NOTEBOOK], 'work', 'work/analysis.ipynb', '');
    expect(found.map(c => [c.kind, c.ref, c.label, c.detail])).toEqual([
      ['notebook', 'analysis.ipynb', 'analysis.ipynb', 'analysis.ipynb'],
      ['cell', 'c-load', 'cell1', 'import pandas as pd'],
      ['cell', 'c-notes', 'cell2', '# Prices by city']
    ]);
    expect(found[1]?.notebook_path).toBe('work/analysis.ipynb');
    expect(notebookCandidates([NOTEBOOK], 'work', 'work/analysis.ipynb', 'price').map(c => c.ref)).toEqual(['c-notes']);
    expect(notebookCandidates([NOTEBOOK], 'work', null, '').map(c => c.kind)).toEqual(['notebook']);
  });

  it('reads the tracker’s notebooks and paths relative to the project', () => {
    const widgets = NOTEBOOK.cells.map(c => ({ model: { id: c.id, type: c.type, sharedModel: { getSource: () => c.source } } }));
    const tracker = { forEach: (fn: (panel: never) => void) => fn({ context: { path: NOTEBOOK.path }, content: { widgets } } as never) };
    expect(openNotebooks(tracker)).toEqual([NOTEBOOK]);
    expect(openNotebooks(null)).toEqual([]);
    expect(inProject('work/a/b.py', 'work')).toBe('a/b.py');
    expect(inProject('other/b.py', 'work')).toBe('other/b.py');
  });
});

describe('MentionSource', () => {
  it('asks the kernel’s variables and the files, variables first, and keeps going without a kernel', async () => {
    const asked: string[] = [];
    const transport: Transport = async path => {
      asked.push(path);
      if (path.includes('/mcp/resources')) {
        return new Response(JSON.stringify({ servers: [] }), { status: 200, headers: { 'Content-Type': 'application/json' } });
      }
      const kind = new URL(path, 'http://x/').searchParams.get('kind');
      if (kind === 'var') {
        const items = [{ kind: 'var', ref: 'df', type: 'pandas.DataFrame', detail: 'shape (3, 2)' }];
        return new Response(JSON.stringify({ items }), { status: 200, headers: { 'Content-Type': 'application/json' } });
      }
      const items = [
        { kind: 'file', ref: 'analysis.ipynb', type: null, detail: '' },
        { kind: 'file', ref: 'notes.md', type: null, detail: '' }
      ];
      return new Response(JSON.stringify({ items }), { status: 200, headers: { 'Content-Type': 'application/json' } });
    };
    const source = new MentionSource(new AgiClient(transport), () => [NOTEBOOK]);
    const found = await source.candidates('work', 'work/analysis.ipynb', '');
    expect(found.map(c => `${c.kind}:${c.ref}`)).toEqual([
      'var:df',
      'notebook:analysis.ipynb',
      'cell:c-load',
      'cell:c-notes',
      'file:notes.md'
    ]);
    expect(found[0]).toMatchObject({ notebook_path: 'work/analysis.ipynb', detail: 'pandas.DataFrame shape (3, 2)' });
    expect(asked.some(p => p.includes('kind=var') && p.includes('notebook_path=work%2Fanalysis.ipynb'))).toBe(true);

    const failing: Transport = async () => new Response('{"error":{"code":"NO_KERNEL","message":"no kernel"}}', { status: 400 });
    expect(await new MentionSource(new AgiClient(failing)).candidates('', 'a.ipynb', 'x')).toEqual([]);
  });
});

const LISTING: McpResourceList = {
  servers: [
    {
      name: 'feat',
      state: 'running',
      error: null,
      resources: [
        { uri: 'memo://readme', name: 'readme', title: null, description: 'What this server is', mime_type: 'text/plain' },
        { uri: 'memo://logo', name: 'the logo', title: null, description: null, mime_type: 'image/png' }
      ],
      templates: [{ uri_template: 'memo://notes/{day}', name: 'notes', title: null, description: null, mime_type: null }],
      prompts: [
        { name: 'review', title: null, description: 'Review a file', arguments: [{ name: 'path', description: null, required: true }], mentionable: false },
        { name: 'greeting', title: null, description: 'Greet the team', arguments: [], mentionable: true }
      ]
    },
    { name: 'git', state: 'running', error: null, resources: [{ uri: 'git://log', name: 'log', title: null, description: null, mime_type: null }], templates: [], prompts: [] },
    { name: 'broken', state: 'failed', error: 'it exited', resources: [], templates: [], prompts: [] }
  ]
};

describe('MCP resources and prompts', () => {
  it('offers resources and prompts without required arguments, grouped by server', () => {
    const found = mcpCandidates(LISTING, '');
    expect(found.map(c => [c.group, c.kind, c.server, c.ref, c.label])).toEqual([
      ['MCP · feat', 'resource', 'feat', 'memo://readme', 'feat:readme'],
      ['MCP · feat', 'resource', 'feat', 'memo://logo', 'feat:the_logo'],
      ['MCP · feat', 'prompt', 'feat', 'greeting', 'feat:greeting'],
      ['MCP · git', 'resource', 'git', 'git://log', 'git:log']
    ]);
    expect(mcpCandidates(LISTING, 'READ').map(c => c.ref)).toEqual(['memo://readme']);
    expect(mcpCandidates(LISTING, 'git').map(c => c.ref)).toEqual(['git://log']);
    expect(mcpCandidates(LISTING, 'review')).toEqual([]); // it takes a required argument
  });

  it('heads each server’s run of lines, and keeps the list’s order for the arrow keys', () => {
    const file = { kind: 'file' as const, ref: 'notes.md', label: 'notes.md', detail: '' };
    const lines = withHeadings([file, ...mcpCandidates(LISTING, '')]);
    expect(lines.map(l => ('heading' in l ? `# ${l.heading}` : `${l.index} ${l.candidate.label}`))).toEqual([
      '0 notes.md',
      '# MCP · feat',
      '1 feat:readme',
      '2 feat:the_logo',
      '3 feat:greeting',
      '# MCP · git',
      '4 git:log'
    ]);
  });

  it('sends a picked resource with its server', () => {
    const [readme] = mcpCandidates(LISTING, 'readme');
    expect(mentionsToSend('summarize @feat:readme', [readme!])).toEqual([{ kind: 'resource', ref: 'memo://readme', server: 'feat' }]);
  });

  it('lists them after the project’s own, asking the servers once while the user types', async () => {
    const asked: string[] = [];
    const transport: Transport = async path => {
      asked.push(path);
      const body = path.includes('/mcp/resources') ? LISTING : { items: [{ kind: 'file', ref: 'readme.md', type: null, detail: '' }] };
      return new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json' } });
    };
    const source = new MentionSource(new AgiClient(transport));
    const found = await source.candidates('work', null, 'read');
    expect(found.map(c => `${c.group ?? '-'} ${c.kind}:${c.ref}`)).toEqual(['- file:readme.md', 'MCP · feat resource:memo://readme']);
    await source.candidates('work', null, 'readm');
    expect(asked.filter(p => p.includes('/mcp/resources'))).toHaveLength(1);
    expect(asked.find(p => p.includes('/mcp/resources'))).toContain('project=work');
  });
});
