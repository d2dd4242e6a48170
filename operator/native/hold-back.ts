import { Counter, Registry } from 'prom-client';
import { messageOf } from '../../util/errors';
import { Logger } from '../../util/logger';
import { sleep } from '../../kube/backoff';
import { askProbe } from './api';
import { ProbeClient } from './types';

/*
 * A rule served natively whose edit is being admitted goes back to the webhook before the edit's write returns
 * (docs/native.md, "Edits"): its binding is deleted, and the admission waits until the API servers no longer run the
 * policy. The native probe (native/probe.ts) in the inverse sense proves it: a probe Event that no version of the
 * policy marks or refuses any more shows that the API server that answered it has dropped the binding.
 */

/** What taking a rule back to the webhook for an edit came to. */
export type HoldBack =
  /** The rule was not served natively (no binding of its policy): nothing to take back. */
  | { kind: 'none' }
  /** Its binding is gone and no API server probed runs the policy any more. */
  | { kind: 'out'; policy: string }
  /** Not shown out of force by the deadline (or the binding could not be deleted): why. */
  | { kind: 'unverified'; policy: string; reason: string };

/** How often an API server that still runs the policy is asked again. */
const PROBE_EVERY_MS = 50;

/**
 * Probes each API server until none runs the policy named `policy` (no version of it marks or refuses the probe), or
 * `until`. Resolves undefined when shown, else with why not: no namespace to probe in, or the API servers that still
 * run it (or could not be asked) and what they answered.
 */
export async function proveOutOfForce(
  targets: readonly ProbeClient[],
  policy: string,
  namespace: string | undefined,
  until: number,
): Promise<string | undefined> {
  if (namespace === undefined)
    return 'no namespace the policy sees is known to the operator, so no probe could be made';
  const left = new Map(targets.map((t) => [t.name, t]));
  const last = new Map<string, string>();
  for (;;) {
    await Promise.all(
      [...left.values()].map(async ({ name, client }) => {
        try {
          const answer = await askProbe(client, policy, namespace);
          if ('token' in answer && answer.token === undefined) left.delete(name);
          else last.set(name, 'token' in answer ? `still runs it (${answer.token})` : answer.refused);
        } catch (err) {
          last.set(name, messageOf(err));
        }
      }),
    );
    if (left.size === 0) return undefined;
    if (Date.now() + PROBE_EVERY_MS >= until) break;
    await sleep(PROBE_EVERY_MS);
  }
  const which = [...left.keys()].map((name) => `${name}: ${last.get(name) ?? 'not asked'}`).join('; ');
  return `${left.size} of ${targets.length} API server(s) not shown to have dropped it in time (${which})`;
}

/** What taking a policy out of force needs. */
export interface TakeOut {
  logger: Logger;
  counter: Counter<'result'> | null;
  /** Deletes the policy's bindings (as the operator's own deletion). */
  unbind: () => Promise<void>;
  targets: readonly ProbeClient[];
  /** A namespace the policy sees, to probe in (undefined: none known). */
  namespace: string | undefined;
}

/** Unbinds the policy of the rule `key` and proves it out of force by `until`; counted and logged either way. */
export async function takeOutOfForce(
  take: TakeOut,
  key: string,
  policy: string,
  until: number,
): Promise<HoldBack> {
  const started = Date.now();
  let reason: string | undefined;
  try {
    await take.unbind();
    reason = await proveOutOfForce(take.targets, policy, take.namespace, until);
  } catch (err) {
    reason = `its binding could not be deleted: ${messageOf(err)}`;
  }
  take.counter?.inc({ result: reason ? 'unverified' : 'out_of_force' });
  const fields = { rule: key, policy, ms: Date.now() - started };
  if (!reason) {
    take.logger.info('ModRule back on the webhook for an edit', fields);
    return { kind: 'out', policy };
  }
  take.logger.warn('the native policy of an edited ModRule was not shown out of force', {
    ...fields,
    reason,
  });
  return { kind: 'unverified', policy, reason };
}

/** modrule_native_edit_holdbacks_total{result}: edits of native rules, by whether the old policy was shown out. */
export function holdBackCounter(registry: Registry | undefined): Counter<'result'> | null {
  if (!registry) return null;
  const counter = new Counter({
    name: 'modrule_native_edit_holdbacks_total',
    help:
      'Edits of ModRules served natively, their policy taken out of force before the write returned: ' +
      'result out_of_force (proven by probes) or unverified (not proven in time; the writer was warned).',
    labelNames: ['result'],
    registers: [registry],
  });
  for (const result of ['out_of_force', 'unverified']) counter.inc({ result }, 0);
  return counter;
}
