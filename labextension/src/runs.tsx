/** The runs list (live status, what each run was asked) and the artifacts view of a session. */

import { Button } from '@jupyterlab/ui-components';
import React, { useState } from 'react';

import { errorText } from './api';
import { ApprovalBar, DiffView, diffText, runStatusLabel, StatusBadge } from './chat';
import { UNKNOWN, formatCost, formatTokens, shortTime } from './format';
import { useTrans } from './i18n';
import { Markdown } from './markdown';
import type { PanelModel } from './model';
import type { ArtifactEntry } from './snapshot';
import { promptPreview, sortedRuns, type ChatState, type RunView } from './state';
import type { Artifact } from './types';
import { isTerminal } from './types';
import { UndoButton } from './undo';

export function RunsList(props: { chat: ChatState; model: PanelModel }): JSX.Element {
  const trans = useTrans();
  const runs = sortedRuns(props.chat);
  if (!runs.length) {
    return <div className="jp-AgiEmpty">{trans.__('No runs in this session yet.')}</div>;
  }
  return (
    <ul className="jp-AgiRuns" aria-label={trans.__('Runs')}>
      {runs.map(run => (
        <RunRow key={run.id} run={run} chat={props.chat} model={props.model} />
      ))}
    </ul>
  );
}

function RunRow(props: { run: RunView; chat: ChatState; model: PanelModel }): JSX.Element {
  const trans = useTrans();
  const { run } = props;
  const prompt = promptPreview(props.chat, run);
  const where = run.notebookPath
    ? run.cellId
      ? trans.__('from %1, cell %2', run.notebookPath, run.cellId.slice(0, 8))
      : trans.__('from %1', run.notebookPath)
    : '';
  const meta = [
    where,
    run.type === 'deep_research' ? trans.__('deep research') : '',
    run.agent ? trans.__('agent %1', run.agent) : '',
    run.model ?? '',
    run.inputTokens || run.outputTokens ? formatTokens(run.inputTokens, run.outputTokens, trans) : '',
    run.costUsd === null ? `cost ${UNKNOWN}` : run.costUsd ? formatCost(run.costUsd) : '',
    run.stop ?? '',
    shortTime(run.createdAt)
  ].filter(Boolean);
  return (
    <li className="jp-AgiRun" data-run-id={run.id} data-run-status={run.status}>
      <div className="jp-AgiRun-head">
        <StatusBadge status={run.status} label={runStatusLabel(run.status, trans)} iconOnly />
        <span className="jp-AgiRun-prompt" title={prompt ?? run.id}>
          {prompt ?? trans.__('(no prompt)')}
        </span>
        {!isTerminal(run.status) ? (
          <Button small minimal className="jp-AgiRun-cancel" onClick={() => void props.model.cancelRun(run.id)}>
            {trans.__('Cancel')}
          </Button>
        ) : null}
        <UndoButton runId={run.id} status={run.status} model={props.model} />
      </div>
      <div className="jp-AgiRun-meta jp-AgiDim">
        <code className="jp-AgiRun-id" title={run.id}>
          {run.id.slice(-8)}
        </code>
        {meta.length ? ` · ${meta.join(' · ')}` : ''}
      </div>
      {run.status === 'waiting_approval' && run.budgetAsk ? (
        <div className="jp-AgiRun-waiting">
          <span className="jp-AgiDim">{trans.__('Waiting for a larger budget: %1', run.budgetAsk)}</span>
          <BudgetBar runId={run.id} model={props.model} />
        </div>
      ) : run.status === 'waiting_approval' ? (
        <div className="jp-AgiRun-waiting">
          <span className="jp-AgiDim">{trans.__('Waiting for your approval')}</span>
          <ApprovalBar runId={run.id} model={props.model} />
        </div>
      ) : null}
      {run.error && run.status !== 'succeeded' ? <div className="jp-AgiBlockError">{run.error}</div> : null}
    </li>
  );
}

/** New max tokens / max USD and Raise / Deny for a run waiting for a larger budget. */
function BudgetBar(props: { runId: string; model: PanelModel }): JSX.Element {
  const trans = useTrans();
  const [tokens, setTokens] = useState('');
  const [usd, setUsd] = useState('');
  const [busy, setBusy] = useState(false);
  const decide = (decision: 'approve' | 'deny'): void => {
    const budget: { max_tokens?: number; max_usd?: number } = {};
    if (Number(tokens) > 0) {
      budget.max_tokens = Math.floor(Number(tokens));
    }
    if (Number(usd) > 0) {
      budget.max_usd = Number(usd);
    }
    setBusy(true);
    void props.model.decideBudget(props.runId, decision, budget).finally(() => setBusy(false));
  };
  return (
    <div className="jp-AgiApproval jp-AgiBudgetAsk" data-run-id={props.runId}>
      <input
        className="jp-mod-styled jp-AgiBudgetAsk-tokens"
        type="number"
        min={1}
        value={tokens}
        disabled={busy}
        placeholder={trans.__('max tokens')}
        aria-label={trans.__('New max tokens')}
        onChange={e => setTokens(e.target.value)}
      />
      <input
        className="jp-mod-styled jp-AgiBudgetAsk-usd"
        type="number"
        min={0}
        step="any"
        value={usd}
        disabled={busy}
        placeholder={trans.__('max USD')}
        aria-label={trans.__('New max USD')}
        onChange={e => setUsd(e.target.value)}
      />
      <Button small className="jp-AgiApproval-approve" disabled={busy} onClick={() => decide('approve')}>
        {trans.__('Raise budget')}
      </Button>
      <Button small className="jp-AgiApproval-deny" disabled={busy} onClick={() => decide('deny')}>
        {trans.__('Deny')}
      </Button>
    </div>
  );
}

export function ArtifactsView(props: { artifacts: ArtifactEntry[] | null; model: PanelModel }): JSX.Element {
  const trans = useTrans();
  const [open, setOpen] = useState<{ artifact: Artifact; text: string | null } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState<string | null>(null);
  if (props.artifacts === null) {
    return <div className="jp-AgiEmpty">{trans.__('Loading artifacts…')}</div>;
  }
  const show = async (id: string): Promise<void> => {
    setLoading(id);
    setError(null);
    try {
      setOpen(await props.model.openArtifact(id));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setLoading(null);
    }
  };
  return (
    <div className="jp-AgiArtifacts">
      {!props.artifacts.length ? <div className="jp-AgiEmpty">{trans.__('No artifacts in this session yet.')}</div> : null}
      <ul className="jp-AgiArtifactList" aria-label={trans.__('Artifacts')}>
        {props.artifacts.map(({ artifact }) => (
          <li key={artifact.id}>
            <button
              type="button"
              className={`jp-AgiLinkButton ${open?.artifact.id === artifact.id ? 'jp-mod-active' : ''}`}
              onClick={() => void show(artifact.id)}
              data-artifact-id={artifact.id}
            >
              <span className="jp-AgiBadge">{artifact.kind}</span> {artifact.title ?? artifact.path ?? artifact.id}
            </button>
            {loading === artifact.id ? <span className="jp-AgiDim"> {trans.__('loading…')}</span> : null}
          </li>
        ))}
      </ul>
      {error ? (
        <div className="jp-AgiBlockError" role="alert">
          {error}
        </div>
      ) : null}
      {open ? <ArtifactDetail artifact={open.artifact} text={open.text} /> : null}
    </div>
  );
}

interface Source {
  url: string;
  title: string;
}

/** Sources of a deep research report: `data.sources`, as the research runner stores them. */
export function reportSources(data: Record<string, unknown> | null): Source[] {
  const raw = data?.sources;
  if (!Array.isArray(raw)) {
    return [];
  }
  return raw.flatMap((item: { url?: unknown; title?: unknown }): Source[] => {
    const url = typeof item.url === 'string' ? item.url : '';
    return url ? [{ url, title: typeof item.title === 'string' && item.title ? item.title : url }] : [];
  });
}

function safeHref(url: string): string | undefined {
  return /^https?:\/\//i.test(url) ? url : undefined;
}

function ArtifactDetail(props: { artifact: Artifact; text: string | null }): JSX.Element {
  const trans = useTrans();
  const { artifact } = props;
  const data = artifact.data;
  let body: JSX.Element;
  if (artifact.kind === 'deep_research_report') {
    const sources = reportSources(data);
    body = (
      <>
        <Markdown text={props.text ?? ''} className="jp-AgiReport" />
        {sources.length ? (
          <>
            <h4>{trans.__('Sources')}</h4>
            <ol className="jp-AgiSources">
              {sources.map(source => (
                <li key={source.url}>
                  <a href={safeHref(source.url)} target="_blank" rel="noopener noreferrer">
                    {source.title}
                  </a>
                </li>
              ))}
            </ol>
          </>
        ) : null}
      </>
    );
  } else if (artifact.kind === 'file_diff' || artifact.kind === 'notebook_diff') {
    const diff = diffText(data, props.text);
    body = diff ? <DiffView text={diff} /> : <div className="jp-AgiDim">{trans.__('(empty diff)')}</div>;
  } else if (props.text !== null) {
    body = (artifact.mime ?? '').includes('markdown') ? <Markdown text={props.text} /> : <pre className="jp-AgiPre">{props.text}</pre>;
  } else {
    body = <pre className="jp-AgiPre">{JSON.stringify(data, null, 2)}</pre>;
  }
  const title = artifact.title ?? artifact.id;
  return (
    <section className="jp-AgiArtifactDetail" aria-label={trans.__('Artifact %1', title)} data-artifact-kind={artifact.kind}>
      <h3>{title}</h3>
      <div className="jp-AgiDim">
        {[artifact.kind, artifact.path ?? '', artifact.size ? trans.__('%1 bytes', artifact.size) : ''].filter(Boolean).join(' · ')}
      </div>
      {body}
    </section>
  );
}
