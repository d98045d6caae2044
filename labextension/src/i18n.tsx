/**
 * The panel's translatable strings: every string the panel shows goes through a JupyterLab
 * `TranslationBundle` of the `agi_jupyter` domain (`trans.__('…')`), from the `ITranslator`
 * the plugin receives; language packs can translate them. Pure modules take the bundle as an
 * argument; React components read it from `TransContext`.
 */

import { nullTranslator, type ITranslator, type TranslationBundle } from '@jupyterlab/translation';
import React from 'react';

export const DOMAIN = 'agi_jupyter';

export type Trans = TranslationBundle;

export function bundle(translator: ITranslator | null = null): Trans {
  return (translator ?? nullTranslator).load(DOMAIN);
}

export const TransContext = React.createContext<Trans>(bundle());

export function useTrans(): Trans {
  return React.useContext(TransContext);
}
