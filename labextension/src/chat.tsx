/** The transcript: one header per turn (a person's message, or a whole answer with its tool
 * calls), Markdown text, tool calls as collapsible blocks, the answer's model and usage. */

import { Button, userIcon, type LabIcon } from '@jupyterlab/ui-components';
import React, { useEffect, useRef, useState } from 'react';

import { errorText } from './api';
import { MentionChip } from './composer';
import { argumentsPreview, diffLines, formatContext, metaLine, prettyArguments, shortTime } from './format';
import { useTrans, type Trans } from './i18n';
import { agiIcon, statusIcon, statusKind } from './icons';
import { Markdown } from './markdown';
import { DecisionDoor } from './openapi';
import type { PanelModel } from './model';
import { activeRuns, sortedRuns, visibleBlocks, type Block, type ChatState, type ToolBlock } from './state';
import { groupTurns, type Entry, type Turn } from './turns';
import type { HistoryView } from './types';

export function Transcript(props: { chat: ChatState; view: HistoryView; model: PanelModel; loading: boolean; empty: string }): JSX.Element {
  const trans = useTrans();
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

  const entries = chat.items
    .map(item => ({ item, blocks: visibleBlocks(item, view) }))
    .filter((x): x is Entry => x.blocks !== null);
  const turns = groupTurns(entries);
  return (
    <div className="jp-AgiTranscript" ref={box} role="log" aria-live="polite" aria-label={trans.__('Conversation')}>
      {props.loading && !turns.length ? <div className="jp-AgiEmpty">{trans.__('Loading…')}</div> : null}
      {!props.loading && !turns.length ? <div className="jp-AgiEmpty">{props.empty}</div> : null}
      {turns.map(turn => (
        <TurnView key={turn.key} turn={turn} model={props.model} />
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

function TurnView(props: { turn: Turn; model: PanelModel }): JSX.Element {
  const trans = useTrans();
  const { turn } = props;
  const assistant = turn.role === 'assistant';
  const name = turn.role === 'user' ? trans.__('You') : assistant ? trans.__('Assistant') : trans.__('System');
  const meta = assistant
    ? metaLine(turn.model, turn.inputTokens, turn.outputTokens, turn.costUsd, turn.sdk, trans, turn.costUnknown)
    : '';
  return (
    <section
      className={`jp-AgiTurn jp-AgiTurn-${turn.role}`}
      data-status={turn.status}
      data-run-id={turn.runId ?? ''}
      aria-label={name}
    >
      <header className="jp-AgiTurn-header">
        <Icon icon={turn.role === 'user' ? userIcon : agiIcon} className="jp-AgiTurn-avatar" />
        <span className="jp-AgiTurn-name">{name}</span>
        <TurnState status={turn.status} trans={trans} />
        <span className="jp-AgiTurn-time">{shortTime(turn.createdAt)}</span>
      </header>
      {turn.entries.map(({ item, blocks }) => (
        <div
          key={item.key}
          className={`jp-AgiMessage jp-AgiMessage-${item.role}`}
          data-role={item.role}
          data-status={item.status}
          data-message-id={item.messageId ?? ''}
          data-run-id={item.runId ?? ''}
        >
          {blocks.map((block, index) => (
            <BlockView key={index} block={block} model={props.model} runId={item.runId ?? null} />
          ))}
        </div>
      ))}
      {assistant && turn.stop ? (
        <div className="jp-AgiTurn-stop" role="note">
          {turn.stop}
        </div>
      ) : null}
      {meta ? <div className="jp-AgiTurn-meta">{meta}</div> : null}
    </section>
  );
}

function TurnState(props: { status: string; trans: Trans }): JSX.Element | null {
  const { trans } = props;
  const labels: Record<string, string> = {
    streaming: trans.__('answering'),
    pending: trans.__('sending'),
    cancelled: trans.__('stopped'),
    error: trans.__('failed')
  };
  const label = labels[props.status];
  return label ? <StatusBadge status={props.status} label={label} /> : null;
}

export function Icon(props: { icon: LabIcon; className?: string; title?: string }): JSX.Element {
  return <props.icon.react tag="span" className={props.className} title={props.title} elementSize="normal" />;
}

/** A status as an icon (coloured by its kind) with its name. */
export function StatusBadge(props: { status: string; label?: string; iconOnly?: boolean }): JSX.Element {
  const label = props.label ?? props.status;
  return (
    <span className={`jp-AgiStatus jp-AgiStatus-${statusKind(props.status)}`} data-status={props.status} title={label}>
      <Icon icon={statusIcon(props.status)} className="jp-AgiStatus-icon" />
      {props.iconOnly ? null : <span className="jp-AgiStatus-label">{label}</span>}
    </span>
  );
}

function BlockView(props: { block: Block; model: PanelModel; runId: string | null }): JSX.Element | null {
  const trans = useTrans();
  const { block } = props;
  switch (block.kind) {
    case 'text':
      return <Markdown text={block.text} className="jp-AgiText" />;
    case 'reasoning':
      return (
        <details className="jp-AgiReasoning">
          <summary>{trans.__('Reasoning')}</summary>
          <Markdown text={block.text} />
        </details>
      );
    case 'tool':
      return <ToolView block={block} model={props.model} runId={props.runId} />;
    case 'error':
      return (
        <div className="jp-AgiBlockError" role="alert">
          <strong>{block.code}</strong>: {block.message}
        </div>
      );
    case 'notice':
      return (
        <div className="jp-AgiNotice" role="status" data-code={block.code}>
          <strong>{trans.__('Warning')}</strong>: {block.message}
        </div>
      );
    case 'artifact':
      return (
        <div className="jp-AgiArtifactRef">
          {trans.__('Artifact: %1', block.title ?? block.artifactId)} <span className="jp-AgiDim">({block.artifactKind})</span>
        </div>
      );
    case 'image':
      return block.src || !block.artifactId ? (
        <img className="jp-AgiImage" src={block.src} alt={trans.__('image from the conversation')} />
      ) : (
        <ArtifactImage id={block.artifactId} model={props.model} />
      );
    case 'mention':
      return <MentionChip kind={block.mentionKind} label={block.ref.split('#').pop() ?? block.ref} title={block.ref} />;
  }
}

function toolStatusLabel(status: string, trans: Trans): string {
  const labels: Record<string, string> = {
    streaming: trans.__('preparing'),
    running: trans.__('running'),
    completed: trans.__('completed'),
    failed: trans.__('failed'),
    denied: trans.__('denied'),
    skipped: trans.__('skipped'),
    waiting_approval: trans.__('waiting for your approval')
  };
  return labels[status] ?? status;
}

/** Who decided a call that waited, in words: "approved in the panel by alice". */
export function decidedLabel(decided: NonNullable<ToolBlock['decided']>, trans: Trans): string {
  const verbs: Record<string, string> = {
    approve: trans.__('approved'),
    deny: trans.__('denied'),
    approve_always: trans.__('always approved')
  };
  const doors: Record<string, string> = {
    [DecisionDoor.PANEL]: trans.__('in the panel'),
    [DecisionDoor.WIDGET]: trans.__('in the chat widget'),
    [DecisionDoor.CELL]: trans.__('in the notebook cell'),
    [DecisionDoor.CLI]: trans.__('from the command line'),
    [DecisionDoor.REST]: trans.__('through the REST API'),
    [DecisionDoor.POLICY]: trans.__("by the session's rules")
  };
  const words = [verbs[decided.decision] ?? decided.decision];
  if (decided.door) {
    words.push(doors[decided.door] ?? decided.door);
  }
  if (decided.by) {
    words.push(trans.__('by %1', decided.by));
  }
  return words.join(' ');
}

export function ToolView(props: { block: ToolBlock; model: PanelModel; runId?: string | null }): JSX.Element {
  const trans = useTrans();
  const { block } = props;
  const failed = block.ok === false;
  const label = toolStatusLabel(block.status, trans);
  const waiting = block.status === 'waiting_approval' && props.runId;
  const decided = block.decided ? decidedLabel(block.decided, trans) : '';
  return (
    <details className="jp-AgiTool" data-tool={block.name} data-status={block.status} open={waiting ? true : undefined}>
      <summary>
        <StatusBadge status={block.status} label={label} iconOnly />
        <span className="jp-AgiTool-name">{block.name || trans.__('tool')}</span>
        <span className="jp-AgiTool-state" title={decided || undefined}>
          {label}
        </span>
        <span className="jp-AgiTool-preview">{argumentsPreview(block.arguments, block.argumentsText)}</span>
      </summary>
      <div className="jp-AgiTool-body">
        {block.hosted ? <div className="jp-AgiTool-decided">{trans.__('Run by the provider')}</div> : null}
        {decided ? <div className="jp-AgiTool-decided">{decided}</div> : null}
        {waiting && block.diff ? (
          <>
            <div className="jp-AgiTool-label">{trans.__('Change to review')}</div>
            <DiffView text={block.diff} />
          </>
        ) : null}
        {waiting ? <ApprovalBar runId={props.runId as string} toolCallId={block.toolCallId} model={props.model} /> : null}
        <div className="jp-AgiTool-label">{trans.__('Arguments')}</div>
        <pre className="jp-AgiPre">{prettyArguments(block.arguments, block.argumentsText)}</pre>
        {block.live && block.output === null ? (
          <>
            <div className="jp-AgiTool-label">{trans.__('Live output')}</div>
            <pre className="jp-AgiPre">{block.live}</pre>
          </>
        ) : null}
        {block.output !== null ? (
          <>
            <div className="jp-AgiTool-label">{failed ? trans.__('Error') : trans.__('Output')}</div>
            <pre className={`jp-AgiPre ${failed ? 'jp-AgiPre-error' : ''}`}>{block.output}</pre>
          </>
        ) : null}
        {block.artifact ? <ToolArtifact id={block.artifact.id} model={props.model} /> : null}
      </div>
    </details>
  );
}

/** Approve / Deny / Always for a call waiting on a person (or every call of a run without
 * `toolCallId`); a denial's message goes to the model. */
export function ApprovalBar(props: { runId: string; toolCallId?: string; model: PanelModel }): JSX.Element {
  const trans = useTrans();
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState(false);
  const bar = useRef<HTMLDivElement>(null);
  useEffect(() => {
    bar.current?.scrollIntoView({ block: 'nearest' }); // a new question: its buttons in view
  }, []);
  const decide = (decision: 'approve' | 'deny' | 'approve_always'): void => {
    setBusy(true);
    void props.model
      .decideApproval(props.runId, decision, props.toolCallId, decision === 'deny' ? message.trim() : undefined)
      .finally(() => setBusy(false));
  };
  return (
    <div className="jp-AgiApproval" data-run-id={props.runId} ref={bar}>
      <Button small className="jp-AgiApproval-approve" disabled={busy} onClick={() => decide('approve')}>
        {trans.__('Approve')}
      </Button>
      <Button small className="jp-AgiApproval-deny" disabled={busy} onClick={() => decide('deny')}>
        {trans.__('Deny')}
      </Button>
      <Button small minimal className="jp-AgiApproval-always" disabled={busy} onClick={() => decide('approve_always')}>
        {trans.__('Always (this session)')}
      </Button>
      <input
        className="jp-mod-styled jp-AgiApproval-message"
        type="text"
        value={message}
        disabled={busy}
        placeholder={trans.__('message with a denial (optional)')}
        aria-label={trans.__('Message with a denial')}
        onChange={event => setMessage(event.target.value)}
      />
    </div>
  );
}

/** An image whose bytes are an artifact (one attached to a message), loaded when shown. */
function ArtifactImage(props: { id: string; model: PanelModel }): JSX.Element {
  const trans = useTrans();
  const [src, setSrc] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    let url: string | null = null;
    props.model
      .artifactImageUrl(props.id)
      .then(made => {
        url = made;
        if (live) {
          setSrc(made);
        } else {
          URL.revokeObjectURL(made);
        }
      })
      .catch(e => live && setError(errorText(e)));
    return () => {
      live = false;
      if (url) {
        URL.revokeObjectURL(url);
      }
    };
  }, [props.id]);
  if (error) {
    return <div className="jp-AgiBlockError">{error}</div>;
  }
  return src ? (
    <img className="jp-AgiImage" src={src} alt={trans.__('image attached to the message')} data-artifact={props.id} />
  ) : (
    <div className="jp-AgiDim">{trans.__('Loading image…')}</div>
  );
}

/** A tool's artifact, loaded when shown: a diff for `file_diff`, else its title. */
function ToolArtifact(props: { id: string; model: PanelModel }): JSX.Element {
  const trans = useTrans();
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
    return <div className="jp-AgiDim">{trans.__('Loading artifact…')}</div>;
  }
  if ((state.kind === 'file_diff' || state.kind === 'notebook_diff') && state.text) {
    return (
      <>
        <div className="jp-AgiTool-label">{trans.__('Diff: %1', state.title)}</div>
        <DiffView text={state.text} />
      </>
    );
  }
  return <div className="jp-AgiDim">{trans.__('Artifact: %1', `${state.title} (${state.kind})`)}</div>;
}

/** The diff text of a file_diff artifact: `data.patch` (what `apply_patch` stores), else its
 * text. */
export function diffText(data: Record<string, unknown> | null | undefined, text: string | null): string | null {
  const patch = data?.patch;
  return typeof patch === 'string' ? patch : text;
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

export function runStatusLabel(status: string, trans: Trans): string {
  const labels: Record<string, string> = {
    queued: trans.__('queued'),
    running: trans.__('running'),
    waiting_webhook: trans.__('waiting for the provider'),
    processing_webhook: trans.__('finishing'),
    waiting_approval: trans.__('waiting for your approval'),
    waiting_execution: trans.__('waiting for its cells to finish'),
    succeeded: trans.__('succeeded'),
    failed: trans.__('failed'),
    cancelled: trans.__('cancelled')
  };
  return labels[status] ?? status;
}

function RunStatusLine(props: { chat: ChatState }): JSX.Element | null {
  const trans = useTrans();
  const runs = sortedRuns(props.chat);
  const latest = runs[0];
  if (!latest) {
    return null;
  }
  const active = activeRuns(props.chat);
  const run = active[0] ?? latest;
  const step = run.iteration !== null && active.length ? trans.__('step %1', run.iteration) : '';
  const failure = run.error && run.status === 'failed' ? run.error : '';
  const budgets = Object.values(run.budgets ?? {});
  const context = formatContext(run.context, trans);
  return (
    <div className="jp-AgiRunLine" data-run-id={run.id} data-run-status={run.status}>
      <StatusBadge status={run.status} label={runStatusLabel(run.status, trans)} />
      <span className="jp-AgiDim">
        {[trans.__('last run'), step, failure, ...budgets].filter(Boolean).join(' · ')}
      </span>
      {context && (
        <span className="jp-AgiRunLine-context jp-AgiDim" title={context.full}>
          {context.short}
        </span>
      )}
    </div>
  );
}
