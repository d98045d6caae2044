/**
 * The agent SDK of a session (DESIGN.md section 10): the choices of the new-session form's
 * selector, which one is preselected and what is sent, and the badge of a session or message
 * that runs on another SDK than `native`. Pure functions over `GET /sdks` and `GET /agents`.
 */

import { bundle, type Trans } from './i18n';
import { SdkName } from './openapi';
import type { AgentInfo, SdkInfo, SdkList } from './types';

/** `GET /sdks`: the SDKs and the project's default. */
export type SdkCatalogue = SdkList;

export interface SdkChoice {
  id: string;
  label: string;
  /** Not installed where the server runs (or unknown to it): shown, not selectable. */
  disabled: boolean;
  /** The tooltip: why it cannot run (e.g. the install command), else what it can do. */
  title: string;
}

export interface SdkSelection {
  choices: SdkChoice[];
  /** The selected SDK ('' while the list is not loaded). */
  value: string;
  /** Why the selected SDK cannot run here, or null. */
  warning: string | null;
  /** The `sdk` to create the session with; undefined lets the server pick. */
  send: string | undefined;
}

function capabilityLabels(trans: Trans): [keyof SdkInfo['capabilities'], string][] {
  return [
    ['queue_while_streaming', trans.__('takes messages while streaming')],
    ['interrupt', trans.__('interrupts cleanly')],
    ['tool_events', trans.__('shows tool calls')],
    ['full_history', trans.__('full history')]
  ];
}

export function sdkChoice(sdk: SdkInfo, trans: Trans = bundle()): SdkChoice {
  if (!sdk.available) {
    return {
      id: sdk.id,
      label: trans.__('%1 (not installed)', sdk.display_name),
      disabled: true,
      title: sdk.reason || trans.__('%1 is not installed', sdk.display_name)
    };
  }
  const can = capabilityLabels(trans)
    .filter(([key]) => sdk.capabilities[key])
    .map(([, label]) => label);
  return {
    id: sdk.id,
    label: sdk.display_name,
    disabled: false,
    title: can.length ? `${sdk.display_name}: ${can.join(', ')}` : sdk.display_name
  };
}

/** The SDK a new session gets unless the user picks one: the agent's own, else the default. */
export function preselectedSdk(catalogue: SdkCatalogue, agent: AgentInfo | undefined): string {
  return agent?.sdk || catalogue.default_sdk;
}

/**
 * The selector's state. `chosen` is what the user picked (null: untouched, so the selection
 * follows the agent). With the default agent and no pick nothing is sent: the server then
 * uses the default agent's own SDK, which the panel does not know, else the project's.
 */
export function sdkSelection(
  catalogue: SdkCatalogue | null,
  agents: AgentInfo[],
  agentName: string,
  chosen: string | null,
  trans: Trans = bundle()
): SdkSelection {
  if (!catalogue || !catalogue.sdks.length) {
    return { choices: [], value: '', warning: null, send: undefined };
  }
  const agent = agents.find(a => a.name === agentName);
  const value = chosen ?? preselectedSdk(catalogue, agent);
  const choices = catalogue.sdks.map(sdk => sdkChoice(sdk, trans));
  if (!choices.some(c => c.id === value)) {
    // An agent (or the configuration) names an SDK this server does not offer: show it as it
    // is, so creating the session explains the problem instead of silently running another.
    choices.push({
      id: value,
      label: trans.__('%1 (unknown here)', value),
      disabled: true,
      title: trans.__('this server offers no %1 SDK', value)
    });
  }
  const selected = choices.find(c => c.id === value);
  return {
    choices,
    value,
    warning: selected?.disabled ? selected.title : null,
    send: chosen !== null || agentName ? value : undefined
  };
}

/** The badge of a session or message: its SDK when it is not `native`, else null. */
export function sdkBadge(sdk: string | null | undefined): string | null {
  return sdk && sdk !== SdkName.NATIVE ? sdk : null;
}
