/** The side panel: project line, session picker and form, tabs, transcript and composer. */

import React, { useCallback, useState, useSyncExternalStore } from 'react';

import { Transcript } from './chat';
import { sessionLabel } from './format';
import type { PanelModel } from './model';
import { ArtifactsView, RunsList } from './runs';
import { sdkBadge, sdkSelection } from './sdks';
import type { Snapshot, Tab } from './snapshot';
import { activeRuns } from './state';
import type { AgentInfo, HistoryView, ProviderInfo } from './types';
import type { SdkCatalogue } from './wire';

export interface ViewProps {
  model: PanelModel;
  /** Opens a folder picker; resolves with a folder relative to the server root, or null. */
  pickFolder: () => Promise<string | null>;
}

export function PanelView(props: ViewProps): JSX.Element {
  const { model } = props;
  const subscribe = useCallback((listener: () => void) => model.subscribe(listener), [model]);
  const snap = useSyncExternalStore(subscribe, () => model.snapshot);
  return (
    <div className="jp-AgiPanel-inner">
      <ProjectLine snap={snap} model={model} pickFolder={props.pickFolder} />
      <SessionBar snap={snap} model={model} />
      <Errors snap={snap} model={model} />
      <Tabs snap={snap} model={model} />
      <div className="jp-AgiBody" role="tabpanel" aria-label={snap.tab}>
        {snap.tab === 'chat' ? (
          <Transcript chat={snap.chat} view={snap.view} model={model} loading={snap.historyLoading} />
        ) : null}
        {snap.tab === 'runs' ? <RunsList chat={snap.chat} model={model} /> : null}
        {snap.tab === 'artifacts' ? <ArtifactsView artifacts={snap.artifacts} model={model} /> : null}
      </div>
      <Composer snap={snap} model={model} />
    </div>
  );
}

function ProjectLine(props: { snap: Snapshot; model: PanelModel; pickFolder: () => Promise<string | null> }): JSX.Element {
  const { snap, model } = props;
  const [hint, explanation] =
    snap.projectSource === 'picked'
      ? ['chosen', 'a folder you chose']
      : snap.projectSource === 'notebook'
        ? ['notebook', "the active notebook's folder (follows the notebook)"]
        : ['root', 'the server root (open a notebook to follow its folder)'];
  const choose = async (): Promise<void> => {
    const folder = await props.pickFolder();
    if (folder !== null) {
      model.pickProject(folder);
    }
  };
  return (
    <div className="jp-AgiProject">
      <span className="jp-AgiProject-label">Project</span>
      <code className="jp-AgiProject-path" title={`${snap.project || '/'}: ${explanation}`}>
        {snap.project ? `${snap.project}/` : '/'}
      </code>
      <span className="jp-AgiDim" title={explanation}>
        ({hint})
      </span>
      <span className="jp-AgiSpacer" />
      <button className="jp-AgiButton jp-mod-small" onClick={() => void choose()} title="Choose the project folder">
        Folder…
      </button>
      {snap.projectSource === 'picked' ? (
        <button className="jp-AgiButton jp-mod-small" onClick={() => model.pickProject(null)} title="Follow the active notebook again">
          Follow notebook
        </button>
      ) : null}
    </div>
  );
}

function SessionBar(props: { snap: Snapshot; model: PanelModel }): JSX.Element {
  const { snap, model } = props;
  const [creating, setCreating] = useState(false);
  const current = snap.chat.session ?? snap.sessions.find(s => s.id === snap.sessionId);
  const badge = sdkBadge(current?.sdk);
  return (
    <div className="jp-AgiSessions">
      <div className="jp-AgiRow">
        <label className="jp-AgiSessions-label" htmlFor="jp-AgiSessionSelect">
          Session
        </label>
        <select
          id="jp-AgiSessionSelect"
          className="jp-AgiSelect jp-AgiSessionSelect"
          value={snap.sessionId ?? ''}
          onChange={e => void model.selectSession(e.target.value || null)}
          disabled={!snap.sessions.length}
        >
          {!snap.sessions.length ? <option value="">{snap.sessionsLoaded ? 'no sessions yet' : 'loading…'}</option> : null}
          {snap.sessions.map(s => (
            <option key={s.id} value={s.id}>
              {sessionLabel(s)}
            </option>
          ))}
        </select>
        {badge ? (
          <span className="jp-AgiBadge jp-AgiSdkBadge" title={`runs on the ${badge} agent SDK`}>
            {badge}
          </span>
        ) : null}
        <button
          className="jp-AgiButton jp-AgiNewSession"
          onClick={() => setCreating(!creating)}
          aria-expanded={creating}
          title="New session"
        >
          New
        </button>
        <button className="jp-AgiButton jp-mod-small" onClick={() => void model.refreshSessions(false)} title="Reload the session list">
          ↻
        </button>
      </div>
      {creating ? (
        <NewSessionForm
          agents={snap.agents}
          providers={snap.providers}
          defaultModel={snap.defaultModel}
          sdks={snap.sdks}
          onCancel={() => setCreating(false)}
          onCreate={async (agent, sdk, chosenModel, title) => {
            const created = await model.newSession({ agent, sdk, model: chosenModel, title });
            if (created) {
              setCreating(false);
            }
          }}
        />
      ) : null}
    </div>
  );
}

function NewSessionForm(props: {
  agents: AgentInfo[];
  providers: ProviderInfo[];
  defaultModel: string | null;
  sdks: SdkCatalogue | null;
  onCancel: () => void;
  onCreate: (
    agent: string | undefined,
    sdk: string | undefined,
    model: string | undefined,
    title: string | undefined
  ) => Promise<void>;
}): JSX.Element {
  const [agent, setAgent] = useState('');
  const [chosenSdk, setChosenSdk] = useState<string | null>(null);
  const sdk = sdkSelection(props.sdks, props.agents, agent, chosenSdk);
  const [modelId, setModelId] = useState('');
  const [title, setTitle] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: React.FormEvent): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    try {
      await props.onCreate(agent || undefined, sdk.send, modelId.trim() || undefined, title.trim() || undefined);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="jp-AgiNewSessionForm" onSubmit={e => void submit(e)} aria-label="New session">
      <label>
        Agent
        <select className="jp-AgiSelect jp-AgiAgentSelect" value={agent} onChange={e => setAgent(e.target.value)}>
          <option value="">default</option>
          {props.agents.map(a => (
            <option key={a.name} value={a.name} title={a.description}>
              {a.name}
            </option>
          ))}
        </select>
      </label>
      {sdk.choices.length ? (
        <label>
          SDK
          <select
            className="jp-AgiSelect jp-AgiSdkSelect"
            value={sdk.value}
            onChange={e => setChosenSdk(e.target.value)}
            title="The agent SDK that runs the session"
          >
            {sdk.choices.map(c => (
              <option key={c.id} value={c.id} disabled={c.disabled} title={c.title}>
                {c.label}
              </option>
            ))}
          </select>
        </label>
      ) : null}
      {sdk.warning ? <div className="jp-AgiDim jp-AgiSdkWarning">{sdk.warning}</div> : null}
      <label>
        Model
        <input
          className="jp-AgiInput jp-AgiModelSelect"
          list="jp-AgiModelChoices"
          value={modelId}
          onChange={e => setModelId(e.target.value)}
          placeholder={props.defaultModel ? `default (${props.defaultModel})` : 'default'}
          title="provider:model, e.g. openai:gpt-5-mini"
        />
        <datalist id="jp-AgiModelChoices">
          {props.providers.flatMap(p =>
            p.models.map(m => (
              <option key={m.id} value={m.id}>
                {`${p.label ?? p.name}${p.configured === false ? ' (not configured)' : ''}`}
              </option>
            ))
          )}
        </datalist>
      </label>
      <label>
        Title
        <input className="jp-AgiInput" value={title} onChange={e => setTitle(e.target.value)} placeholder="optional" />
      </label>
      <div className="jp-AgiRow">
        <button type="submit" className="jp-AgiButton jp-mod-accept jp-AgiCreateSession" disabled={busy}>
          Create
        </button>
        <button type="button" className="jp-AgiButton" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function Errors(props: { snap: Snapshot; model: PanelModel }): JSX.Element | null {
  if (!props.snap.errors.length) {
    return null;
  }
  return (
    <div className="jp-AgiErrors">
      {props.snap.errors.map(error => (
        <div key={error.id} className="jp-AgiError" role="alert">
          <span className="jp-AgiError-text">{error.text}</span>
          <button className="jp-AgiButton jp-mod-small" onClick={() => props.model.dismissError(error.id)} aria-label="Dismiss error">
            ×
          </button>
        </div>
      ))}
    </div>
  );
}

const TABS: { id: Tab; label: string }[] = [
  { id: 'chat', label: 'Chat' },
  { id: 'runs', label: 'Runs' },
  { id: 'artifacts', label: 'Artifacts' }
];

function Tabs(props: { snap: Snapshot; model: PanelModel }): JSX.Element {
  const { snap, model } = props;
  const active = activeRuns(snap.chat).length;
  const onKey = (e: React.KeyboardEvent): void => {
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') {
      return;
    }
    const index = TABS.findIndex(t => t.id === snap.tab);
    const next = TABS[(index + (e.key === 'ArrowRight' ? 1 : TABS.length - 1)) % TABS.length];
    if (next) {
      model.setTab(next.id);
      e.currentTarget.querySelector<HTMLElement>(`[data-tab="${next.id}"]`)?.focus();
    }
  };
  return (
    <div className="jp-AgiTabsRow">
      <div className="jp-AgiTabs" role="tablist" aria-label="AGI views" onKeyDown={onKey}>
        {TABS.map(tab => (
          <button
            key={tab.id}
            role="tab"
            aria-selected={snap.tab === tab.id}
            tabIndex={snap.tab === tab.id ? 0 : -1}
            className={`jp-AgiTab ${snap.tab === tab.id ? 'jp-mod-current' : ''}`}
            data-tab={tab.id}
            onClick={() => model.setTab(tab.id)}
          >
            {tab.label}
            {tab.id === 'runs' && active ? <span className="jp-AgiBadge jp-AgiBadge-running">{active}</span> : null}
          </button>
        ))}
      </div>
      <fieldset className="jp-AgiViewToggle">
        <legend className="jp-AgiSrOnly">History view</legend>
        {(['simple', 'full'] as HistoryView[]).map(view => (
          <label key={view}>
            <input
              type="radio"
              name="jp-AgiView"
              value={view}
              checked={snap.view === view}
              onChange={() => void model.setView(view)}
            />
            {view}
          </label>
        ))}
      </fieldset>
    </div>
  );
}

function Composer(props: { snap: Snapshot; model: PanelModel }): JSX.Element {
  const { snap, model } = props;
  const [text, setText] = useState('');
  const running = activeRuns(snap.chat).length > 0;
  const send = (): void => {
    const prompt = text.trim();
    if (!prompt) {
      return;
    }
    setText('');
    if (snap.tab !== 'chat') {
      model.setTab('chat');
    }
    void model.send(prompt).then(sent => {
      if (!sent) {
        setText(current => current || prompt); // not taken: give the text back to fix and resend
      }
    });
  };
  return (
    <div className="jp-AgiComposer">
      <textarea
        className="jp-AgiPrompt"
        value={text}
        rows={3}
        placeholder={snap.sessionId ? 'Ask the agent… (Enter sends, Shift+Enter for a new line)' : 'Ask to start a new session…'}
        aria-label="Message"
        onChange={e => setText(e.target.value)}
        onKeyDown={e => {
          if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            send();
          }
        }}
      />
      <div className="jp-AgiComposer-buttons">
        <button className="jp-AgiButton jp-mod-accept jp-AgiSend" onClick={send} disabled={!text.trim()}>
          Send
        </button>
        <button
          className="jp-AgiButton jp-mod-warn jp-AgiStop"
          onClick={() => void model.stop()}
          disabled={!running}
          title="Cancel the running run"
        >
          Stop
        </button>
      </div>
    </div>
  );
}
