import { randomBytes } from 'node:crypto';
import { JsonObject } from '../../util/json';
import { LAST_APPLIED_ANNOTATION } from '../../rule/types';
import { KubeClient } from '../../kube/kube';
import { compileNative, defaultDragnetMatch, residualRule } from '../../native';
import { RuleStore } from '../../store/rules';
import { ResourceCatalog } from '../../scope/catalog';
import { computeScope, ScopeResult } from '../../scope/compute';
import { defaultConfigured } from '../../scope/defaults';
import { withScope } from '../../scope/entry';
import { sendsRequest } from '../../scope/sends';
import { remove } from './cluster';
import { probeWebhook } from './probes';
import { describeCluster, E2eCluster, startCluster } from './target';

/*
 * 10,000 native rules in 1,000 namespaces: the registration the operator computes for their residual rules (their
 * guards in the match conditions) is taken by a 1.37 API server, and sends a probe webhook exactly the requests it
 * predicts, with and without kubectl's last-applied annotation. Once from one template (it fits: one guard set),
 * once with 10,000 different guards (it coarsens, with a message, and still sends what it predicts). A control plane
 * of its own or an existing cluster (target.ts): only dry-run writes, and four namespaces removed at the end.
 */

const run = randomBytes(3).toString('hex');
const measured: Record<string, string> = {};

function residuals(distinct: boolean): { rules: ReturnType<RuleStore['allRules']>; names: string[] } {
  const names = Array.from({ length: 1000 }, (_, i) => `n-${run}-${String(i).padStart(4, '0')}`);
  const manifests: JsonObject[] = [];
  names.forEach((ns, n) => {
    for (let i = 0; i < 10; i++)
      manifests.push({
        apiVersion: 'api.kubemod.io/v1beta1',
        kind: 'ModRule',
        metadata: { name: `r${i}`, namespace: ns },
        spec: {
          type: 'Patch',
          match: [
            { select: '$.kind', matchValue: 'ConfigMap' },
            ...(distinct ? [{ select: `$.metadata.labels["k-${n}-${i}"]`, matchRegex: '^v' }] : []),
          ],
          patch: [{ op: 'add', path: `/metadata/labels/r${i}`, value: 'x' }],
        },
      });
  });
  const store = new RuleStore();
  store.replaceRules(manifests);
  for (const rule of store.allRules()) {
    const fit = compileNative(rule, { dragnet: defaultDragnetMatch() });
    if (!fit.fits) throw new Error(`${rule.key} does not fit`);
    store.serveNatively(rule, residualRule(rule, fit.guards));
  }
  return { rules: store.allRules(), names };
}

describeCluster('10,000 native rules in 1,000 namespaces on the API server', () => {
  let cp: E2eCluster;
  let admin: KubeClient;

  beforeAll(async () => {
    cp = await startCluster();
    admin = cp.admin();
  }, 120_000);

  afterAll(async () => {
    await cp?.stop();
    process.stderr.write(
      `native scale e2e:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
  });

  async function check(label: string, distinct: boolean): Promise<ScopeResult> {
    const { rules, names } = residuals(distinct);
    const started = Date.now();
    const result = computeScope({
      rules,
      clusterNamespace: 'kubemod-system',
      configured: defaultConfigured(),
      catalog: ResourceCatalog.builtin(),
    });
    const took = Date.now() - started;
    const probe = await probeWebhook(cp.webhookHost);
    const config = `modrule-native-scale-${label}-${run}`;
    try {
      const body = {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: { name: config },
        webhooks: [
          withScope(
            {
              name: 'probe.kubemod.io',
              admissionReviewVersions: ['v1'],
              sideEffects: 'None',
              failurePolicy: 'Fail',
              timeoutSeconds: 5,
              clientConfig: { url: probe.url, caBundle: Buffer.from(probe.ca).toString('base64') },
            },
            result.registration,
          ),
        ],
      };
      await admin.request('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', {
        body,
      });
      const sample = [names[0], names[499], names[999], `n-${run}-other`];
      for (const ns of sample)
        await admin
          .request('POST', '/api/v1/namespaces', {
            body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
          })
          .catch(() => undefined); // the second case meets the first one's
      await new Promise((r) => setTimeout(r, 1500)); // the API server picks the configuration up from its watch
      let sent = 0;
      for (const ns of sample)
        for (const [name, annotations] of [
          [`plain-${label}`, {}],
          [`applied-${label}`, { [LAST_APPLIED_ANNOTATION]: '{}\n' }],
        ] as Array<[string, JsonObject]>) {
          const object: JsonObject = {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name, namespace: ns, annotations },
          };
          const request = {
            operation: 'CREATE' as const,
            group: '',
            version: 'v1',
            resource: 'configmaps',
            namespace: ns,
            clusterScoped: false,
            namespaceLabels: { 'kubernetes.io/metadata.name': ns },
            object,
          };
          const predicted = sendsRequest(result.registration, result.clauses, request);
          if (predicted) sent++;
          probe.expect(`${ns}/configmaps/${name}`, predicted);
          await admin.request('POST', `/api/v1/namespaces/${ns}/configmaps`, {
            query: { dryRun: 'All' },
            body: object,
          });
        }
      expect(probe.mismatches()).toEqual([]);
      const size = JSON.stringify(body).length;
      measured[`${label}: compute / conditions / size / coarsened / sent as predicted`] =
        `${took} ms / ${result.registration.matchConditions.length} / ${Math.round(size / 1024)} KiB / ` +
        `${result.coarsened.length} steps / ${sent} of ${sample.length * 2}`;
      await remove(admin, `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${config}`);
      return result;
    } finally {
      await probe.close();
    }
  }

  test('one template: the guards fit once; only kubectl-applied objects of the rules namespaces are sent', async () => {
    const result = await check('template', false);
    expect(result.coarsened).toEqual([]);
    expect([...result.native.values()].every((why) => why === null)).toBe(true);
  }, 300_000);

  test('10,000 different guards: coarsened with a message per step and per rule, still as predicted', async () => {
    const result = await check('distinct', true);
    expect(result.coarsened.length).toBeGreaterThan(0);
    expect([...result.native.values()].some((why) => why !== null)).toBe(true);
  }, 300_000);
});
