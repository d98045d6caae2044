/**
 * The panel's icons as JupyterLab `LabIcon`s (SVG): the panel's own, the pin, and one per run
 * and tool-call status. Status icons draw in `currentColor`, which the stylesheet sets from the
 * theme's success, error and warning colours, so they need no emoji font and follow the theme.
 */

import { LabIcon } from '@jupyterlab/ui-components';

import agiSvg from '../style/icons/agi.svg';

export const agiIcon = new LabIcon({ name: 'agi-jupyter:agi', svgstr: agiSvg });

function icon(name: string, body: string): LabIcon {
  const svgstr =
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16" ' +
    `fill="none" stroke="currentColor" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round">${body}</svg>`;
  return new LabIcon({ name: `agi-jupyter:${name}`, svgstr });
}

export const pinIcon = icon('pin', '<path d="M6 2h4l-.5 4 2.5 2.5H4L6.5 6z" fill="currentColor"/><path d="M8 8.5V14"/>');
export const unpinnedIcon = icon('unpinned', '<path d="M6 2h4l-.5 4 2.5 2.5H4L6.5 6z"/><path d="M8 8.5V14"/>');

const STATUS_ICONS: Record<string, LabIcon> = {
  queued: icon('status-queued', '<circle cx="8" cy="8" r="5.5"/>'),
  running: icon('status-running', '<path d="M8 2.5a5.5 5.5 0 1 1-5.5 5.5"/>'),
  waiting: icon('status-waiting', '<circle cx="8" cy="8" r="5.5"/><path d="M8 5v3l2 1.5"/>'),
  succeeded: icon('status-succeeded', '<path d="M3 8.5l3.2 3L13 4.5"/>'),
  failed: icon('status-failed', '<circle cx="8" cy="8" r="5.5"/><path d="M6 6l4 4M10 6l-4 4"/>'),
  cancelled: icon('status-cancelled', '<rect x="4" y="4" width="8" height="8" rx="1" fill="currentColor"/>'),
  denied: icon('status-denied', '<circle cx="8" cy="8" r="5.5"/><path d="M4.2 11.8l7.6-7.6"/>'),
  skipped: icon('status-skipped', '<path d="M3 4l5 4-5 4zM9 4l5 4-5 4z"/>')
};

/** The kind of a run or tool-call status: what its icon and colour are. */
export function statusKind(status: string): string {
  switch (status) {
    case 'succeeded':
    case 'completed':
    case 'complete':
      return 'succeeded';
    case 'failed':
    case 'error':
      return 'failed';
    case 'running':
    case 'streaming':
    case 'processing_webhook':
    case 'pending':
      return 'running';
    case 'waiting_webhook':
    case 'waiting_approval':
    case 'waiting_execution':
      return 'waiting';
    case 'cancelled':
    case 'denied':
    case 'skipped':
    case 'queued':
      return status;
    default:
      return 'queued';
  }
}

export function statusIcon(status: string): LabIcon {
  return STATUS_ICONS[statusKind(status)] as LabIcon;
}
