/**
 * Markdown through JupyterLab's rendermime (the same renderer as notebook Markdown cells, with
 * its code highlighting), with the model untrusted so any HTML in an answer is sanitized, never
 * injected. Code blocks get Copy / Insert buttons (`codeblocks.ts`). A streaming text is
 * re-rendered at most every `THROTTLE_MS`, one render at a time.
 */

import { MimeModel, type IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import React, { useContext, useEffect, useRef } from 'react';

import { CodeActionsContext, decorateCodeBlocks } from './codeblocks';
import { useTrans } from './i18n';

const THROTTLE_MS = 60;

export const RenderMimeContext = React.createContext<IRenderMimeRegistry | null>(null);

export function Markdown(props: { text: string; className?: string }): JSX.Element {
  const rendermime = useContext(RenderMimeContext);
  const actions = useContext(CodeActionsContext);
  const trans = useTrans();
  const host = useRef<HTMLDivElement>(null);
  const renderer = useRef<IRenderMime.IRenderer | null>(null);
  const latest = useRef(props.text);
  const busy = useRef(false);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);

  latest.current = props.text;

  useEffect(() => {
    if (!rendermime || !host.current) {
      return;
    }
    const created = rendermime.createRenderer('text/markdown');
    renderer.current = created;
    host.current.appendChild(created.node);
    return () => {
      renderer.current = null;
      if (timer.current !== null) {
        clearTimeout(timer.current);
      }
      created.dispose();
    };
  }, [rendermime]);

  useEffect(() => {
    const render = async (): Promise<void> => {
      timer.current = null;
      const target = renderer.current;
      if (!target || busy.current) {
        return;
      }
      busy.current = true;
      const text = latest.current;
      try {
        await target.renderModel(new MimeModel({ data: { 'text/markdown': text }, trusted: false }));
        if (actions) {
          decorateCodeBlocks(target.node, actions, trans);
        }
        host.current?.setAttribute('data-rendered-length', String(text.length));
      } catch {
        // a broken render leaves the previous one; the next update tries again
      } finally {
        busy.current = false;
      }
      if (latest.current !== text && renderer.current === target) {
        schedule();
      }
    };
    const schedule = (): void => {
      if (timer.current === null) {
        timer.current = setTimeout(() => void render(), THROTTLE_MS);
      }
    };
    schedule();
  }, [props.text, rendermime, actions, trans]);

  if (!rendermime) {
    return <div className={`jp-AgiMarkdown jp-AgiMarkdown-plain ${props.className ?? ''}`}>{props.text}</div>;
  }
  return <div ref={host} className={`jp-AgiMarkdown ${props.className ?? ''}`} data-text-length={props.text.length} />;
}
