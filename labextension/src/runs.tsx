/** The runs list (live status) and the artifacts view of a session. */

import React, { useState } from 'react';

import { errorText } from './api';
import { DiffView, diffText } from './chat';
import { formatCost, formatTokens, shortTime } from './format';
import { Markdown } from './markdown';
import type { PanelModel } from './model';
import type { ArtifactEntry } from './snapshot';
import { sortedRuns, type ChatState } from './state';
import type { Artifact } from './types';
import { UndoButton } from './undo';
import { isTerminal } from './types';

export function RunsList(props: { chat: ChatState; model: PanelModel }): JSX.Element {
  const runs = sortedRuns(props.chat);
  if (!runs.length) {
    return <div className="jp-AgiEmpty">No runs in this session yet.</div>;
  }
  return (
    <ul className="jp-AgiRuns" aria-label="Runs">
      {runs.map(run => (
        <li key={run.id} className="jp-AgiRun" data-run-id={run.id} data-run-status={run.status}>
          <div className="jp-AgiRun-head">
            <span className={`jp-AgiBadge jp-AgiBadge-${run.status}`}>{run.status}</span>
            <code className="jp-AgiRun-id" title={run.id}>
              {run.id.slice(-8)}
            </code>
            <span className="jp-AgiDim">{run.model ?? ''}</span>
            {!isTerminal(run.status) ? (
              <button className="jp-AgiButton jp-mod-small" onClick={() => void props.model.cancelRun(run.id)}>
                Cancel
              </button>
            ) : null}
            <UndoButton runId={run.id} status={run.status} model={props.model} />
          </div>
          <div className="jp-AgiRun-meta jp-AgiDim">
            {[
              run.notebookPath ? `from ${run.notebookPath}${run.cellId ? ` (cell ${run.cellId.slice(0, 8)})` : ''}` : '',
              run.executionMode === 'kernel' ? 'notebook' : '',
              run.type === 'deep_research' ? 'deep research' : '',
              run.inputTokens || run.outputTokens ? formatTokens(run.inputTokens, run.outputTokens) : '',
              run.costUsd ? formatCost(run.costUsd) : '',
              shortTime(run.createdAt)
            ]
              .filter(Boolean)
              .join(' · ')}
          </div>
          {run.error && run.status !== 'succeeded' ? <div className="jp-AgiBlockError">{run.error}</div> : null}
        </li>
      ))}
    </ul>
  );
}

export function ArtifactsView(props: { artifacts: ArtifactEntry[] | null; model: PanelModel }): JSX.Element {
  const [open, setOpen] = useState<{ artifact: Artifact; text: string | null } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState<string | null>(null);
  if (props.artifacts === null) {
    return <div className="jp-AgiEmpty">Loading artifacts…</div>;
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
      {!props.artifacts.length ? <div className="jp-AgiEmpty">No artifacts in this session yet.</div> : null}
      <ul className="jp-AgiArtifactList" aria-label="Artifacts">
        {props.artifacts.map(({ artifact }) => (
          <li key={artifact.id}>
            <button
              className={`jp-AgiLinkButton ${open?.artifact.id === artifact.id ? 'jp-mod-active' : ''}`}
              onClick={() => void show(artifact.id)}
              data-artifact-id={artifact.id}
            >
              <span className="jp-AgiBadge">{artifact.kind}</span> {artifact.title ?? artifact.path ?? artifact.id}
            </button>
            {loading === artifact.id ? <span className="jp-AgiDim"> loading…</span> : null}
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

/** Sources of a deep research report: `data.sources` / `data.citations` as {url, title}. */
export function reportSources(data: Record<string, unknown> | null | undefined): Source[] {
  const raw = data?.sources ?? data?.citations;
  if (!Array.isArray(raw)) {
    return [];
  }
  return raw.flatMap((item: unknown): Source[] => {
    if (typeof item === 'string') {
      return [{ url: item, title: item }];
    }
    if (typeof item === 'object' && item !== null) {
      const record = item as Record<string, unknown>;
      const url = typeof record.url === 'string' ? record.url : '';
      if (url) {
        return [{ url, title: typeof record.title === 'string' && record.title ? record.title : url }];
      }
    }
    return [];
  });
}

function safeHref(url: string): string | undefined {
  return /^https?:\/\//i.test(url) ? url : undefined;
}

function ArtifactDetail(props: { artifact: Artifact; text: string | null }): JSX.Element {
  const { artifact } = props;
  const data = artifact.data ?? null;
  let body: JSX.Element;
  if (artifact.kind === 'deep_research_report') {
    const markdown = props.text ?? (typeof data?.markdown === 'string' ? data.markdown : '') ?? '';
    const sources = reportSources(data);
    body = (
      <>
        <Markdown text={markdown} className="jp-AgiReport" />
        {sources.length ? (
          <>
            <h4>Sources</h4>
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
    body = diff ? <DiffView text={diff} /> : <div className="jp-AgiDim">(empty diff)</div>;
  } else if (props.text !== null) {
    body = (artifact.mime ?? '').includes('markdown') ? <Markdown text={props.text} /> : <pre className="jp-AgiPre">{props.text}</pre>;
  } else {
    body = <pre className="jp-AgiPre">{JSON.stringify(data, null, 2)}</pre>;
  }
  return (
    <section className="jp-AgiArtifactDetail" aria-label={`Artifact ${artifact.title ?? artifact.id}`} data-artifact-kind={artifact.kind}>
      <h3>{artifact.title ?? artifact.id}</h3>
      <div className="jp-AgiDim">
        {[artifact.kind, artifact.path ?? '', artifact.size ? `${artifact.size} bytes` : ''].filter(Boolean).join(' · ')}
      </div>
      {body}
    </section>
  );
}
