import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { isJsonObject, JsonObject, JsonValue } from '../../util/json';
import { parseYamlDocuments } from '../../util/yaml';
import { createPatch } from '../../patch/diff';
import { Helm, helm, helmAvailable, newHelm, ROOT, skipNotice } from './helm';

/*
 * charts/modrule with the real Helm binaries: it renders bundle.yaml (the one source, built from config/) changed
 * only by the values, lints strictly and refuses values of the wrong type. Install and uninstall on a real API
 * server: test/e2e/helm.e2e.ts.
 */

const available = helmAvailable();
if (!available) skipNotice();
const describeHelm = available ? describe : describe.skip;

const CHART = join(ROOT, 'charts', 'modrule');
const KEEP = { 'helm.sh/resource-policy': 'keep' };
const tmp = mkdtempSync(join(tmpdir(), 'modrule-chart-values-'));

const objects = (text: string): JsonObject[] => parseYamlDocuments(text).filter(isJsonObject);
const id = (o: JsonObject): string =>
  `${String(o.kind)}/${String((o.metadata as JsonObject).namespace ?? '')}/${String((o.metadata as JsonObject).name)}`;
const byId = (list: JsonObject[]): Map<string, JsonObject> => new Map(list.map((o) => [id(o), o]));

/** The bundle as the chart installs it: its own namespace only, and the CRD kept on uninstall (crds.keep). */
function bundleAsChart(bundle: JsonObject[], keep = true): JsonObject[] {
  const namespace = (bundle.find((o) => o.kind === 'Deployment')!.metadata as JsonObject).namespace;
  return bundle
    .filter((o) => o.kind !== 'Namespace' || (o.metadata as JsonObject).name === namespace)
    .map((o) => {
      if (o.kind !== 'CustomResourceDefinition' || !keep) return o;
      const meta = o.metadata as JsonObject;
      return {
        ...o,
        metadata: { ...meta, annotations: { ...((meta.annotations as JsonObject) ?? {}), ...KEEP } },
      };
    });
}

const byPath = (ops: JsonObject[]): JsonObject[] =>
  [...ops].sort((x, y) => (String(x.path) < String(y.path) ? -1 : String(x.path) > String(y.path) ? 1 : 0));

/** What changed between two renders, per object: added and removed objects, and each changed object's patch. */
function changes(from: JsonObject[], to: JsonObject[]): Record<string, JsonValue> {
  const a = byId(from);
  const b = byId(to);
  const out: Record<string, JsonValue> = {};
  for (const [key, o] of b) {
    const before = a.get(key);
    if (!before) out[key] = 'added';
    else {
      // In path order: the chart writes keys sorted, the bundle as config/ has them.
      const patch = byPath(createPatch(before, o) as unknown as JsonObject[]);
      if (patch.length > 0) out[key] = patch;
    }
  }
  for (const key of a.keys()) if (!b.has(key)) out[key] = 'removed';
  return out;
}

function kubectl(): string | null {
  // envtest's kubectl (.ci/run unpacks it before npm test), else one on PATH.
  const assets = join(
    process.env.KUBEBUILDER_ASSETS || process.env.MODRULE_ENVTEST_BIN || '/tmp/modrule-envtest-1.37/bin',
    'kubectl',
  );
  if (existsSync(assets)) return assets;
  return spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0 ? 'kubectl' : null;
}

describeHelm.each([3, 4] as const)('charts/modrule with Helm %i', (major) => {
  let h: Helm;
  let defaults: JsonObject[];
  const bundle = objects(readFileSync(join(ROOT, 'bundle.yaml'), 'utf8'));

  async function render(values: JsonObject = {}): Promise<JsonObject[]> {
    const file = join(tmp, `values-${Object.keys(values).join('-') || 'none'}-${major}.yaml`);
    writeFileSync(file, stringify(values));
    const r = await helm(h, ['template', 'modrule', CHART, '-f', file]);
    if (r.code !== 0) throw new Error(`helm template -f ${JSON.stringify(values)}: ${r.stderr}`);
    return objects(r.stdout);
  }

  beforeAll(async () => {
    h = newHelm(major);
    defaults = await render();
  });

  it('renders bundle.yaml by default, object by object (plus helm.sh/resource-policy: keep on the CRD)', () => {
    expect([...byId(defaults).keys()].sort()).toEqual([...byId(bundleAsChart(bundle)).keys()].sort());
    expect(byId(defaults)).toEqual(byId(bundleAsChart(bundle)));
  });

  it('renders quietly: nothing on stderr (no note about symbolic links, whatever the values read)', async () => {
    const values = [
      'certificates.mode=cert-manager',
      'metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true',
      'references.owners=true,references.configMaps=true',
    ];
    for (const set of ['', ...values]) {
      const r = await helm(h, ['template', 'modrule', CHART, ...(set ? ['--set', set] : [])]);
      expect({ set, code: r.code, stderr: r.stderr }).toEqual({ set, code: 0, stderr: '' });
    }
  });

  it('renders exactly bundle.yaml with crds.keep=false', async () => {
    expect(byId(await render({ crds: { keep: false } }))).toEqual(byId(bundleAsChart(bundle, false)));
  });

  it('passes helm lint --strict', async () => {
    for (const values of [
      [],
      ['--set', 'certificates.mode=cert-manager,metrics.serviceMonitor.enabled=true'],
    ]) {
      const r = await helm(h, ['lint', '--strict', CHART, ...values]);
      expect(r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
      expect(r.code).toBe(0);
    }
  });

  const D = 'Deployment/kubemod-system/kubemod-operator';
  // As config/default/kustomization.yaml names it (make bundle IMAGE=... changes it).
  const operatorPod = (o: JsonObject) => ((o.spec as JsonObject).template as JsonObject).spec as JsonObject;
  const bundleImage = String((operatorPod(byId(bundle).get(D)!).containers as JsonObject[])[0].image);
  const C = '/spec/template/spec/containers/0';
  const M = 'MutatingWebhookConfiguration//kubemod-mutating-webhook-configuration';
  const S = 'Service/kubemod-system/kubemod-webhook-service';
  const hooks = byId(bundle).get(M)!.webhooks as JsonObject[];
  const DRAGNET = hooks.findIndex((w) => w.name === 'dragnet.kubemod.io');
  const PODBINDING = hooks.findIndex((w) => w.name === 'podbinding.kubemod.io');
  /** Where a webhook's `kubernetes.io/metadata.name NotIn` expression is, and how many names it has. */
  const notInList = (hook: number): [number, number] => {
    const expressions = (hooks[hook].namespaceSelector as JsonObject).matchExpressions as JsonObject[];
    const index = expressions.findIndex(
      (e) => e.key === 'kubernetes.io/metadata.name' && e.operator === 'NotIn',
    );
    return [index, (expressions[index].values as string[]).length];
  };
  it.each<[string, JsonObject, Record<string, JsonValue>]>([
    [
      'image',
      { image: { repository: 'registry.example.com/modrule', tag: '1.2.3', pullPolicy: 'Always' } },
      {
        [D]: [
          { op: 'replace', path: `${C}/image`, value: 'registry.example.com/modrule:1.2.3' },
          { op: 'replace', path: `${C}/imagePullPolicy`, value: 'Always' },
        ],
      },
    ],
    [
      'image tag only',
      { image: { tag: '0.2.0' } },
      {
        [D]: [{ op: 'replace', path: `${C}/image`, value: `${bundleImage.replace(/:[^:/@]+$/, '')}:0.2.0` }],
      },
    ],
    ['replicas', { replicas: 3 }, { [D]: [{ op: 'replace', path: '/spec/replicas', value: 3 }] }],
    [
      'resources',
      { resources: { requests: { cpu: '50m', memory: '256Mi' }, limits: { memory: '1Gi' } } },
      {
        [D]: [
          { op: 'replace', path: `${C}/resources/requests/cpu`, value: '50m' },
          { op: 'replace', path: `${C}/resources/requests/memory`, value: '256Mi' },
          { op: 'replace', path: `${C}/resources/limits/memory`, value: '1Gi' },
          { op: 'remove', path: `${C}/resources/limits/cpu` },
        ],
      },
    ],
    [
      'scheduling',
      {
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'platform', effect: 'NoSchedule' }],
        affinity: { nodeAffinity: {} },
        priorityClassName: 'system-cluster-critical',
      },
      {
        [D]: [
          { op: 'add', path: '/spec/template/spec/nodeSelector', value: { 'kubernetes.io/os': 'linux' } },
          { op: 'add', path: '/spec/template/spec/priorityClassName', value: 'system-cluster-critical' },
          {
            op: 'add',
            path: '/spec/template/spec/tolerations',
            value: [{ key: 'dedicated', operator: 'Equal', value: 'platform', effect: 'NoSchedule' }],
          },
          { op: 'add', path: '/spec/template/spec/affinity/nodeAffinity', value: {} },
          { op: 'remove', path: '/spec/template/spec/affinity/podAntiAffinity' },
        ],
      },
    ],
    [
      'no PodDisruptionBudget',
      { podDisruptionBudget: { enabled: false } },
      { 'PodDisruptionBudget/kubemod-system/kubemod-operator': 'removed' },
    ],
    [
      'PodDisruptionBudget maxUnavailable',
      { podDisruptionBudget: { maxUnavailable: 1 } },
      {
        'PodDisruptionBudget/kubemod-system/kubemod-operator': [
          { op: 'add', path: '/spec/maxUnavailable', value: 1 },
          { op: 'remove', path: '/spec/minAvailable' },
        ],
      },
    ],
    [
      'log level',
      { logLevel: 'debug' },
      { [D]: [{ op: 'add', path: `${C}/args/1`, value: '--log-level=debug' }] },
    ],
    [
      'the patched-by record',
      { recordPatchedBy: true },
      { [D]: [{ op: 'add', path: `${C}/args/1`, value: '--record-patched-by' }] },
    ],
    [
      'webhook',
      {
        webhook: {
          failurePolicy: 'Fail',
          timeoutSeconds: 5,
          excludeNamespaces: ['monitoring', 'flux-system'],
        },
      },
      {
        [M]: [
          { op: 'replace', path: `/webhooks/${DRAGNET}/failurePolicy`, value: 'Fail' },
          { op: 'replace', path: `/webhooks/${DRAGNET}/timeoutSeconds`, value: 5 },
          ...[DRAGNET, PODBINDING].flatMap((hook) => {
            // Appended to the webhook's `kubernetes.io/metadata.name NotIn` list, after what config/ has there.
            const [index, length] = notInList(hook);
            const values = `/webhooks/${hook}/namespaceSelector/matchExpressions/${index}/values`;
            return [
              { op: 'add', path: `${values}/${length}`, value: 'monitoring' },
              { op: 'add', path: `${values}/${length + 1}`, value: 'flux-system' },
            ];
          }),
        ],
      },
    ],
    ['no namespace', { namespace: { create: false } }, { 'Namespace//kubemod-system': 'removed' }],
    [
      'references',
      {
        references: {
          owners: true,
          configMaps: true,
          secrets: true,
          ownerKinds: ['apps/ReplicaSet', 'batch/Job'],
        },
      },
      {
        [D]: [
          { op: 'add', path: `${C}/args/1`, value: '--allow-secret-references' },
          { op: 'add', path: `${C}/args/2`, value: '--owner-kinds=apps/ReplicaSet,batch/Job' },
        ],
        ...Object.fromEntries(
          ['owners', 'configmaps', 'secrets'].flatMap((n) => [
            [`ClusterRole//kubemod-operator-${n}`, 'added'],
            [`ClusterRoleBinding//kubemod-operator-${n}`, 'added'],
          ]),
        ),
      },
    ],
  ])('%s: changes exactly what the value says', async (_name, values, expected) => {
    const sorted = Object.fromEntries(
      Object.entries(expected).map(([k, v]) => [k, Array.isArray(v) ? byPath(v as JsonObject[]) : v]),
    );
    expect(changes(defaults, await render(values))).toEqual(sorted);
  });

  it('adds each opt-in RBAC of config/rbac/references as it is there', async () => {
    const rendered = byId(await render({ references: { owners: true } }));
    for (const o of objects(readFileSync(join(ROOT, 'config', 'rbac', 'references', 'owners.yaml'), 'utf8')))
      expect(rendered.get(id(o))).toEqual(o);
    expect([...rendered.keys()].filter((k) => k.includes('configmaps') || k.includes('secrets'))).toEqual([]);
  });

  it('puts a metrics port on the Service and a ServiceMonitor on it', async () => {
    // The bundle's own metrics port when config/ has one (container port 8081, named metrics or health), else the chart's.
    const isMetrics = (p: JsonObject) =>
      p.name === 'metrics' || [8081, 'metrics', 'health'].includes(p.targetPort as string | number);
    const bundlePorts = (byId(bundle).get(S)!.spec as JsonObject).ports as JsonObject[];
    const expected = bundlePorts.find(isMetrics) ?? {
      name: 'metrics',
      port: 8081,
      targetPort: 8081,
      protocol: 'TCP',
    };
    const withPort = await render({ metrics: { servicePort: true } });
    const ports = (byId(withPort).get(S)!.spec as JsonObject).ports as JsonObject[];
    expect(ports.filter(isMetrics)).toEqual([expected]);
    expect(changes(withPort, await render({ metrics: { servicePort: false } }))[S]).toEqual([
      { op: 'remove', path: `/spec/ports/${ports.findIndex(isMetrics)}` },
    ]);
    const monitored = await render({
      metrics: { serviceMonitor: { enabled: true, interval: '30s', labels: { release: 'prometheus' } } },
    });
    expect(byId(monitored).get(S)).toEqual(byId(withPort).get(S));
    const serviceLabels = (byId(bundle).get(S)!.metadata as JsonObject).labels as JsonObject;
    expect(byId(monitored).get('ServiceMonitor/kubemod-system/kubemod-operator')).toEqual({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: {
        name: 'kubemod-operator',
        namespace: 'kubemod-system',
        labels: { ...serviceLabels, release: 'prometheus' },
      },
      spec: {
        namespaceSelector: { matchNames: ['kubemod-system'] },
        selector: { matchLabels: serviceLabels },
        endpoints: [
          { port: expected.name, path: '/metrics', scheme: 'http', honorLabels: true, interval: '30s' },
        ],
      },
    });
  });

  const kubectlBin = kubectl();
  (kubectlBin ? it : it.skip)(
    'with certificates.mode=cert-manager renders what kubectl kustomize config/cert-manager builds',
    async () => {
      const r = spawnSync(kubectlBin!, ['kustomize', join(ROOT, 'config', 'cert-manager')], {
        encoding: 'utf8',
      });
      expect(r.status).toBe(0);
      const expected = bundleAsChart(objects(r.stdout));
      expect(byId(await render({ certificates: { mode: 'cert-manager' } }))).toEqual(byId(expected));
      const own = await render({
        certificates: {
          mode: 'cert-manager',
          certManager: { issuerRef: { kind: 'ClusterIssuer', name: 'corp-ca' } },
        },
      });
      expect(changes(await render({ certificates: { mode: 'cert-manager' } }), own)).toEqual({
        'Issuer/kubemod-system/kubemod-selfsigned-issuer': 'removed',
        'Certificate/kubemod-system/kubemod-webhook-server-cert': [
          { op: 'replace', path: '/spec/issuerRef/kind', value: 'ClusterIssuer' },
          { op: 'replace', path: '/spec/issuerRef/name', value: 'corp-ca' },
        ],
      });
    },
  );

  it.each([
    [['--set', 'replicas=two'], "- at '/replicas': got string, want null or integer"],
    [['--set', 'webhook.failurePolicy=Sometimes'], "- at '/webhook/failurePolicy': value must be one of"],
    [['--set', 'webhook.timeoutSeconds=60'], "- at '/webhook/timeoutSeconds': maximum: got 60, want 30"],
    [['--set', 'replica=3'], "- at '': additional properties 'replica' not allowed"],
    [['--set', 'crds.keep=maybe'], "- at '/crds/keep': got string, want boolean"],
  ])('refuses values of the wrong type or name (values.schema.json): %j', async (args, message) => {
    const r = await helm(h, ['template', 'modrule', CHART, ...args]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      "values don't meet the specifications of the schema(s) in the following chart(s):\nmodrule:\n",
    );
    expect(r.stderr).toContain(message);
  });
});

describe('charts/modrule', () => {
  it('has the version of the package, and reads bundle.yaml and config/cert-manager through links', () => {
    const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as JsonObject;
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as JsonObject;
    expect([chart.version, chart.appVersion]).toEqual([pkg.version, pkg.version]);
    expect(readFileSync(join(CHART, 'files', 'bundle.yaml'), 'utf8')).toBe(
      readFileSync(join(ROOT, 'bundle.yaml'), 'utf8'),
    );
    expect(existsSync(join(CHART, 'files', 'cert-manager', 'certificate.yaml'))).toBe(true);
  });
});
