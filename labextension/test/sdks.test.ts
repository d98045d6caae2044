import { describe, expect, it } from 'vitest';

import { metaLine, sessionLabel } from '../src/format';
import { messageItem } from '../src/items';
import { bundle } from '../src/i18n';
import { sdkBadge, sdkChoice, sdkSelection, type SdkCatalogue } from '../src/sdks';
import { initialState, reduce } from '../src/state';
import type { AgentInfo, SdkInfo } from '../src/types';
import { agent, message, session, wire } from './fixtures';

const trans = bundle();

function sdk(id: string, available: boolean, reason: string | null = null): SdkInfo {
  return {
    id,
    display_name: id === 'native' ? 'Native' : id === 'claude' ? 'Claude Agent SDK' : 'OpenAI Codex',
    capabilities: { queue_while_streaming: id === 'claude', interrupt: true, tool_events: true, full_history: id !== 'codex' },
    available,
    reason
  };
}

const CATALOGUE: SdkCatalogue = {
  default_sdk: 'native',
  sdks: [
    sdk('native', true),
    sdk('claude', true),
    sdk('codex', false, 'the codex CLI is not installed: npm install -g @openai/codex')
  ]
};

const AGENTS: AgentInfo[] = [
  agent({ name: 'build', sdk: null }),
  agent({ name: 'coder', sdk: 'claude' }),
  agent({ name: 'reviewer', sdk: 'codex' }),
  agent({ name: 'legacy', sdk: 'gemini' })
];

describe('sdkSelection', () => {
  it('preselects the default SDK and sends nothing for the default agent', () => {
    const selection = sdkSelection(CATALOGUE, AGENTS, '', null);
    expect(selection.value).toBe('native');
    expect(selection.choices.map(c => [c.id, c.disabled])).toEqual([
      ['native', false],
      ['claude', false],
      ['codex', true]
    ]);
    expect(selection.warning).toBeNull();
    expect(selection.send).toBeUndefined();
  });

  it("preselects the chosen agent's own SDK and sends it", () => {
    expect(sdkSelection(CATALOGUE, AGENTS, 'coder', null)).toMatchObject({ value: 'claude', send: 'claude', warning: null });
    // An agent without an SDK of its own gets the project default, sent explicitly.
    expect(sdkSelection(CATALOGUE, AGENTS, 'build', null)).toMatchObject({ value: 'native', send: 'native' });
    expect(sdkSelection({ ...CATALOGUE, default_sdk: 'claude' }, AGENTS, 'build', null).value).toBe('claude');
  });

  it("sends the user's pick, whatever the agent", () => {
    expect(sdkSelection(CATALOGUE, AGENTS, '', 'claude')).toMatchObject({ value: 'claude', send: 'claude' });
    expect(sdkSelection(CATALOGUE, AGENTS, 'coder', 'native')).toMatchObject({ value: 'native', send: 'native' });
  });

  it('shows unavailable SDKs disabled, with the reason as the tooltip', () => {
    const codex = sdkSelection(CATALOGUE, AGENTS, '', null).choices.find(c => c.id === 'codex');
    expect(codex).toEqual({
      id: 'codex',
      label: 'OpenAI Codex (not installed)',
      disabled: true,
      title: 'the codex CLI is not installed: npm install -g @openai/codex'
    });
    // An agent whose SDK is not installed keeps it preselected, with the reason as a warning.
    expect(sdkSelection(CATALOGUE, AGENTS, 'reviewer', null)).toMatchObject({
      value: 'codex',
      send: 'codex',
      warning: 'the codex CLI is not installed: npm install -g @openai/codex'
    });
  });

  it('shows an SDK the server does not offer as an unknown, disabled choice', () => {
    const selection = sdkSelection(CATALOGUE, AGENTS, 'legacy', null);
    expect(selection.value).toBe('gemini');
    expect(selection.choices[selection.choices.length - 1]).toMatchObject({ id: 'gemini', disabled: true });
    expect(selection.warning).toBe('this server offers no gemini SDK');
  });

  it('offers nothing before the list is loaded, or when it is empty', () => {
    const empty = { choices: [], value: '', warning: null, send: undefined };
    expect(sdkSelection(null, AGENTS, 'coder', null)).toEqual(empty);
    expect(sdkSelection({ default_sdk: 'native', sdks: [] }, AGENTS, '', 'claude')).toEqual(empty);
  });

  it('describes what an available SDK can do', () => {
    expect(sdkChoice(sdk('claude', true))).toEqual({
      id: 'claude',
      label: 'Claude Agent SDK',
      disabled: false,
      title: 'Claude Agent SDK: takes messages while streaming, interrupts cleanly, shows tool calls, full history'
    });
    expect(sdkChoice({ ...sdk('native', false), reason: null }).title).toBe('Native is not installed');
  });
});

describe('the SDK badge', () => {
  it('names the SDK only when it is not native', () => {
    expect(sdkBadge('claude')).toBe('claude');
    expect(sdkBadge('native')).toBeNull();
    expect(sdkBadge(undefined)).toBeNull();
    expect(sdkBadge('')).toBeNull();
  });

  it('marks sessions in the picker and the meta line of messages', () => {
    const codex = session({ id: 's', agent: 'build', sdk: 'codex', model: 'openai:gpt-5', created_at: '' });
    expect(sessionLabel(codex)).toBe('build · openai:gpt-5 [codex]');
    expect(sessionLabel(session({ id: 's', title: 'notes', sdk: 'native', created_at: '' }))).toBe('notes');
    expect(metaLine('claude-sonnet', 12, 3, 0, 'claude', trans)).toBe('claude · claude-sonnet · 12 in / 3 out · $0');
    expect(metaLine('echo', 12, 3, null, 'native', trans)).toBe('echo · 12 in / 3 out');
  });

  it("takes a message's SDK from its meta, and a draft's from the session", () => {
    const item = messageItem(
      message({
        id: 'msg_1',
        role: 'assistant',
        meta: { provider: 'anthropic', model: 'claude-sonnet', sdk: 'claude' },
        parts: [{ type: 'text', text: 'hi' }]
      })
    );
    expect(item.sdk).toBe('claude');
    expect(messageItem(message({ id: 'm', role: 'user', parts: [] })).sdk).toBeNull();
    const coder = session({ id: 'ses_1', agent: 'coder', sdk: 'claude' });
    const state = reduce(initialState(coder), {
      type: 'event',
      event: wire({ type: 'output.text.delta', run_id: 'run_1', seq: 1, delta: 'hel' })
    });
    expect(state.items[0]).toMatchObject({ key: 'draft:run_1', status: 'streaming', sdk: 'claude' });
  });
});
