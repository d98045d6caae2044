/** The message box with Send and Stop, its `@` mentions (`mentions.ts`) and attached images
 * (`attachments.ts`): typing `@` opens a list of what may be named, the MCP servers' under a
 * heading each (arrows move, Enter or Tab picks, Escape closes); a file dragged from the file
 * browser becomes an `@file` mention, an image file (from the file browser or the desktop) or
 * a pasted image an attachment. Picked mentions and attached images show as chips and go with
 * the message as structured data. */

import { Button, runIcon, stopIcon } from '@jupyterlab/ui-components';
import React, { useEffect, useRef, useState } from 'react';

import { type Attachment, attach, dataUrl, fromBase64, imageFiles, imageTypeOf, readImage, type Refusal } from './attachments';
import { type Trans, useTrans } from './i18n';
import { type Candidate, inProject, type Mention, mentionAt, mentionsToSend, pick, type Typed, withHeadings } from './mentions';
import type { PanelModel } from './model';
import { cellsNote, mayHaveCellsRunning } from './runningcells';
import type { Snapshot } from './snapshot';
import { activeRuns } from './state';

const CONTENTS_MIME = 'application/x-jupyter-icontents'; // what the file browser drags

interface Menu {
  typed: Typed;
  items: Candidate[];
  index: number;
}

/** What a Lumino drag event carries (structural: no @lumino/dragdrop import). */
interface LuminoDrag extends Event {
  mimeData: { hasData(mime: string): boolean; getData(mime: string): unknown };
  proposedAction: string;
  dropAction: string;
}

/** A mention as a chip: in the composer (removable) and in the transcript. */
export function MentionChip(props: { kind: string; label: string; title?: string; onRemove?: () => void }): JSX.Element {
  const trans = useTrans();
  return (
    <span className="jp-AgiMentionChip" data-kind={props.kind} title={props.title ?? `${props.kind}: ${props.label}`}>
      <span className="jp-AgiMentionChip-kind">{props.kind}</span>@{props.label}
      {props.onRemove ? (
        <button type="button" className="jp-AgiMentionChip-remove" aria-label={trans.__('Remove %1', props.label)} onClick={props.onRemove}>
          ×
        </button>
      ) : null}
    </span>
  );
}

/** An attached image as a chip: its thumbnail, its name and a remove button. */
export function ImageChip(props: { image: Attachment; onRemove: () => void }): JSX.Element {
  const trans = useTrans();
  const { image } = props;
  return (
    <span className="jp-AgiImageChip" title={image.name}>
      <img className="jp-AgiImageChip-thumb" src={dataUrl(image)} alt={image.name} />
      <span className="jp-AgiImageChip-name">{image.name}</span>
      <button type="button" className="jp-AgiMentionChip-remove" aria-label={trans.__('Remove %1', image.name)} onClick={props.onRemove}>
        ×
      </button>
    </span>
  );
}

function refusalText(refused: Refusal[], trans: Trans): string {
  return refused
    .map(r =>
      r.reason === 'too-large' ? trans.__('%1 is larger than 5 MB', r.name) : trans.__('%1 left out: a message holds at most 4 images', r.name)
    )
    .join('; ');
}

function MentionMenu(props: { menu: Menu; choose: (c: Candidate) => void }): JSX.Element {
  const trans = useTrans();
  return (
    <ul className="jp-AgiMentionMenu" role="listbox" aria-label={trans.__('Mentions')}>
      {withHeadings(props.menu.items).map(line => {
        if ('heading' in line) {
          return (
            <li key={`heading|${line.heading}`} role="presentation" className="jp-AgiMentionMenu-heading">
              {line.heading}
            </li>
          );
        }
        const { candidate: item, index: i } = line;
        return (
          <li
            key={`${item.kind}|${item.server ?? ''}|${item.ref}`}
            role="option"
            aria-selected={i === props.menu.index}
            className={i === props.menu.index ? 'jp-AgiMentionMenu-item jp-mod-active' : 'jp-AgiMentionMenu-item'}
            data-kind={item.kind}
            title={item.detail ? `${item.ref}: ${item.detail}` : item.ref}
            onMouseDown={e => {
              e.preventDefault(); // keep the focus in the message box
              props.choose(item);
            }}
          >
            <span className="jp-AgiMentionChip-kind">{item.kind}</span>
            <span className="jp-AgiMentionMenu-label">{item.label}</span>
            <span className="jp-AgiMentionMenu-detail jp-AgiDim">{item.detail}</span>
          </li>
        );
      })}
    </ul>
  );
}

export function Composer(props: { snap: Snapshot; model: PanelModel }): JSX.Element {
  const trans = useTrans();
  const { snap, model } = props;
  const [text, setText] = useState('');
  const [picked, setPicked] = useState<Mention[]>([]);
  const [menu, setMenu] = useState<Menu | null>(null);
  const [images, setImages] = useState<Attachment[]>([]);
  const [note, setNote] = useState<string | null>(null);
  const area = useRef<HTMLTextAreaElement>(null);
  const box = useRef<HTMLDivElement>(null);
  const asked = useRef(0);
  const running = activeRuns(snap.chat).length > 0;
  // Stop with cells the agent started still running: leave them running, or interrupt them.
  const [choosing, setChoosing] = useState(false);
  const [stopped, setStopped] = useState('');

  const stop = (interrupt: boolean): void => {
    setChoosing(false);
    void model.stop(interrupt).then(cells => setStopped(cellsNote(cells, trans)));
  };
  const onStop = (): void => {
    if (mayHaveCellsRunning(snap.chat)) {
      setChoosing(true);
    } else {
      stop(false);
    }
  };

  const lookUp = (value: string, caret: number): void => {
    const typed = mentionAt(value, caret);
    const source = model.mentionSource;
    const n = ++asked.current;
    if (!typed || !source) {
      setMenu(null);
      return;
    }
    void source.candidates(snap.project, snap.notebookPath, typed.query).then(items => {
      if (n === asked.current) {
        setMenu(items.length ? { typed, items, index: 0 } : null);
      }
    });
  };

  const choose = (candidate: Candidate): void => {
    const el = area.current;
    if (!menu || !el) {
      return;
    }
    const next = pick(text, el.selectionStart ?? text.length, menu.typed, candidate);
    asked.current += 1;
    setMenu(null);
    setText(next.text);
    setPicked(current => [...current, candidate]);
    requestAnimationFrame(() => {
      el.focus();
      el.setSelectionRange(next.caret, next.caret);
    });
  };

  const addFile = (path: string): void => {
    const ref = inProject(path, snap.project);
    setPicked(current => [...current, { kind: ref.endsWith('.ipynb') ? 'notebook' : 'file', ref, label: ref }]);
    setText(current => `${current}${current && !current.endsWith(' ') ? ' ' : ''}@${ref} `);
  };

  const addImages = (added: Attachment[]): void => {
    setImages(current => {
      const { attached, refused } = attach(current, added);
      setNote(refused.length ? refusalText(refused, trans) : null);
      return attached;
    });
  };

  const addPath = (path: string): void => {
    const mime = imageTypeOf(path);
    const read = model.readFile;
    if (!mime || !read) {
      addFile(path);
      return;
    }
    void read(path)
      .then(data => addImages([fromBase64(path.split('/').pop() ?? path, mime, data)]))
      .catch(() => setNote(trans.__('%1 could not be read', path)));
  };

  const addFiles = (files: File[]): void => {
    void Promise.all(files.map(readImage)).then(addImages);
  };

  useEffect(() => {
    const el = box.current;
    if (!el) {
      return;
    }
    const over = (event: Event): void => {
      const drag = event as LuminoDrag;
      if (drag.mimeData?.hasData(CONTENTS_MIME)) {
        event.preventDefault();
        event.stopPropagation();
        drag.dropAction = drag.proposedAction;
      }
    };
    const drop = (event: Event): void => {
      const drag = event as LuminoDrag;
      if (!drag.mimeData?.hasData(CONTENTS_MIME)) {
        return;
      }
      over(event);
      const paths = drag.mimeData.getData(CONTENTS_MIME);
      (Array.isArray(paths) ? paths : [paths]).filter(p => typeof p === 'string').forEach(p => addPath(p as string));
    };
    const events: [string, (e: Event) => void][] = [
      ['lm-dragenter', over],
      ['lm-dragover', over],
      ['lm-drop', drop]
    ];
    events.forEach(([name, fn]) => el.addEventListener(name, fn));
    return () => events.forEach(([name, fn]) => el.removeEventListener(name, fn));
  });

  const send = (): void => {
    const prompt = text.trim();
    if (!prompt) {
      return;
    }
    const mentions = mentionsToSend(prompt, picked);
    const kept = picked;
    setStopped('');
    const attached = images;
    setText('');
    setPicked([]);
    setImages([]);
    setNote(null);
    setMenu(null);
    if (snap.tab !== 'chat') {
      model.setTab('chat');
    }
    void model.send(prompt, {}, mentions, attached).then(sent => {
      if (!sent) {
        setText(current => current || prompt); // not taken: give the text back to fix and resend
        setPicked(current => (current.length ? current : kept));
        setImages(current => (current.length ? current : attached));
      }
    });
  };

  const onMenuKey = (e: React.KeyboardEvent, open: Menu): boolean => {
    const move = (by: number): void => setMenu({ ...open, index: (open.index + by + open.items.length) % open.items.length });
    if (e.key === 'ArrowDown') {
      move(1);
    } else if (e.key === 'ArrowUp') {
      move(-1);
    } else if (e.key === 'Enter' || e.key === 'Tab') {
      const chosen = open.items[open.index];
      if (chosen) {
        choose(chosen);
      }
    } else if (e.key === 'Escape') {
      asked.current += 1;
      setMenu(null);
    } else {
      return false;
    }
    e.preventDefault();
    e.stopPropagation();
    return true;
  };

  const placeholder = snap.sessionId
    ? trans.__('Ask the agent… (Enter sends, Shift+Enter: new line)')
    : trans.__('Ask to start a new session…');
  const shown = picked.filter((m, i) => text.includes(`@${m.label}`) && picked.findIndex(o => o.label === m.label && o.kind === m.kind) === i);
  return (
    <div
      className="jp-AgiComposer"
      ref={box}
      onDragOver={e => {
        if (Array.from(e.dataTransfer.types).includes('Files')) {
          e.preventDefault(); // a file from the desktop may be dropped here
        }
      }}
      onDrop={e => {
        const files = imageFiles(e.dataTransfer);
        if (files.length) {
          e.preventDefault();
          addFiles(files);
        }
      }}
    >
      {images.length ? (
        <div className="jp-AgiImageChips">
          {images.map(image => (
            <ImageChip key={image.key} image={image} onRemove={() => setImages(current => current.filter(o => o !== image))} />
          ))}
        </div>
      ) : null}
      {note ? (
        <div className="jp-AgiComposer-note jp-AgiDim" role="status">
          {note}
        </div>
      ) : null}
      {shown.length ? (
        <div className="jp-AgiMentionChips">
          {shown.map(m => (
            <MentionChip
              key={`${m.kind}|${m.ref}`}
              kind={m.kind}
              label={m.label}
              title={m.kind === 'cell' ? `${m.notebook_path ?? ''} ${m.ref}` : m.ref}
              onRemove={() => {
                setPicked(current => current.filter(o => o !== m));
                setText(current => current.split(`@${m.label}`).join(m.label));
              }}
            />
          ))}
        </div>
      ) : null}
      {menu ? <MentionMenu menu={menu} choose={choose} /> : null}
      <textarea
        ref={area}
        className="jp-mod-styled jp-AgiPrompt"
        value={text}
        rows={3}
        placeholder={placeholder}
        aria-label={trans.__('Message')}
        aria-autocomplete="list"
        onChange={e => {
          setText(e.target.value);
          lookUp(e.target.value, e.target.selectionStart ?? e.target.value.length);
        }}
        onPaste={e => {
          const files = imageFiles(e.clipboardData);
          if (files.length) {
            e.preventDefault(); // the image is attached, not pasted as text
            addFiles(files);
          }
        }}
        onBlur={() => {
          asked.current += 1;
          setMenu(null);
        }}
        onKeyDown={e => {
          if (menu && onMenuKey(e, menu)) {
            return;
          }
          if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            send();
          }
        }}
      />
      {choosing && running ? (
        <div className="jp-AgiStopChoice" role="group" aria-label={trans.__('Stop with cells running')}>
          <span className="jp-AgiStopChoice-text">{trans.__('A cell the agent ran is still running.')}</span>
          <Button small className="jp-mod-styled jp-mod-reject jp-AgiStopChoice-leave" onClick={() => stop(false)}
            title={trans.__('Stop the answer; the cell goes on in its kernel')}>
            {trans.__('Stop')}
          </Button>
          <Button small className="jp-mod-styled jp-mod-warn jp-AgiStopChoice-interrupt" onClick={() => stop(true)}
            title={trans.__('Stop the answer and interrupt the cell')}>
            {trans.__('Stop and interrupt')}
          </Button>
          <Button small minimal className="jp-AgiStopChoice-back" onClick={() => setChoosing(false)}
            aria-label={trans.__('Keep going')} title={trans.__('Keep going')}>
            ×
          </Button>
        </div>
      ) : null}
      {stopped ? (
        <div className="jp-AgiStopCells jp-AgiDim" role="status">
          {stopped}
        </div>
      ) : null}
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
          onClick={onStop}
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
