/** Requests to the server's `agi/` routes with Jupyter's auth (token / XSRF) headers. */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { Transport } from './api';

/** Requests under `<base_url>agi/` with the server's auth (token / XSRF) headers. */
export function jupyterTransport(settings: ServerConnection.ISettings): Transport {
  const root = URLExt.join(settings.baseUrl, 'agi');
  return (path, init) => ServerConnection.makeRequest(`${root}/${path}`, init, settings);
}
