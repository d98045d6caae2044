/**
 * Inline completion in JupyterLab's own inline completer: an `IInlineCompletionProvider`
 * registered with the completion provider manager, answered by `POST /agi/v1/completions`.
 *
 * Each request waits out the debounce (the project's `completion.debounce_ms`, or the
 * `debounceMs` setting) and is superseded by the next one: its `AbortController` aborts the
 * wait or the HTTP request, and the server closes the model request when the connection
 * closes. The answer streams (NDJSON lines of the insertion so far) into the ghost text.
 * Lab's inline completer keeps its own rules: `suppressIfTabCompleterActive`, Tab to accept.
 * Settings (`schema/completion.json`, Lab's settings editor): enabled, model, debounce, the
 * languages it is off for, the cells around sent as context. A notebook whose metadata has
 * `"agi": {"completion": false}` gets none.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import {
  ICompletionProviderManager,
  type CompletionHandler,
  type IInlineCompletionContext,
  type IInlineCompletionItem,
  type IInlineCompletionList,
  type IInlineCompletionProvider
} from '@jupyterlab/completer';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { AgiClient } from './api';
import { type CompletionChunk, CompletionSource, type CompletionSettings, DEFAULT_SETTINGS, placeOf } from './completionsource';
import { agiIcon } from './icons';
import { jupyterTransport } from './transport';

export const PROVIDER_ID = 'agi-jupyter';
const PLUGIN_ID = 'agi-jupyter:completion';

/** The provider JupyterLab's inline completer asks. */
export class AgiInlineProvider implements IInlineCompletionProvider {
  readonly name = 'AGI';
  readonly identifier = PROVIDER_ID;
  readonly icon = agiIcon;
  // Lab's own per-provider settings: our debounce is applied in `CompletionSource` (the
  // project's), so Lab's is 0; fill-in-the-middle is what the server does.
  readonly schema = { default: { debouncerDelay: 0, timeout: 20_000, autoFillInMiddle: true } };
  private readonly streams = new Map<string, AsyncGenerator<CompletionChunk>>();
  private tokens = 0;

  constructor(readonly source: CompletionSource) {}

  async fetch(
    request: CompletionHandler.IRequest,
    context: IInlineCompletionContext
  ): Promise<IInlineCompletionList<IInlineCompletionItem>> {
    for (const stream of this.streams.values()) {
      void stream.return(undefined);
    }
    this.streams.clear();
    const lines = this.source.complete(placeOf(request, context.widget));
    const first = await lines.next();
    if (first.done || (first.value.done && !first.value.insertText)) {
      return { items: [] };
    }
    const token = `agi-${++this.tokens}`;
    if (!first.value.done) {
      this.streams.set(token, lines);
    }
    return { items: [{ insertText: first.value.insertText, isIncomplete: !first.value.done, token }] };
  }

  async *stream(token: string): AsyncGenerator<{ response: IInlineCompletionItem }> {
    const lines = this.streams.get(token);
    if (!lines) {
      return;
    }
    try {
      for await (const line of lines) {
        yield { response: { insertText: line.insertText, isIncomplete: !line.done, token } };
      }
    } finally {
      this.streams.delete(token);
    }
  }
}

function settingsOf(composite: Partial<CompletionSettings>): CompletionSettings {
  return { ...DEFAULT_SETTINGS, ...composite };
}

export const completionPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'AI inline completion (ghost text) in notebook cells and files, from /agi/v1/completions.',
  autoStart: true,
  requires: [ICompletionProviderManager],
  optional: [ISettingRegistry],
  activate: (app: JupyterFrontEnd, manager: ICompletionProviderManager, registry: ISettingRegistry | null) => {
    const source = new CompletionSource(new AgiClient(jupyterTransport(app.serviceManager.serverSettings)));
    manager.registerInlineProvider(new AgiInlineProvider(source));
    if (registry) {
      void registry.load(PLUGIN_ID).then(settings => {
        const apply = (): void => {
          source.settings = settingsOf(settings.composite as Partial<CompletionSettings>);
        };
        apply();
        settings.changed.connect(apply);
      });
    }
  }
};
