/** The transcript: messages as Markdown, tool calls as collapsible blocks, per-message meta. */

import React, { useEffect, useRef, useState } from 'react';

import { errorText } from './api';
import { argumentsPreview, diffLines, metaLine, prettyArguments } from './format';
import { Markdown } from './markdown';
import type { PanelModel } from './model';
import { activeRuns, sortedRuns, visibleBlocks, type Block, type ChatItem, type ChatState, type ToolBlock } from './state';
import type { HistoryView } from './types';

export function Transcript(props: { chat: ChatState; view: HistoryView; model: PanelModel; loading: boolean }): JSX.Element {
  const end = useRef<HTMLDivElement>(null);
  const box = useRef<HTMLDivElement>(null);
  const { chat, view } = props;
  const signature = chat.items.length + ':' + chat.items.map(i => i.blocks.length).join(',') + lastTextLength(chat);

  useEffect(() => {
    // Follow the stream while the reader is near the bottom.
    const el = box.current;
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 160) {
      end.current?.scrollIntoView?.({ block: 'end' });
    }
  }, [signature]);

  const items = chat.items
    .map(item => ({ item, blocks: visibleBlocks(item, view) }))
    .filter((x): x is { item: ChatItem; blocks: Block[] } => x.blocks !== null);
  return (
    <div className="jp-AgiTranscript" ref={box} role="log" aria-live="polite" aria-label="Conversation">
      {props.loading && !items.length ? <div className="jp-AgiEmpty">Loading…</div> : null}
      {!props.loading && !items.length ? (
        <div className="jp-AgiEmpty">No messages yet. Ask something below.</div>
      ) : null}
      {items.map(({ item, blocks }) => (
        <MessageView key={item.key} item={item} blocks={blocks} model={props.model} />
      ))}
      <RunStatusLine chat={chat} />
      <div ref={end} />
    </div>
  );
}

function lastTextLength(chat: ChatState): string {
  const last = chat.items[chat.items.length - 1];
  const block = last?.blocks[last.blocks.length - 1];
  return block && block.kind === 'text' ? `:${block.text.length}` : '';
}

const ROLE_LABEL: Record<string, string> = { user: 'You', assistant: 'Assistant', tool: 'Tool', system: 'System' };

function MessageView(props: { item: ChatItem; blocks: Block[]; model: PanelModel }): JSX.Element {
  const { item } = props;
  const meta = item.role === 'assistant' ? metaLine(item.model, item.inputTokens, item.outputTokens, item.costUsd, item.sdk) : '';
  return (
    <div
      className={`jp-AgiMessage jp-AgiMessage-${item.role} jp-AgiMessage-${item.status}`}
      data-role={item.role}
      data-status={item.status}
      data-message-id={item.messageId ?? ''}
      data-run-id={item.runId ?? ''}
    >
      <div className="jp-AgiMessage-header">
        <span className="jp-AgiMessage-role">{ROLE_LABEL[item.role] ?? item.role}</span>
        {item.status === 'streaming' ? <span className="jp-AgiBadge jp-AgiBadge-running">streaming</span> : null}
        {item.status === 'pending' ? <span className="jp-AgiBadge">sending</span> : null}
        {item.status === 'cancelled' ? <span className="jp-AgiBadge jp-AgiBadge-cancelled">cancelled</span> : null}
        {meta ? <span className="jp-AgiMessage-meta">{meta}</span> : null}
      </div>
      {props.blocks.map((block, index) => (
        <BlockView key={index} block={block} model={props.model} />
      ))}
    </div>
  );
}

function BlockView(props: { block: Block; model: PanelModel }): JSX.Element | null {
  const { block } = props;
  switch (block.kind) {
    case 'text':
      return <Markdown text={block.text} className="jp-AgiText" />;
    case 'reasoning':
      return (
        <details className="jp-AgiReasoning">
          <summary>Reasoning</summary>
          <Markdown text={block.text} />
        </details>
      );
    case 'tool':
      return <ToolView block={block} model={props.model} />;
    case 'error':
      return (
        <div className="jp-AgiBlockError" role="alert">
          <strong>{block.code}</strong>: {block.message}
        </div>
      );
    case 'artifact':
      return (
        <div className="jp-AgiArtifactRef">
          Artifact: {block.title ?? block.artifactId} <span className="jp-AgiDim">({block.artifactKind})</span>
        </div>
      );
    case 'image':
      return <img className="jp-AgiImage" src={block.src} alt="image from the conversation" />;
  }
}

function statusClass(status: string): string {
  return `jp-AgiBadge jp-AgiBadge-${status.replace(/[^a-z_]/g, '')}`;
}

export function ToolView(props: { block: ToolBlock; model: PanelModel }): JSX.Element {
  const { block } = props;
  const failed = block.ok === false;
  return (
    <details className="jp-AgiTool" data-tool={block.name} data-status={block.status}>
      <summary>
        <span className="jp-AgiTool-name">{block.name || 'tool'}</span>
        <span className={statusClass(block.status)}>{block.status}</span>
        <span className="jp-AgiTool-preview">{argumentsPreview(block.arguments, block.argumentsText)}</span>
      </summary>
      <div className="jp-AgiTool-body">
        <div className="jp-AgiTool-label">Arguments</div>
        <pre className="jp-AgiPre">{prettyArguments(block.arguments, block.argumentsText)}</pre>
        {block.live && block.output === null ? (
          <>
            <div className="jp-AgiTool-label">Live output</div>
            <pre className="jp-AgiPre">{block.live}</pre>
          </>
        ) : null}
        {block.output !== null ? (
          <>
            <div className="jp-AgiTool-label">{failed ? 'Error' : 'Output'}</div>
            <pre className={`jp-AgiPre ${failed ? 'jp-AgiPre-error' : ''}`}>{block.output}</pre>
          </>
        ) : null}
        {block.artifact ? <ToolArtifact id={block.artifact.id} kind={block.artifact.kind} model={props.model} /> : null}
      </div>
    </details>
  );
}

/** A tool's artifact, loaded when shown: a diff for `file_diff`, else its title. */
function ToolArtifact(props: { id: string; kind: string; model: PanelModel }): JSX.Element {
  const [state, setState] = useState<{ kind: string; text: string | null; title: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    props.model
      .openArtifact(props.id)
      .then(({ artifact, text }) => {
        if (live) {
          setState({ kind: artifact.kind, text: diffText(artifact.data, text), title: artifact.title ?? artifact.id });
        }
      })
      .catch(e => live && setError(errorText(e)));
    return () => {
      live = false;
    };
  }, [props.id]);
  if (error) {
    return <div className="jp-AgiBlockError">{error}</div>;
  }
  if (!state) {
    return <div className="jp-AgiDim">Loading artifact…</div>;
  }
  if ((state.kind === 'file_diff' || state.kind === 'notebook_diff') && state.text) {
    return (
      <>
        <div className="jp-AgiTool-label">Diff: {state.title}</div>
        <DiffView text={state.text} />
      </>
    );
  }
  return <div className="jp-AgiDim">Artifact: {state.title} ({state.kind})</div>;
}

/** The diff text of a file_diff artifact: `data.diff`, else its text. */
export function diffText(data: Record<string, unknown> | null | undefined, text: string | null): string | null {
  const diff = data?.diff ?? data?.unified_diff ?? data?.patch;
  if (typeof diff === 'string') {
    return diff;
  }
  if (Array.isArray(data?.files)) {
    const parts = (data?.files as unknown[])
      .map(f => (typeof f === 'object' && f !== null ? (f as Record<string, unknown>).diff : null))
      .filter((d): d is string => typeof d === 'string');
    if (parts.length) {
      return parts.join('\n');
    }
  }
  return text;
}

export function DiffView(props: { text: string }): JSX.Element {
  return (
    <pre className="jp-AgiPre jp-AgiDiff">
      {diffLines(props.text).map((line, index) => (
        <div key={index} className={`jp-AgiDiff-${line.kind}`}>
          {line.text || ' '}
        </div>
      ))}
    </pre>
  );
}

function RunStatusLine(props: { chat: ChatState }): JSX.Element | null {
  const runs = sortedRuns(props.chat);
  const latest = runs[0];
  if (!latest) {
    return null;
  }
  const active = activeRuns(props.chat);
  const run = active[0] ?? latest;
  const iteration = run.iteration !== null && active.length ? ` · step ${run.iteration}` : '';
  return (
    <div className="jp-AgiRunLine" data-run-id={run.id} data-run-status={run.status}>
      <span className={statusClass(run.status)}>{run.status}</span>
      <span className="jp-AgiDim">
        {' '}
        last run{iteration}
        {run.error && run.status === 'failed' ? ` — ${run.error}` : ''}
      </span>
    </div>
  );
}
