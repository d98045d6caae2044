/**
 * The panel's header, made to fit the sidebar's default 250–300 px: one row with the session
 * picker and icon buttons (pin, new session, reload), and a dim context line saying what the
 * panel follows (the active notebook's session, or a pinned one) in which project folder.
 */

import { addIcon, folderIcon, HTMLSelect, refreshIcon, ToolbarButtonComponent } from '@jupyterlab/ui-components';
import React from 'react';

import { sessionLabel } from './format';
import { useTrans } from './i18n';
import { pinIcon, unpinnedIcon } from './icons';
import type { PanelModel } from './model';
import { sdkBadge } from './sdks';
import type { Snapshot } from './snapshot';

export interface HeaderProps {
  snap: Snapshot;
  model: PanelModel;
  creating: boolean;
  onToggleCreate: () => void;
  pickFolder: () => Promise<string | null>;
}

export function Header(props: HeaderProps): JSX.Element {
  const trans = useTrans();
  const { snap, model } = props;
  const options = snap.sessions.map(s => ({ value: s.id, label: sessionLabel(s) }));
  if (!snap.sessionId) {
    const none = snap.sessionsLoaded ? trans.__('No session yet: ask below to start one') : trans.__('Loading…');
    options.unshift({ value: '', label: none });
  }
  return (
    <div className="jp-AgiHeader">
      <div className="jp-AgiHeader-row">
        <HTMLSelect
          className="jp-AgiSessionSelect"
          aria-label={trans.__('Session')}
          title={trans.__('Session')}
          value={snap.sessionId ?? ''}
          options={options}
          onChange={e => void model.chooseSession(e.target.value || null)}
          disabled={!snap.sessions.length}
        />
        <ToolbarButtonComponent
          className="jp-AgiPin"
          icon={snap.pinned ? pinIcon : unpinnedIcon}
          pressed={snap.pinned}
          enabled={snap.sessionId !== null || snap.pinned}
          tooltip={trans.__('Pin this session (keep it whatever notebook is active)')}
          pressedTooltip={trans.__("Unpin: follow the active notebook's session again")}
          onClick={() => void model.togglePin()}
        />
        <ToolbarButtonComponent
          className="jp-AgiNewSession"
          icon={addIcon}
          pressed={props.creating}
          tooltip={trans.__('New session')}
          onClick={props.onToggleCreate}
        />
        <ToolbarButtonComponent
          className="jp-AgiRefresh"
          icon={refreshIcon}
          tooltip={trans.__('Reload the session list')}
          onClick={() => void model.refreshSessions(false)}
        />
      </div>
      <ContextLine {...props} />
    </div>
  );
}

function ContextLine(props: HeaderProps): JSX.Element {
  const trans = useTrans();
  const { snap, model } = props;
  const session = snap.chat.session ?? snap.sessions.find(s => s.id === snap.sessionId);
  const badge = sdkBadge(session?.sdk);
  const notebook = snap.notebookPath?.split('/').pop() ?? null;
  const following = snap.pinned
    ? trans.__('pinned')
    : snap.projectSource !== 'picked' && notebook
      ? trans.__('following %1', notebook)
      : '';
  const folder = snap.project ? `${snap.project}/` : '/';
  const where =
    snap.projectSource === 'picked'
      ? trans.__('a folder you chose')
      : snap.projectSource === 'notebook'
        ? trans.__("the active notebook's folder")
        : trans.__('the server root');
  const choose = async (): Promise<void> => {
    const picked = await props.pickFolder();
    if (picked !== null) {
      model.pickProject(picked);
    }
  };
  return (
    <div className="jp-AgiProject">
      <button
        type="button"
        className="jp-AgiProject-folder"
        title={trans.__('Project: %1 (%2). Choose another folder…', folder, where)}
        onClick={() => void choose()}
      >
        <folderIcon.react tag="span" elementSize="normal" className="jp-AgiProject-icon" />
        <span className="jp-AgiProject-path">{folder}</span>
      </button>
      {snap.projectSource === 'picked' ? (
        <button type="button" className="jp-AgiLinkButton jp-AgiFollow" onClick={() => model.pickProject(null)}>
          {trans.__('follow notebook')}
        </button>
      ) : null}
      {following ? <span className="jp-AgiProject-follow">{following}</span> : null}
      {badge ? (
        <span className="jp-AgiBadge jp-AgiSdkBadge" title={trans.__('runs on the %1 agent SDK', badge)}>
          {badge}
        </span>
      ) : null}
    </div>
  );
}
