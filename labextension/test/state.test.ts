import { describe, expect, it } from 'vitest';

import {
  activeRuns,
  promptPreview,
  initialState,
  reduce,
  sortedRuns,
  visibleBlocks,
  type Action,
  type ChatItem,
  type ChatState,
  type ToolBlock
} from '../src/state';
import { formatContext, shortTokens } from '../src/format';
import { bundle } from '../src/i18n';
import type { WireEvent } from '../src/stream';
import { message, run as runRecord, session, wire } from './fixtures';

const R = 'run_01';

function events(list: WireEvent[]): Action[] {
  return list.map(event => ({ type: 'event', event: wire(event) }));
}

function run(state: ChatState, actions: Action[]): ChatState {
  return actions.reduce(reduce, state);
}

function texts(item: ChatItem | undefined): string {
  return (item?.blocks ?? []).map(b => (b.kind === 'text' ? b.text : '')).join('');
}

function tools(state: ChatState): ToolBlock[] {
  return state.items.flatMap(i => i.blocks.filter((b): b is ToolBlock => b.kind === 'tool'));
}

const userMessage = message({
  id: 'msg_u1',
  session_id: 'ses_1',
  run_id: R,
  role: 'user',
  status: 'complete',
  parts: [{ type: 'text', text: 'list files' }]
});

const assistantTurn1 = message({
  id: 'msg_a1',
  session_id: 'ses_1',
  run_id: R,
  role: 'assistant',
  status: 'complete',
  meta: { provider: 'fake', model: 'echo', usage: { input_tokens: 10, output_tokens: 4 } },
  parts: [
    { type: 'text', text: 'Let me look.' },
    { type: 'tool_call', tool_call_id: 'call_1', name: 'fs.list', arguments: { path: '.' } }
  ]
});

const toolMessage = message({
  id: 'msg_t1',
  session_id: 'ses_1',
  run_id: R,
  role: 'tool',
  status: 'complete',
  parts: [{ type: 'tool_result', tool_call_id: 'call_1', name: 'fs.list', output: 'a.txt\nb.txt' }]
});

const assistantTurn2 = message({
  id: 'msg_a2',
  session_id: 'ses_1',
  run_id: R,
  role: 'assistant',
  status: 'complete',
  meta: { provider: 'fake', model: 'echo', usage: { input_tokens: 20, output_tokens: 5 } },
  parts: [{ type: 'text', text: 'Two files.' }]
});

/** The events of a run with one tool call, as the runner emits them. */
const RUN_EVENTS: WireEvent[] = [
  { type: 'run.meta', run_id: R, seq: 1, session_id: 'ses_1', agent: 'build', provider: 'fake', model: 'echo' },
  { type: 'run.status', run_id: R, seq: 2, status: 'running' },
  { type: 'message.completed', run_id: R, seq: 3, message: userMessage },
  { type: 'iteration', run_id: R, seq: 4, iteration: 1, max_iterations: 10 },
  { type: 'output.text.delta', run_id: R, seq: 5, delta: 'Let me ' },
  { type: 'output.text.delta', run_id: R, seq: 6, delta: 'look.' },
  { type: 'output.text.done', run_id: R, seq: 7, text: 'Let me look.' },
  { type: 'tool.call.started', run_id: R, seq: 8, tool_call_id: 'call_1', name: 'fs.list' },
  { type: 'tool.call.arguments.delta', run_id: R, seq: 9, tool_call_id: 'call_1', delta: '{"path":' },
  { type: 'tool.call.arguments.done', run_id: R, seq: 10, tool_call_id: 'call_1', arguments: { path: '.' } },
  { type: 'message.completed', run_id: R, seq: 11, message: assistantTurn1 },
  { type: 'usage', run_id: R, seq: 12, input_tokens: 10, output_tokens: 4, cost_usd: 0.001 },
  { type: 'tool.call.delta', run_id: R, seq: 13, tool_call_id: 'call_1', channel: 'stdout', chunk: 'a.txt\n' },
  {
    type: 'tool.call.output',
    run_id: R,
    seq: 14,
    tool_call_id: 'call_1',
    name: 'fs.list',
    ok: true,
    output: 'a.txt\nb.txt',
    status: 'completed'
  },
  { type: 'iteration', run_id: R, seq: 15, iteration: 2, max_iterations: 10 },
  { type: 'output.text.delta', run_id: R, seq: 16, delta: 'Two files.' },
  { type: 'output.text.done', run_id: R, seq: 17, text: 'Two files.' },
  { type: 'message.completed', run_id: R, seq: 18, message: assistantTurn2 },
  { type: 'usage', run_id: R, seq: 19, input_tokens: 20, output_tokens: 5, cost_usd: 0.002 },
  { type: 'run.status', run_id: R, seq: 20, status: 'succeeded' },
  { type: 'run.final', run_id: R, seq: 21, run: runRecord({ id: R, session_id: 'ses_1', status: 'succeeded', cost_usd: 0.003 }) }
];

describe('a streamed run', () => {
  it('builds the transcript: user, streamed text, tool block, answer', () => {
    const pending: Action = { type: 'pending', key: 'pending:1', text: 'list files' };
    const state = run(initialState(), [pending, ...events(RUN_EVENTS)]);
    expect(state.items.map(i => [i.key, i.role, i.status])).toEqual([
      ['msg_u1', 'user', 'complete'],
      ['msg_a1', 'assistant', 'complete'],
      ['msg_a2', 'assistant', 'complete']
    ]);
    expect(texts(state.items[1])).toBe('Let me look.');
    const [tool] = tools(state);
    expect(tool).toMatchObject({
      name: 'fs.list',
      arguments: { path: '.' },
      status: 'completed',
      ok: true,
      output: 'a.txt\nb.txt',
      live: 'a.txt\n'
    });
    expect(state.items[1]).toMatchObject({ model: 'echo', inputTokens: 10, outputTokens: 4, costUsd: 0.001 });
    expect(state.items[2]).toMatchObject({ inputTokens: 20, outputTokens: 5, costUsd: 0.002 });
    expect(state.runs[R]).toMatchObject({ status: 'succeeded', lastSeq: 21, inputTokens: 30, outputTokens: 9 });
    expect(activeRuns(state)).toEqual([]);
  });

  it('shows partial state while streaming', () => {
    const state = run(initialState(), events(RUN_EVENTS.slice(0, 9)));
    const draft = state.items[1];
    expect(draft).toMatchObject({ key: `draft:${R}`, status: 'streaming', model: 'echo' });
    expect(texts(draft)).toBe('Let me look.');
    expect(tools(state)[0]).toMatchObject({ status: 'streaming', argumentsText: '{"path":', arguments: null });
    expect(activeRuns(state).map(r => r.id)).toEqual([R]);
    expect(state.runs[R]?.iteration).toBe(1);
  });

  it('ignores events already applied (a second stream, a replay)', () => {
    const once = run(initialState(), events(RUN_EVENTS));
    const twice = run(once, events(RUN_EVENTS));
    expect(twice).toEqual(once);
    const interleaved = run(
      initialState(),
      RUN_EVENTS.flatMap(e => events([e, e]))
    );
    expect(interleaved.items).toEqual(once.items);
  });

  it('rebuilds the same transcript from history plus a replay after a reload', () => {
    const live = run(initialState(), events(RUN_EVENTS));
    const reloaded = run(initialState(), [
      { type: 'history', messages: [userMessage, assistantTurn1, toolMessage, assistantTurn2] },
      ...events(RUN_EVENTS.filter(e => !e.type.endsWith('.delta')))
    ]);
    expect(reloaded.items.map(i => i.key)).toEqual(live.items.map(i => i.key));
    expect(reloaded.items.map(texts)).toEqual(live.items.map(texts));
    expect(tools(reloaded)[0]).toMatchObject({ status: 'completed', output: 'a.txt\nb.txt' });
  });

  it('resumes a running run after a reload without duplicating stored messages', () => {
    // History has the user message and the first turn; the replay (after_seq=0) covers them too.
    const state = run(initialState(), [
      { type: 'history', messages: [userMessage, assistantTurn1, toolMessage] },
      ...events(RUN_EVENTS.slice(0, 15).filter(e => !e.type.endsWith('.delta'))),
      ...events([{ type: 'output.text.delta', run_id: R, seq: 16, delta: 'Two' }])
    ]);
    expect(state.items.map(i => i.key)).toEqual(['msg_u1', 'msg_a1', `draft:${R}`]);
    expect(texts(state.items[2])).toBe('Two');
    expect(tools(state)).toHaveLength(1);
  });
});

describe('stopping and failing', () => {
  it('keeps the partial answer of a cancelled run, marked cancelled', () => {
    const state = run(
      initialState(),
      events([
        ...RUN_EVENTS.slice(0, 5),
        { type: 'run.status', run_id: R, seq: 6, status: 'cancelled' },
        { type: 'error', run_id: R, seq: 7, code: 'RUN_CANCELLED', message: 'the run was cancelled' },
        { type: 'run.final', run_id: R, seq: 8, run: runRecord({ id: R, session_id: 'ses_1', status: 'cancelled' }) }
      ])
    );
    expect(state.runs[R]?.status).toBe('cancelled');
    const last = state.items[state.items.length - 1] as ChatItem;
    expect(texts(last)).toBe('Let me ');
    expect(last.status).toBe('cancelled');
    expect(last.blocks.some(b => b.kind === 'error')).toBe(true);
    expect(activeRuns(state)).toEqual([]);
  });

  it('marks a draft open at run.final as cancelled', () => {
    const state = run(
      initialState(),
      events([
        ...RUN_EVENTS.slice(0, 5),
        { type: 'run.final', run_id: R, seq: 6, run: runRecord({ id: R, session_id: 'ses_1', status: 'cancelled' }) }
      ])
    );
    expect(state.items[1]).toMatchObject({ key: `partial:${R}`, status: 'cancelled' });
  });

  it('closes the draft on a retryable error so the retry streams into a new one', () => {
    const state = run(
      initialState(),
      events([
        ...RUN_EVENTS.slice(0, 5),
        { type: 'error', run_id: R, seq: 6, code: 'PROVIDER_ERROR', message: 'dropped', retryable: true },
        { type: 'run.status', run_id: R, seq: 7, status: 'queued' },
        { type: 'run.meta', run_id: R, seq: 8, session_id: 'ses_1', agent: 'build', provider: 'fake', model: 'echo', attempt: 2 },
        { type: 'run.status', run_id: R, seq: 9, status: 'running' },
        { type: 'output.text.delta', run_id: R, seq: 10, delta: 'Again' }
      ])
    );
    expect(state.items.map(i => i.status)).toEqual(['complete', 'error', 'streaming']);
    expect(texts(state.items[2])).toBe('Again');
    expect(state.items[1]?.blocks.find(b => b.kind === 'error')).toMatchObject({
      code: 'PROVIDER_ERROR',
      message: 'dropped (retrying)'
    });
  });

  it('takes back the text a retried attempt discards (output.text.reset)', () => {
    const state = run(
      initialState(),
      events([
        ...RUN_EVENTS.slice(0, 5),
        { type: 'reasoning.delta', run_id: R, seq: 6, delta: 'hmm' },
        { type: 'output.text.delta', run_id: R, seq: 7, delta: 'again' },
        { type: 'error', run_id: R, seq: 8, code: 'PROVIDER_ERROR', message: 'dropped', retryable: true },
        { type: 'output.text.reset', run_id: R, seq: 9, attempt: 2, discarded_chars: 12, discarded_reasoning_chars: 3 },
        { type: 'run.status', run_id: R, seq: 10, status: 'queued' },
        { type: 'run.status', run_id: R, seq: 11, status: 'running' },
        { type: 'output.text.delta', run_id: R, seq: 12, delta: 'The answer' }
      ])
    );
    expect(state.items.map(i => i.status)).toEqual(['complete', 'error', 'streaming']);
    expect(texts(state.items[1])).toBe('');
    expect(state.items[1]?.blocks.map(b => b.kind)).toEqual(['error']);
    expect(texts(state.items[2])).toBe('The answer');
  });

  it('takes back only what the reset discards from an open draft', () => {
    const state = run(
      initialState(),
      events([
        ...RUN_EVENTS.slice(0, 6),
        { type: 'output.text.reset', run_id: R, seq: 7, attempt: 2, discarded_chars: 5 }
      ])
    );
    expect(texts(state.items[1])).toBe('Let me ');
    expect(state.items[1]?.status).toBe('streaming');
  });

  it('keeps an unknown cost unknown, marks a truncated answer and shows a notice', () => {
    const truncated = message({
      id: 'msg_t',
      session_id: 'ses_1',
      run_id: R,
      role: 'assistant',
      parts: [{ type: 'text', text: 'cut' }],
      meta: { cost_usd: null, truncated: true, context_full: true, context_window: 512, context_tokens: 512 }
    });
    const state = run(
      initialState(),
      events([
        ...RUN_EVENTS.slice(0, 4),
        { type: 'notice', run_id: R, seq: 5, code: 'TOOLS_UNSUPPORTED', message: 'compat:q cannot take tools' },
        { type: 'output.text.delta', run_id: R, seq: 6, delta: 'cut' },
        { type: 'message.completed', run_id: R, seq: 7, message: truncated },
        { type: 'usage', run_id: R, seq: 8, input_tokens: 500, output_tokens: 12, cost_usd: null }
      ])
    );
    expect(state.runs[R]?.costUsd).toBeNull();
    const answer = state.items.find(i => i.messageId === 'msg_t') as ChatItem;
    expect(answer.costUnknown).toBe(true);
    expect(answer.stop).toBe('truncated: the context window is full (512 of 512 tokens)');
    const notice = state.items.find(i => i.key.startsWith('notice:')) as ChatItem;
    expect(notice.blocks).toEqual([{ kind: 'notice', code: 'TOOLS_UNSUPPORTED', message: 'compat:q cannot take tools' }]);
    expect(visibleBlocks(notice, 'simple')).toEqual(notice.blocks);
  });

  it('keeps the context gauge of the last request and marks a compaction', () => {
    const state = run(
      initialState(),
      events([
        ...RUN_EVENTS.slice(0, 4),
        {
          type: 'context.compacted',
          run_id: R,
          seq: 5,
          compaction_id: 'cmp_1',
          message_count: 12,
          through_message_id: 'msg_x',
          input_tokens: 900,
          output_tokens: 80,
          cost_usd: null
        },
        {
          type: 'usage',
          run_id: R,
          seq: 6,
          input_tokens: 3085,
          output_tokens: 12,
          cost_usd: 0.001,
          cached_input_tokens: 0,
          context_tokens: 3085,
          context_window: 8000,
          compacts_at: 6000
        }
      ])
    );
    expect(state.runs[R]?.context).toEqual({ tokens: 3085, window: 8000, compactsAt: 6000 });
    expect(formatContext(state.runs[R]?.context ?? null, bundle())).toEqual({
      short: 'context 3.1k / 8k',
      full: 'context 3,085 / 8,000 tokens · compacts at 6,000'
    });
    expect([950, 3546, 128_000, 1_000_000, 1_500_000].map(shortTokens)).toEqual([
      '950',
      '3.5k',
      '128k',
      '1M',
      '1.5M'
    ]);
    const notice = state.items.find(i => i.key.startsWith('notice:')) as ChatItem;
    expect(notice.blocks).toEqual([
      {
        kind: 'notice',
        code: 'CONTEXT_COMPACTED',
        message: '12 earlier messages compacted into a summary the model reads instead'
      }
    ]);
    const plain = run(initialState(), events(RUN_EVENTS)); // usage without a gauge (an SDK run)
    expect(plain.runs[R]?.context).toBeNull();
    expect(formatContext(null, bundle())).toBeNull();
  });

  it('marks in the history where a compaction folded older messages', () => {
    const compaction = {
      id: 'cmp_1',
      session_id: 'ses_1',
      first_message_id: 'msg_u1',
      through_message_id: 'msg_a1',
      message_count: 2,
      summary: 'The user asked; the agent listed.',
      run_id: R,
      provider: 'fake',
      model: 'echo',
      input_tokens: 30,
      output_tokens: 8,
      cost_usd: null,
      created_at: '2026-11-27T00:00:00.000Z'
    };
    const state = reduce(initialState(), {
      type: 'history',
      messages: [userMessage, assistantTurn1, toolMessage, assistantTurn2],
      compactions: [compaction]
    });
    const keys = state.items.map(i => i.messageId ?? i.key);
    expect(keys.indexOf('compaction:cmp_1')).toBe(keys.indexOf('msg_a1') + 1);
    const mark = state.items.find(i => i.key === 'compaction:cmp_1') as ChatItem;
    expect(mark.blocks).toEqual([
      { kind: 'notice', code: 'CONTEXT_COMPACTED', message: '2 earlier messages compacted into a summary the model reads instead' }
    ]);
    expect(visibleBlocks(mark, 'simple')).toEqual(mark.blocks);
  });

  it('shows an error of a run with no draft as its own item', () => {
    const state = run(
      initialState(),
      events([{ type: 'error', run_id: R, seq: 1, code: 'PROVIDER_NOT_CONFIGURED', message: 'set OPENAI_API_KEY' }])
    );
    expect(state.items[0]).toMatchObject({ role: 'assistant', status: 'error' });
  });

  it('keeps what each budget spent, and the error of a run its budget stopped', () => {
    const budget = { type: 'budget' as const, run_id: R, scope: 'session', max_tokens: 100, max_usd: null };
    const state = run(
      initialState(),
      events([
        ...RUN_EVENTS.slice(0, 5),
        { ...budget, seq: 6, spent_tokens: 60, spent_usd: 0, remaining_tokens: 40 },
        { ...budget, scope: 'notebook', notebook_path: 'a.ipynb', max_tokens: null, max_usd: 2, seq: 7, spent_usd: 0.5 },
        { ...budget, seq: 8, spent_tokens: 60, spent_usd: 0, remaining_tokens: 40, exceeded: true },
        { type: 'error', run_id: R, seq: 9, code: 'BUDGET_EXCEEDED', message: 'session budget: 60/100 tokens' }
      ])
    );
    expect(state.runs[R]?.budgets).toEqual({
      session: 'session budget: 60/100 tokens',
      notebook: 'notebook a.ipynb budget: $0.5000/$2'
    });
    expect(state.items[1]?.blocks.find(b => b.kind === 'error')).toMatchObject({ code: 'BUDGET_EXCEEDED' });
  });

  it('keeps the budget question a run waits on until a later budget event answers it', () => {
    const budget = { type: 'budget' as const, run_id: R, scope: 'session', max_tokens: 100, max_usd: null };
    const asked = run(
      initialState(),
      events([
        ...RUN_EVENTS.slice(0, 5),
        { ...budget, seq: 6, spent_tokens: 60, spent_usd: 0, exceeded: true, asking: true, reason: 'too big' },
        { type: 'run.status', run_id: R, seq: 7, status: 'waiting_approval' }
      ])
    );
    expect(asked.runs[R]?.budgetAsk).toBe('session budget: 60/100 tokens: too big');
    expect(asked.runs[R]?.status).toBe('waiting_approval');
    const answered = reduce(asked, {
      type: 'event',
      event: wire({ ...budget, max_tokens: 1000, seq: 8, spent_tokens: 135, spent_usd: 0 })
    });
    expect(answered.runs[R]?.budgetAsk).toBeNull();
  });

  it('never moves a run back from an ended status', () => {
    let state = run(initialState(), events([{ type: 'run.status', run_id: R, seq: 1, status: 'cancelled' }]));
    state = reduce(state, { type: 'event', event: wire({ type: 'run.status', run_id: R, seq: 2, status: 'running' }) });
    state = reduce(state, { type: 'run', run: runRecord({ id: R, session_id: 's', status: 'running' }) });
    expect(state.runs[R]?.status).toBe('cancelled');
  });

  it('removes a pending message whose request failed', () => {
    const state = run(initialState(), [
      { type: 'pending', key: 'pending:1', text: 'hi' },
      { type: 'pending.failed', key: 'pending:1' }
    ]);
    expect(state.items).toEqual([]);
  });
});

describe('provider-hosted tools', () => {
  const searched = message({
    ...assistantTurn2,
    id: 'msg_h1',
    parts: [
      {
        type: 'hosted_tool',
        tool_call_id: 'ws_1',
        name: 'web_search',
        api: 'responses',
        input: { type: 'search', query: 'jupyter' },
        output: 'https://jupyter.org',
        is_error: false,
        echo: []
      },
      { type: 'text', text: 'Found it.' }
    ]
  });

  it('shows a streamed hosted call as a completed tool row run by the provider', () => {
    const state = run(
      initialState(),
      events([
        { type: 'iteration', run_id: R, seq: 1, iteration: 1, max_iterations: 10 },
        { type: 'tool.call.started', run_id: R, seq: 2, tool_call_id: 'ws_1', name: 'web_search', tool_type: 'hosted' },
        { type: 'tool.call.arguments.done', run_id: R, seq: 3, tool_call_id: 'ws_1', arguments: { query: 'jupyter' } },
        {
          type: 'tool.call.output',
          run_id: R,
          seq: 4,
          tool_call_id: 'ws_1',
          name: 'web_search',
          ok: true,
          output: 'https://jupyter.org',
          status: 'completed'
        }
      ])
    );
    expect(tools(state)[0]).toMatchObject({ name: 'web_search', hosted: true, status: 'completed', ok: true });
  });

  it('shows a stored hosted call from history with its input and output', () => {
    const state = reduce(initialState(), { type: 'history', messages: [searched] });
    expect(tools(state)[0]).toMatchObject({
      name: 'web_search',
      hosted: true,
      arguments: { type: 'search', query: 'jupyter' },
      output: 'https://jupyter.org',
      status: 'completed'
    });
    expect(texts(state.items[0])).toBe('Found it.');
  });
});

describe('history', () => {
  it('merges tool results into the blocks of their calls and hides tool messages', () => {
    const state = reduce(initialState(), {
      type: 'history',
      messages: [userMessage, assistantTurn1, toolMessage, assistantTurn2]
    });
    expect(state.items.map(i => i.key)).toEqual(['msg_u1', 'msg_a1', 'msg_a2']);
    expect(tools(state)[0]).toMatchObject({ output: 'a.txt\nb.txt', ok: true, status: 'completed' });
  });

  it('shows a tool result without its call as a tool item, errors as failed', () => {
    const orphan = message({
      ...toolMessage,
      id: 'msg_t9',
      parts: [{ type: 'tool_result', tool_call_id: 'call_9', name: 'shell.run', output: 'boom', is_error: true }]
    });
    const state = reduce(initialState(), { type: 'history', messages: [orphan] });
    expect(state.items[0]?.role).toBe('tool');
    expect(tools(state)[0]).toMatchObject({ status: 'failed', ok: false, output: 'boom' });
  });

  it('shows a stored partial answer as cut short and cancelled tool calls as cancelled', () => {
    const partial = message({
      ...assistantTurn2,
      id: 'msg_p1',
      status: 'error',
      meta: { provider: 'fake', model: 'echo', partial: true },
      parts: [{ type: 'text', text: 'Two fi' }]
    });
    const cancelled = message({
      ...toolMessage,
      parts: [
        { type: 'tool_result', tool_call_id: 'call_1', name: 'fs.list', output: 'cancelled', is_error: true, status: 'cancelled' }
      ]
    });
    const state = reduce(initialState(), {
      type: 'history',
      messages: [userMessage, assistantTurn1, cancelled, partial]
    });
    expect(tools(state)[0]).toMatchObject({ status: 'cancelled', ok: false });
    const last = state.items[state.items.length - 1] as ChatItem;
    expect([texts(last), last.status]).toEqual(['Two fi', 'cancelled']);
    // the same message arriving live (message.completed) replaces the draft the same way
    const live = run(
      initialState(),
      events([
        ...RUN_EVENTS.slice(0, 11),
        { type: 'message.completed', run_id: R, seq: 12, message: cancelled },
        { type: 'iteration', run_id: R, seq: 13, iteration: 2, max_iterations: 10 },
        { type: 'output.text.delta', run_id: R, seq: 14, delta: 'Two fi' },
        { type: 'message.completed', run_id: R, seq: 15, message: partial },
        { type: 'run.final', run_id: R, seq: 16, run: runRecord({ id: R, session_id: 'ses_1', status: 'cancelled' }) }
      ])
    );
    expect(tools(live)[0]).toMatchObject({ status: 'cancelled' });
    const lastLive = live.items[live.items.length - 1] as ChatItem;
    expect([texts(lastLive), lastLive.status]).toEqual(['Two fi', 'cancelled']);
  });

  it('keeps the draft of a run still going when the history is reloaded', () => {
    let state = run(initialState(), events(RUN_EVENTS.slice(0, 6)));
    state = reduce(state, { type: 'history', messages: [userMessage] });
    expect(state.items.map(i => i.key)).toEqual(['msg_u1', `draft:${R}`]);
  });

  it('reads model, tokens and cost from message meta', () => {
    const state = reduce(initialState(), {
      type: 'history',
      messages: [{ ...assistantTurn2, meta: { model: 'gpt-5', usage: { input_tokens: 1, output_tokens: 2 }, cost_usd: 0.5 } }]
    });
    expect(state.items[0]).toMatchObject({ model: 'gpt-5', inputTokens: 1, outputTokens: 2, costUsd: 0.5 });
  });

  it('renders artifact refs, reasoning, errors and images as blocks', () => {
    const mixed = message({
      id: 'msg_x',
      session_id: 's',
      role: 'assistant',
      parts: [
        { type: 'reasoning', text: 'thinking' },
        { type: 'artifact_ref', artifact_id: 'art_1', kind: 'deep_research_report', title: 'Report' },
        { type: 'error', code: 'E', message: 'bad' },
        { type: 'image', mime: 'image/png', data_base64: 'AAA', url: null }
      ]
    });
    const state = reduce(initialState(), { type: 'history', messages: [mixed] });
    expect(state.items[0]?.blocks.map(b => b.kind)).toEqual(['reasoning', 'artifact', 'error', 'image']);
  });
});

describe('session stream', () => {
  it('adds messages and runs that started elsewhere (a notebook)', () => {
    const other = 'run_02';
    const state = run(initialState(), [
      ...events([
        { type: 'message.created', message: { ...userMessage, id: 'msg_nb', run_id: other } },
        { type: 'run.meta', run_id: other, seq: 1, session_id: 'ses_1', agent: 'general', provider: 'fake', model: 'echo' },
        { type: 'run.status', run_id: other, seq: 2, status: 'running' }
      ])
    ]);
    expect(state.items.map(i => i.key)).toEqual(['msg_nb']);
    expect(state.runs[other]).toMatchObject({ status: 'running', model: 'echo' });
  });

  it('fills tool results from a tool message.created', () => {
    const state = run(initialState(), [
      { type: 'history', messages: [assistantTurn1] },
      { type: 'event', event: wire({ type: 'message.created', message: toolMessage }) }
    ]);
    expect(state.items).toHaveLength(1);
    expect(tools(state)[0]).toMatchObject({ output: 'a.txt\nb.txt', status: 'completed' });
  });

  it('updates the session', () => {
    const state = reduce(initialState(), {
      type: 'event',
      event: wire({ type: 'session.updated', session: session({ id: 'ses_1', agent: 'plan', title: 'T' }) })
    });
    expect(state.session?.title).toBe('T');
  });
});

describe('runs and views', () => {
  it('sorts runs newest first and merges listings', () => {
    const state = reduce(initialState(), {
      type: 'runs',
      runs: [
        runRecord({ id: 'run_a', session_id: 's', status: 'succeeded', model: 'm', cost_usd: 0.1 }),
        runRecord({ id: 'run_c', session_id: 's', status: 'running', notebook_path: 'nb.ipynb', execution_mode: 'kernel' }),
        runRecord({ id: 'run_b', session_id: 's', status: 'failed', error: { code: 'X', message: 'broke' } })
      ]
    });
    expect(sortedRuns(state).map(r => r.id)).toEqual(['run_c', 'run_b', 'run_a']);
    expect(state.runs.run_b?.error).toBe('broke');
    expect(state.runs.run_c).toMatchObject({ notebookPath: 'nb.ipynb', executionMode: 'kernel' });
    expect(activeRuns(state).map(r => r.id)).toEqual(['run_c']);
  });

  it('simple view keeps user/assistant text and errors only', () => {
    const state = run(initialState(), events(RUN_EVENTS));
    const assistant = state.items[1] as ChatItem;
    expect(visibleBlocks(assistant, 'full')).toHaveLength(2);
    expect(visibleBlocks(assistant, 'simple')?.map(b => b.kind)).toEqual(['text']);
    const toolOnly: ChatItem = { ...assistant, blocks: assistant.blocks.filter(b => b.kind === 'tool') };
    expect(visibleBlocks(toolOnly, 'simple')).toBeNull();
    expect(visibleBlocks({ ...assistant, role: 'tool' }, 'simple')).toBeNull();
  });
});

describe('tool calls after a reload', () => {
  it('shows a denied call as denied, from the status its stored result keeps', () => {
    const call = message({
      id: 'msg_c',
      run_id: R,
      role: 'assistant',
      parts: [{ type: 'tool_call', tool_call_id: 'call_d', name: 'shell.run', arguments: { command: 'ls' } }]
    });
    const refused = message({
      id: 'msg_r',
      run_id: R,
      role: 'tool',
      parts: [
        {
          type: 'tool_result',
          tool_call_id: 'call_d',
          name: 'shell.run',
          output: 'the agent may not use shell.run',
          is_error: true,
          status: 'denied'
        }
      ]
    });
    const state = reduce(initialState(), { type: 'history', messages: [call, refused] });
    expect(tools(state)[0]).toMatchObject({ status: 'denied', ok: false });
  });
});

describe('runs', () => {
  it('previews the prompt a run answers: its user message, or its queued input', () => {
    let state = run(initialState(), events(RUN_EVENTS));
    const queued = runRecord({ id: 'run_q', loop_state: { input: [{ type: 'text', text: 'second question\nmore' }] } });
    state = reduce(state, { type: 'run', run: queued });
    expect(promptPreview(state, state.runs[R]!)).toBe('list files');
    expect(promptPreview(state, state.runs.run_q!)).toBe('second question');
  });

  it("records a run's own agent from run.meta", () => {
    const state = run(initialState(), events(RUN_EVENTS.slice(0, 1)));
    expect(state.runs[R]?.agent).toBe('build');
  });
});

describe('approvals', () => {
  it('marks a call waiting for a person, then running once approved and denied with its output', () => {
    const asked: WireEvent[] = [
      ...RUN_EVENTS.slice(0, 12),
      {
        type: 'approval.requested',
        run_id: R,
        seq: 13,
        tool_call_id: 'call_1',
        name: 'fs.list',
        arguments: { path: '.' },
        review_mode: 'ask'
      },
      { type: 'run.status', run_id: R, seq: 14, status: 'waiting_approval' }
    ];
    const waiting = run(initialState(), events(asked));
    expect(tools(waiting)[0]).toMatchObject({ status: 'waiting_approval', arguments: { path: '.' } });
    expect(waiting.runs[R]?.status).toBe('waiting_approval');

    const approved = run(
      waiting,
      events([
        { type: 'approval.decided', run_id: R, seq: 1015, tool_call_id: 'call_1', name: 'fs.list', decision: 'approve', message: null, door: 'cell', by: 'bob' }
      ])
    );
    expect(tools(approved)[0]).toMatchObject({ status: 'running', decided: { decision: 'approve', door: 'cell', by: 'bob' } });

    const denied = run(
      waiting,
      events([
        { type: 'approval.decided', run_id: R, seq: 1015, tool_call_id: 'call_1', name: 'fs.list', decision: 'deny', message: 'no' },
        { type: 'tool.call.output', run_id: R, seq: 1016, tool_call_id: 'call_1', name: 'fs.list', ok: false, output: 'A person denied this tool call', status: 'denied' }
      ])
    );
    expect(tools(denied)[0]).toMatchObject({ status: 'denied', ok: false, decided: { decision: 'deny', door: null, by: null } });
  });
});
