/** The message box with Send and Stop. */

import { Button, runIcon, stopIcon } from '@jupyterlab/ui-components';
import React, { useState } from 'react';

import { useTrans } from './i18n';
import type { PanelModel } from './model';
import type { Snapshot } from './snapshot';
import { activeRuns } from './state';

export function Composer(props: { snap: Snapshot; model: PanelModel }): JSX.Element {
  const trans = useTrans();
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
  const placeholder = snap.sessionId
    ? trans.__('Ask the agent… (Enter sends, Shift+Enter: new line)')
    : trans.__('Ask to start a new session…');
  return (
    <div className="jp-AgiComposer">
      <textarea
        className="jp-mod-styled jp-AgiPrompt"
        value={text}
        rows={3}
        placeholder={placeholder}
        aria-label={trans.__('Message')}
        onChange={e => setText(e.target.value)}
        onKeyDown={e => {
          if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            send();
          }
        }}
      />
      <div className="jp-AgiComposer-buttons">
        <Button
          className="jp-mod-styled jp-mod-accept jp-AgiSend"
          onClick={send}
          disabled={!text.trim()}
          title={trans.__('Send (Enter)')}
          aria-label={trans.__('Send')}
        >
          <runIcon.react tag="span" elementSize="normal" />
          <span>{trans.__('Send')}</span>
        </Button>
        <Button
          className={`jp-mod-styled ${running ? 'jp-mod-warn' : 'jp-mod-reject'} jp-AgiStop`}
          onClick={() => void model.stop()}
          disabled={!running}
          title={trans.__('Stop the running answer')}
          aria-label={trans.__('Stop')}
        >
          <stopIcon.react tag="span" elementSize="normal" />
          <span>{trans.__('Stop')}</span>
        </Button>
      </div>
    </div>
  );
}
