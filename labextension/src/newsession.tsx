/** The new-session form: agent, agent SDK, model and title. */

import { Button, HTMLSelect } from '@jupyterlab/ui-components';
import React, { useState } from 'react';

import { useTrans } from './i18n';
import { sdkSelection, type SdkCatalogue } from './sdks';
import type { AgentInfo, ModelChoice, NewSession } from './types';

export function NewSessionForm(props: {
  agents: AgentInfo[];
  models: ModelChoice[];
  defaultModel: string | null;
  sdks: SdkCatalogue | null;
  onCancel: () => void;
  onCreate: (session: NewSession) => Promise<void>;
}): JSX.Element {
  const trans = useTrans();
  const [agent, setAgent] = useState('');
  const [chosenSdk, setChosenSdk] = useState<string | null>(null);
  const sdk = sdkSelection(props.sdks, props.agents, agent, chosenSdk, trans);
  const [modelId, setModelId] = useState('');
  const [title, setTitle] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: React.FormEvent): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    try {
      await props.onCreate({
        agent: agent || null,
        sdk: (sdk.send ?? null) as NewSession['sdk'],
        model: modelId.trim() || null,
        title: title.trim() || null
      });
    } finally {
      setBusy(false);
    }
  };
  const agentOptions = [
    { value: '', label: trans.__('default') },
    ...props.agents.map(a => ({ value: a.name, label: a.name, title: a.description }))
  ];
  return (
    <form className="jp-AgiNewSessionForm" onSubmit={e => void submit(e)} aria-label={trans.__('New session')}>
      <label>
        {trans.__('Agent')}
        <HTMLSelect className="jp-AgiAgentSelect" value={agent} options={agentOptions} onChange={e => setAgent(e.target.value)} />
      </label>
      {sdk.choices.length ? (
        <label>
          {trans.__('SDK')}
          <HTMLSelect
            className="jp-AgiSdkSelect"
            value={sdk.value}
            title={trans.__('The agent SDK that runs the session')}
            onChange={e => setChosenSdk(e.target.value)}
            options={sdk.choices.map(c => ({ value: c.id, label: c.label, disabled: c.disabled, title: c.title }))}
          />
        </label>
      ) : null}
      {sdk.warning ? <div className="jp-AgiDim jp-AgiSdkWarning">{sdk.warning}</div> : null}
      <label>
        {trans.__('Model')}
        <input
          className="jp-mod-styled jp-AgiInput jp-AgiModelSelect"
          list="jp-AgiModelChoices"
          value={modelId}
          onChange={e => setModelId(e.target.value)}
          placeholder={props.defaultModel ? trans.__('default (%1)', props.defaultModel) : trans.__('default')}
          title={trans.__('provider:model, e.g. openai:gpt-5-mini')}
        />
        <datalist id="jp-AgiModelChoices">
          {props.models.map(m => (
            <option key={m.id} value={m.id}>
              {m.configured ? m.label : trans.__('%1 (not configured)', m.label)}
            </option>
          ))}
        </datalist>
      </label>
      <label>
        {trans.__('Title')}
        <input
          className="jp-mod-styled jp-AgiInput jp-AgiTitleInput"
          value={title}
          onChange={e => setTitle(e.target.value)}
          placeholder={trans.__('optional')}
        />
      </label>
      <div className="jp-AgiRow">
        <Button type="submit" className="jp-mod-styled jp-mod-accept jp-AgiCreateSession" disabled={busy}>
          {trans.__('Create')}
        </Button>
        <Button type="button" minimal onClick={props.onCancel}>
          {trans.__('Cancel')}
        </Button>
      </div>
    </form>
  );
}
