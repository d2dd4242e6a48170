import { Gauge, Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { keyOf, splitKey } from '../../util/meta';
import { RuleStore } from '../../store/rules';
import { Serving, StatusReporter, StatusSink } from '../status/reporter';

/*
 * What a rule that asked to be served natively shows: status.servedBy and the Ready condition's reason and message
 * (operator/native/controller.ts decides, this file words it). Which reasons are final is in docs/native.md.
 */

export const READY_REASON_NATIVE = 'Native';
export const READY_REASON_PENDING = 'NativePending';
export const READY_REASON_NOT_NATIVE = 'NotNative';
export const READY_REASON_REFUSED = 'NativeRefused';
export const READY_REASON_UNAVAILABLE = 'NativeUnavailable';
export const REFUSED_EVENT_REASON = 'NativePolicyRefused';

/** Served by the webhook in full, with the reason. */
export function webhookServing(reason: string, message: string): Serving {
  return { servedBy: 'Webhook', reason, message };
}

/** Accepted by the API server, not yet handed over. */
export function pendingServing(kind: string, policy: string): Serving {
  return webhookServing(
    READY_REASON_PENDING,
    `${kind} ${policy} accepted; the webhook hands the rule over shortly`,
  );
}

/**
 * What the dragnet registration does for a rule served natively: undefined while not known yet (not computed, or
 * no guard to check); null, its guards are checked before the call; else why every object of it still reaches the
 * webhook (the residual rule then decides there).
 */
export type NativeScope = string | null | undefined;

/**
 * Served natively: the policy, what the webhook keeps (objects a guard declines), and whether the dragnet's
 * registration checks the guards before calling the webhook.
 */
export function nativeServing(
  kind: string,
  policy: string,
  guards: readonly string[],
  net: NativeScope,
): Serving {
  let message = `served by the API server (${kind} ${policy})`;
  if (guards.length > 0) {
    message += `; the webhook keeps the objects the policy cannot decide exactly (${[...new Set(guards)].join('; ')})`;
    if (net === null) message += ', and only those reach it';
    else if (typeof net === 'string')
      message += `; every object of the rule still reaches the webhook: ${net}`;
  }
  return { servedBy: 'Native', reason: READY_REASON_NATIVE, message };
}

/** Where the rules that ask to be served natively are, right now. */
export type NativeState = 'native' | 'webhook' | 'pending';

/** How many of the rules asking (keys) are where, by their states. */
export function countStates(
  keys: Iterable<string>,
  states: ReadonlyMap<string, { native: boolean; acceptedAt?: number }>,
): Record<NativeState, number> {
  const out: Record<NativeState, number> = { native: 0, webhook: 0, pending: 0 };
  for (const key of keys) {
    const state = states.get(key);
    out[state?.native ? 'native' : state?.acceptedAt !== undefined ? 'pending' : 'webhook']++;
  }
  return out;
}

/** The gauge modrule_native_rules{state}, read at scrape time. */
export function nativeRulesGauge(
  registry: Registry,
  count: () => Record<NativeState, number>,
): Gauge<'state'> {
  return new Gauge({
    name: 'modrule_native_rules',
    help:
      'ModRules asking to be served natively, by state: native (the API server runs the policy), pending (policy ' +
      'accepted, hand-over in progress), webhook (does not fit, refused, unavailable: the webhook serves it in full).',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const counts = count();
      for (const state of ['native', 'webhook', 'pending'] as const) this.set({ state }, counts[state]);
    },
  });
}

/**
 * Records which path serves the rule; a change is reported (Ready reason, servedBy) with the rule's problems through
 * `sink` (default: the reporter).
 */
export function showServing(
  to: { status: StatusReporter | null; sink?: StatusSink | null; store: RuleStore },
  raw: JsonObject,
  serving: Serving | undefined,
): void {
  const { status, store } = to;
  if (!status?.setServing(raw, serving)) return;
  const { namespace, name } = splitKey(keyOf(raw));
  // A rule the store does not hold was refused: its problems stay what ClusterSync reported.
  const problems = store.ruleOf(namespace, name) ? [] : store.compileRule(raw).problems;
  (to.sink ?? status).report(raw, problems);
}
