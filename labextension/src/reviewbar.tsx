/**
 * The side panel's review bar for the notebook it follows: how many cells the agent changed
 * that are still to review, *Next change* (make the next changed cell active), *Keep all* and
 * *Undo all* (`cellreview.ts` does the work; a conflict of Undo all offers "Undo anyway").
 */

import React, { useCallback, useSyncExternalStore } from 'react';

import type { NotebookReview } from './cellreview';
import { useTrans } from './i18n';

export function ReviewBar(props: { review: NotebookReview; path: string | null }): JSX.Element | null {
  const trans = useTrans();
  const { review, path } = props;
  const subscribe = useCallback(
    (listener: () => void) => {
      const changed = (): void => listener();
      review.changed.connect(changed);
      return () => review.changed.disconnect(changed);
    },
    [review]
  );
  // The snapshot must be stable between changes: a string key of what is shown.
  const key = useSyncExternalStore(subscribe, () => {
    const notebook = review.of(path);
    if (!notebook) {
      return '';
    }
    const note = notebook.notes.get('') ?? notebook.notes.get('load');
    return JSON.stringify([notebook.cells.length, notebook.busy, note?.text ?? '', note?.force.length ?? 0]);
  });
  const notebook = review.of(path);
  if (!key || !notebook || path === null) {
    return null;
  }
  const note = notebook.notes.get('') ?? notebook.notes.get('load');
  if (!notebook.cells.length && !note) {
    return null;
  }
  const count = notebook.cells.length;
  const name = path.split('/').pop() ?? path;
  return (
    <div className="jp-AgiReviewBar" role="region" aria-label={trans.__('Agent changes to review')} data-count={count}>
      {count ? (
        <>
          <span className="jp-AgiReviewBar-text" title={path}>
            {count === 1 ? trans.__('1 changed cell in %1', name) : trans.__('%1 changed cells in %2', count, name)}
          </span>
          <span className="jp-AgiReviewBar-actions">
            <button type="button" className="jp-AgiReviewBar-next" disabled={notebook.busy} onClick={() => review.next(path)}>
              {trans.__('Next')}
            </button>
            <button
              type="button"
              className="jp-AgiReviewBar-keep"
              disabled={notebook.busy}
              title={trans.__('Keep every change of the agent in this notebook')}
              onClick={() => void review.keep(path)}
            >
              {trans.__('Keep all')}
            </button>
            <button
              type="button"
              className="jp-AgiReviewBar-undo"
              disabled={notebook.busy}
              title={trans.__('Put every changed cell back as it was (your own edits are kept)')}
              onClick={() => void review.undo(path)}
            >
              {trans.__('Undo all')}
            </button>
          </span>
        </>
      ) : null}
      {note ? (
        <span className="jp-AgiReviewBar-note">
          <span className="jp-AgiBlockError" role="alert">
            {note.text}
          </span>
          {note.force.length ? (
            <button type="button" className="jp-AgiReviewBar-force" disabled={notebook.busy} onClick={() => void review.undo(path, undefined, true)}>
              {trans.__('Undo anyway')}
            </button>
          ) : null}
        </span>
      ) : null}
    </div>
  );
}
