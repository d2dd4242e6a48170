import { isJsonObject, JsonObject } from '../../util/json';
import { policyName, SERVE_ANNOTATION } from '../../native';
import { RuleStore } from '../../store/rules';
import { createKubeClient } from '../../kube/kube';
import { NativeController, NativeControllerOptions } from '../native/controller';
import { StatusReporter } from '../status/reporter';
import { ClusterSync } from '../rules/sync';
import { eventually } from './eventually';
import { FakeApiServer, FakeResource } from './fake-apiserver';
import { modRule, namespace } from './objects';
import { metadataOf } from '../../util/meta';
import { memoryLogger, LogLine } from '../../util/logger';

/*
 * The native controller wired as operator/start.ts wires it (ClusterSync feeding the store and telling the
 * controller, one StatusReporter), against a FakeApiServer, with its logs kept: for operator/native*.test.ts.
 */

/** The namespace the tests' rules live in (the fake holds it, so policies are probed there). */
export const NS = 'team';

/** What a test drives and looks at; `start` wires and starts it (after the test prepared the fake). */
export interface NativeHarness {
  api: FakeApiServer;
  store: RuleStore;
  native: NativeController;
  logs: LogLine[];
  /** Whether the store served the rule natively, after each change of the store (hand-overs and hand-backs). */
  nativeTimeline(rule: string): boolean[];
  start(options?: Partial<NativeControllerOptions>): Promise<void>;
}

/** Registers beforeEach/afterEach that give each test a fresh fake with namespace NS, and stop what it started. */
export function useNativeController(): NativeHarness {
  const stops: Array<() => Promise<void>> = [];
  const timeline: Array<ReadonlyMap<string, unknown>> = [];
  const h = {
    nativeTimeline: (rule: string) => timeline.map((natives) => natives.has(`${NS}/${rule}`)),
  } as NativeHarness;
  beforeEach(async () => {
    h.api = await FakeApiServer.start();
    h.api.put('namespaces', namespace(NS));
    h.api.put('namespaces', namespace('default'));
    h.store = new RuleStore();
    timeline.length = 0;
    h.store.onChange(() => timeline.push(h.store.nativeRules()));
    const log = memoryLogger();
    h.logs = log.lines;
    h.start = async (options = {}) => {
      const client = createKubeClient(h.api.access());
      const status = new StatusReporter({ client, logger: log.logger, backoffMs: 10 });
      const backoff = { initialMs: 10, maxMs: 50 };
      h.native = new NativeController({
        ...{ client, store: h.store, status, logger: log.logger, mode: 'opt-in', backoff },
        ...{ clusterNamespace: 'kubemod-system', podNamespace: 'kubemod-system' },
        ...{ settleMs: 30, retryMs: 50, ...options },
      });
      const rules = new ClusterSync({
        ...{ client, store: h.store, logger: log.logger, status, backoff },
        observer: h.native,
      });
      stops.push(
        () => rules.stop(),
        () => h.native.stop(),
        () => status.stop(),
      );
      rules.start();
      await h.native.start();
    };
  });
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
    await h.api.close();
  });
  return h;
}

/** A ModRule in NS, annotated to be served natively unless `native` is false. */
export function nativeRule(name: string, spec: JsonObject, native = true): JsonObject {
  const rule = modRule(NS, name, spec);
  if (native) (rule.metadata as JsonObject).annotations = { [SERVE_ANNOTATION]: 'true' };
  return rule;
}

/** A rule that fits a policy: labels every ConfigMap (as the e2e suite's). */
export function labelRule(name: string, label: string, value: string, native = true): JsonObject {
  return nativeRule(
    name,
    {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
      patch: [{ op: 'add', path: `/metadata/labels/${label}`, value }],
    },
    native,
  );
}

/** The name of the policy and binding of a rule in NS. */
export function policyOf(rule: string): string {
  return policyName({ namespace: NS, name: rule });
}

/** The rule's status as the fake holds it ({} before any). */
export function statusOf(api: FakeApiServer, rule: string): JsonObject {
  const status = api.get('modrules', NS, rule)?.status;
  return isJsonObject(status) ? status : {};
}

/** The rule's Ready condition as the fake holds it. */
export function readyOf(api: FakeApiServer, rule: string): JsonObject | undefined {
  const conditions = statusOf(api, rule).conditions;
  return Array.isArray(conditions)
    ? conditions.filter(isJsonObject).find((c) => c.type === 'Ready')
    : undefined;
}

const OWNED: Array<[FakeResource, string]> = [
  ['mutatingadmissionpolicies', 'MutatingAdmissionPolicy'],
  ['mutatingadmissionpolicybindings', 'MutatingAdmissionPolicyBinding'],
  ['validatingadmissionpolicies', 'ValidatingAdmissionPolicy'],
  ['validatingadmissionpolicybindings', 'ValidatingAdmissionPolicyBinding'],
];

/**
 * Resolves once the controller's watches of owned policies delivered everything written before the call: an owned
 * object of no rule is written to each kind in turn, and the controller's policiesVersion() must reach it (each
 * watch delivers in order).
 */
export async function ownedWatchesCaughtUp(h: NativeHarness): Promise<void> {
  for (const [resource, kind] of OWNED) {
    const barrier = h.api.put(resource, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind,
      metadata: {
        name: `barrier-${Date.now()}`,
        labels: { 'app.kubernetes.io/managed-by': 'modrule-operator' },
      },
      spec: {},
    });
    const rv = String(metadataOf(barrier).resourceVersion);
    await eventually(() => h.native.policiesVersion() === rv);
  }
}
