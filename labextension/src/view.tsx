/** The side panel: header, errors, tabs (chat, runs, artifacts) and the message box. */

import { closeIcon, collapseAllIcon, expandAllIcon, type LabIcon } from '@jupyterlab/ui-components';
import React, { useCallback, useState, useSyncExternalStore } from 'react';

import type { NotebookReview } from './cellreview';
import { Transcript } from './chat';
import { Composer } from './composer';
import { Header } from './header';
import { useTrans } from './i18n';
import type { PanelModel } from './model';
import { NewSessionForm } from './newsession';
import { ReviewBar } from './reviewbar';
import { ArtifactsView, RunsList } from './runs';
import type { Snapshot, Tab } from './snapshot';
import { activeRuns } from './state';
import type { HistoryView } from './types';

export interface ViewProps {
  model: PanelModel;
  /** Opens a folder picker; resolves with a folder relative to the server root, or null. */
  pickFolder: () => Promise<string | null>;
  review?: NotebookReview | null;
}

export function PanelView(props: ViewProps): JSX.Element {
  const trans = useTrans();
  const { model } = props;
  const subscribe = useCallback((listener: () => void) => model.subscribe(listener), [model]);
  const snap = useSyncExternalStore(subscribe, () => model.snapshot);
  const [creating, setCreating] = useState(false);
  const notebook = snap.notebookPath?.split('/').pop();
  const empty =
    !snap.sessionId && notebook && snap.projectSource !== 'picked'
      ? trans.__('No session for %1 yet. Ask something below to start one, or run a %%agi cell.', notebook)
      : trans.__('No messages yet. Ask something below.');
  return (
    <div className="jp-AgiPanel-inner">
      <Header snap={snap} model={model} creating={creating} onToggleCreate={() => setCreating(!creating)} pickFolder={props.pickFolder} />
      {creating ? (
        <NewSessionForm
          agents={snap.agents}
          models={snap.models}
          defaultModel={snap.defaultModel}
          sdks={snap.sdks}
          onCancel={() => setCreating(false)}
          onCreate={async body => {
            if (await model.newSession(body)) {
              setCreating(false);
            }
          }}
        />
      ) : null}
      <Errors snap={snap} model={model} />
      <Tabs snap={snap} model={model} />
      {props.review ? <ReviewBar review={props.review} path={snap.notebookPath} /> : null}
      <div className="jp-AgiBody" role="tabpanel" aria-label={snap.tab}>
        {snap.tab === 'chat' ? (
          <Transcript chat={snap.chat} view={snap.view} model={model} loading={snap.historyLoading} empty={empty} />
        ) : null}
        {snap.tab === 'runs' ? <RunsList chat={snap.chat} model={model} /> : null}
        {snap.tab === 'artifacts' ? <ArtifactsView artifacts={snap.artifacts} model={model} /> : null}
      </div>
      <Composer snap={snap} model={model} />
    </div>
  );
}

function Errors(props: { snap: Snapshot; model: PanelModel }): JSX.Element | null {
  const trans = useTrans();
  if (!props.snap.errors.length) {
    return null;
  }
  return (
    <div className="jp-AgiErrors">
      {props.snap.errors.map(error => (
        <div key={error.id} className="jp-AgiError" role="alert">
          <span className="jp-AgiError-text">{error.text}</span>
          <button
            type="button"
            className="jp-AgiIconButton"
            onClick={() => props.model.dismissError(error.id)}
            aria-label={trans.__('Dismiss error')}
            title={trans.__('Dismiss')}
          >
            <closeIcon.react tag="span" elementSize="normal" />
          </button>
        </div>
      ))}
    </div>
  );
}

function Tabs(props: { snap: Snapshot; model: PanelModel }): JSX.Element {
  const trans = useTrans();
  const { snap, model } = props;
  const tabs: { id: Tab; label: string }[] = [
    { id: 'chat', label: trans.__('Chat') },
    { id: 'runs', label: trans.__('Runs') },
    { id: 'artifacts', label: trans.__('Artifacts') }
  ];
  const active = activeRuns(snap.chat).length;
  const onKey = (e: React.KeyboardEvent): void => {
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') {
      return;
    }
    const index = tabs.findIndex(t => t.id === snap.tab);
    const next = tabs[(index + (e.key === 'ArrowRight' ? 1 : tabs.length - 1)) % tabs.length];
    if (next) {
      model.setTab(next.id);
      e.currentTarget.querySelector<HTMLElement>(`[data-tab="${next.id}"]`)?.focus();
    }
  };
  return (
    <div className="jp-AgiTabsRow">
      <div className="jp-AgiTabs" role="tablist" aria-label={trans.__('AGI views')} onKeyDown={onKey}>
        {tabs.map(tab => (
          <button
            type="button"
            key={tab.id}
            role="tab"
            aria-selected={snap.tab === tab.id}
            tabIndex={snap.tab === tab.id ? 0 : -1}
            className={`jp-AgiTab ${snap.tab === tab.id ? 'jp-mod-current' : ''}`}
            data-tab={tab.id}
            onClick={() => model.setTab(tab.id)}
          >
            {tab.label}
            {tab.id === 'runs' && active ? <span className="jp-AgiCount">{active}</span> : null}
          </button>
        ))}
      </div>
      {snap.tab === 'chat' && snap.sessionId ? <ViewToggle snap={snap} model={model} /> : null}
    </div>
  );
}

/** Simple (text only) or full (tool calls, reasoning) history: only on the chat tab of a
 * session, where it changes what is shown. */
function ViewToggle(props: { snap: Snapshot; model: PanelModel }): JSX.Element {
  const trans = useTrans();
  // icons (their words for screen readers and tooltips): the tab labels keep their room at
  // the side panel's default width
  const views: { id: HistoryView; label: string; title: string; icon: LabIcon }[] = [
    { id: 'simple', label: trans.__('simple'), title: trans.__('Simple: only the messages'), icon: collapseAllIcon },
    {
      id: 'full',
      label: trans.__('full'),
      title: trans.__('Full: messages, tool calls and reasoning'),
      icon: expandAllIcon
    }
  ];
  return (
    <div className="jp-AgiViewToggle" role="radiogroup" aria-label={trans.__('History view')}>
      {views.map(view => (
        <label key={view.id} title={view.title} className={props.snap.view === view.id ? 'jp-mod-current' : ''}>
          <input
            type="radio"
            name="jp-AgiView"
            value={view.id}
            checked={props.snap.view === view.id}
            onChange={() => void props.model.setView(view.id)}
          />
          <view.icon.react tag="span" elementSize="normal" />
          <span className="jp-AgiHiddenLabel">{view.label}</span>
        </label>
      ))}
    </div>
  );
}
