import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { JsonObject, JsonValue, isJsonObject } from '../util/json';
import { IGNORE_LABEL, SYSTEM_NAMESPACE } from '../rule/types';
import { buildKustomization } from './build';

const ROOT = path.resolve(__dirname, '..');
const BUNDLE = path.join(ROOT, 'bundle.yaml');
const bundleText = fs.readFileSync(BUNDLE, 'utf8');
const parsed = parseAllDocuments(bundleText);
const docs = parsed.map((d) => d.toJS() as JsonObject);

const NS = 'kubemod-system';
const LABEL_SELECTOR = {
  'app.kubernetes.io/component': 'kubemod-operator',
  'control-plane': 'controller-manager',
};
const DEFAULT_TARGETS = [
  'namespaces',
  'nodes',
  'configmaps',
  'persistentvolumeclaims',
  'persistentvolumes',
  'secrets',
  'services',
  'daemonsets',
  'deployments',
  'replicasets',
  'statefulsets',
  'horizontalpodautoscalers',
  'ingresses',
  'pods',
  'replicationcontrollers',
  'cronjobs',
  'jobs',
  'serviceaccounts',
  'clusterrolebindings',
  'clusterroles',
  'rolebindings',
  'roles',
];

// JSON-ish accessor for tests: obj('spec.template.spec') and the like.
function at(value: JsonValue | undefined, dotted: string): JsonValue | undefined {
  let v = value;
  for (const key of dotted.split('.')) {
    if (Array.isArray(v)) v = v[Number(key)];
    else if (isJsonObject(v)) v = v[key];
    else return undefined;
  }
  return v;
}

function find(kind: string, name: string): JsonObject {
  const found = docs.filter((d) => d.kind === kind && at(d, 'metadata.name') === name);
  if (found.length !== 1)
    throw new Error(`expected one ${kind} ${name} in bundle.yaml, found ${found.length}`);
  return found[0];
}

function kubectl(args: string[]): { ok: boolean; stdout: string; stderr: string } {
  const r = spawnSync('kubectl', args, { cwd: ROOT, encoding: 'utf8', timeout: 30000 });
  return { ok: r.status === 0, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}
const hasKubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
const hasCluster =
  hasKubectl &&
  spawnSync('kubectl', ['version', '--request-timeout=3s'], { encoding: 'utf8', timeout: 10000 }).status ===
    0;
const withKubectl = hasKubectl ? it : it.skip;
const withCluster = hasCluster ? it : it.skip;

describe('bundle.yaml', () => {
  it('parses as YAML, one Kubernetes object per document', () => {
    expect(parsed.flatMap((d) => d.errors)).toEqual([]);
    expect(docs.length).toBeGreaterThan(10);
    for (const d of docs) {
      expect(typeof d.apiVersion).toBe('string');
      expect(typeof d.kind).toBe('string');
      expect(typeof at(d, 'metadata.name')).toBe('string');
    }
  });

  it('is up to date with config/ (regenerate: node dist/bundle/build.js > bundle.yaml)', () => {
    expect(bundleText).toBe(buildKustomization(path.join(ROOT, 'config/default')));
  });

  withKubectl('is byte-identical to kubectl kustomize config/default', () => {
    const r = kubectl(['kustomize', 'config/default']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(bundleText);
  });

  withCluster('passes kubectl apply --dry-run=client', () => {
    const r = kubectl(['apply', '--dry-run=client', '-f', 'bundle.yaml']);
    expect({ ok: r.ok, stderr: r.stderr }).toEqual({ ok: true, stderr: '' });
  });

  it("creates the namespace first, the CRD before RBAC, and the webhooks last (kustomize's default order)", () => {
    const kinds = docs.map((d) => d.kind);
    expect(kinds.slice(0, 3)).toEqual(['Namespace', 'CustomResourceDefinition', 'ServiceAccount']);
    expect(kinds.indexOf('Deployment')).toBeGreaterThan(kinds.indexOf('ClusterRoleBinding'));
    expect(kinds.slice(-2)).toEqual(['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']);
  });

  it('needs no kustomize v5 field, so kubectl before 1.27 builds config/ and its overlays too', () => {
    for (const dir of ['default', 'namespace', 'crd', 'rbac', 'manager', 'webhook', 'cert-manager']) {
      const k = fs.readFileSync(path.join(ROOT, 'config', dir, 'kustomization.yaml'), 'utf8');
      expect([dir, /^sortOptions:/m.test(k)]).toEqual([dir, false]);
    }
  });

  it("puts every namespaced object in kubemod-system, but the read of the API servers' endpoints in default", () => {
    const clusterScoped = new Set([
      'Namespace',
      'CustomResourceDefinition',
      'ClusterRole',
      'ClusterRoleBinding',
      'MutatingWebhookConfiguration',
      'ValidatingWebhookConfiguration',
    ]);
    for (const d of docs) {
      if (clusterScoped.has(d.kind as string)) expect(at(d, 'metadata.namespace')).toBeUndefined();
      else if (at(d, 'metadata.name') === 'kubemod-operator-apiservers')
        expect([d.kind, at(d, 'metadata.namespace')]).toEqual([d.kind, 'default']);
      else expect([d.kind, at(d, 'metadata.namespace')]).toEqual([d.kind, NS]);
    }
  });
});

describe('namespaces', () => {
  it('labels kubemod-system ignored by the dragnet', () => {
    expect(at(find('Namespace', NS), 'metadata.labels')).toMatchObject({ [IGNORE_LABEL]: 'true' });
  });

  it('ships no other Namespace: kube-system cannot be deleted, so `kubectl delete -f bundle.yaml` would fail on it', () => {
    expect(docs.filter((d) => d.kind === 'Namespace').map((d) => at(d, 'metadata.name'))).toEqual([NS]);
  });

  it('enforces the restricted Pod Security profile on kubemod-system', () => {
    expect(at(find('Namespace', NS), 'metadata.labels')).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'restricted',
    });
  });
});

describe('operator Deployment', () => {
  const deployment = find('Deployment', 'kubemod-operator');
  const pod = at(deployment, 'spec.template.spec') as JsonObject;
  const containers = pod.containers as JsonObject[];
  const c = containers[0];

  it('runs two replicas that a rollout never takes below two', () => {
    expect(at(deployment, 'spec.replicas')).toBe(2);
    expect(at(deployment, 'spec.strategy.rollingUpdate.maxUnavailable')).toBe(0);
  });

  it("keeps KubeMod's immutable selector so it upgrades KubeMod's Deployment in place", () => {
    expect(at(deployment, 'spec.selector')).toEqual({ matchLabels: LABEL_SELECTOR });
    expect(at(deployment, 'spec.template.metadata.labels')).toMatchObject(LABEL_SELECTOR);
  });

  it('spreads replicas over nodes', () => {
    const terms = at(
      pod,
      'affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution',
    ) as JsonObject[];
    expect(terms).toHaveLength(1);
    expect(at(terms[0], 'podAffinityTerm.topologyKey')).toBe('kubernetes.io/hostname');
    expect(at(terms[0], 'podAffinityTerm.labelSelector.matchLabels')).toEqual(LABEL_SELECTOR);
  });

  it('runs `modrule operator` as its own service account', () => {
    expect(containers).toHaveLength(1);
    expect(c.args).toEqual(['operator']);
    expect(c.command).toBeUndefined();
    expect(pod.serviceAccountName).toBe('kubemod-operator');
  });

  it('exposes the webhook and metrics ports and probes /readyz and /healthz', () => {
    expect(c.ports).toEqual([
      { name: 'webhook', containerPort: 9443, protocol: 'TCP' },
      { name: 'metrics', containerPort: 8081, protocol: 'TCP' },
    ]);
    expect(at(c, 'readinessProbe.httpGet')).toEqual({ path: '/readyz', port: 8081 });
    expect(at(c, 'livenessProbe.httpGet')).toEqual({ path: '/healthz', port: 8081 });
  });

  it('knows its namespace from the downward API', () => {
    expect(c.env).toContainEqual({
      name: 'POD_NAMESPACE',
      valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } },
    });
  });

  it('sets resource requests and limits', () => {
    for (const key of ['requests.cpu', 'requests.memory', 'limits.cpu', 'limits.memory'])
      expect(typeof at(c, `resources.${key}`)).toBe('string');
    // The V8 heap cap must leave room under the memory limit for code, buffers and the re2 addon.
    const limitMi = Number(/^(\d+)Mi$/.exec(at(c, 'resources.limits.memory') as string)?.[1]);
    const nodeOptions = (c.env as JsonObject[]).find((e) => e.name === 'NODE_OPTIONS')?.value as string;
    const heapMi = Number(/--max-old-space-size=(\d+)/.exec(nodeOptions)?.[1]);
    expect(heapMi).toBeGreaterThan(0);
    expect(heapMi).toBeLessThanOrEqual(limitMi * 0.8);
  });

  it('is locked down: non-root, read-only root, no capabilities, no escalation, RuntimeDefault seccomp', () => {
    expect(at(pod, 'securityContext')).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(at(pod, 'securityContext.runAsUser')).toBeGreaterThan(0);
    expect(c.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });

  it('gives it a writable /tmp (self-signed certificates go to /tmp/k8s-webhook-server/serving-certs)', () => {
    expect(c.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
    expect(pod.volumes).toEqual([{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }]);
  });

  it('uses the image named in config/default and the Makefile, tagged with the package version', () => {
    const makefile = fs.readFileSync(path.join(ROOT, 'Makefile'), 'utf8');
    const image = /^IMAGE \?= (\S+)$/m.exec(makefile)?.[1];
    const kustomization = parseAllDocuments(
      fs.readFileSync(path.join(ROOT, 'config/default/kustomization.yaml'), 'utf8'),
    )[0].toJS() as JsonObject;
    const override = (kustomization.images as JsonObject[]).find((i) => i.name === 'modrule') as JsonObject;
    expect(image).toBe(`${override.newName}:${override.newTag}`);
    expect(c.image).toBe(image);
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as JsonObject;
    expect(override.newTag).toBe(pkg.version);
  });
});

describe('Service and PodDisruptionBudget', () => {
  const service = find('Service', 'kubemod-webhook-service');

  it('routes kubemod-webhook-service:443 to the webhook port 9443 and its metrics port to 8081', () => {
    expect(at(service, 'spec.selector')).toEqual(LABEL_SELECTOR);
    expect(at(service, 'spec.ports')).toEqual([
      { name: 'webhook', port: 443, targetPort: 9443, protocol: 'TCP' },
      { name: 'metrics', port: 8081, targetPort: 'metrics', protocol: 'TCP' },
    ]);
  });

  it('asks Prometheus to scrape /metrics over plain HTTP on the metrics port', () => {
    expect(at(service, 'metadata.annotations')).toEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '8081',
      'prometheus.io/path': '/metrics',
      'prometheus.io/scheme': 'http',
    });
  });

  it('keeps at least one replica through voluntary disruptions', () => {
    const pdb = find('PodDisruptionBudget', 'kubemod-operator');
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(pdb.spec).toEqual({ minAvailable: 1, selector: { matchLabels: LABEL_SELECTOR } });
  });
});

describe('webhook configurations', () => {
  const mutating = find('MutatingWebhookConfiguration', 'kubemod-mutating-webhook-configuration');
  const validating = find('ValidatingWebhookConfiguration', 'kubemod-validating-webhook-configuration');
  const hooks = [...(mutating.webhooks as JsonObject[]), ...(validating.webhooks as JsonObject[])];
  const hook = (name: string): JsonObject => hooks.find((h) => h.name === name) as JsonObject;
  const ignoreSelector = {
    key: IGNORE_LABEL,
    operator: 'NotIn',
    values: ['true'],
  };

  it("has the four KubeMod webhooks and the dragnet's probe", () => {
    expect((mutating.webhooks as JsonObject[]).map((h) => h.name)).toEqual([
      'mmodrule.kubemod.io',
      'dragnet.kubemod.io',
      'dragnet-probe.kubemod.io',
      'podbinding.kubemod.io',
    ]);
    expect((validating.webhooks as JsonObject[]).map((h) => h.name)).toEqual(['vmodrule.kubemod.io']);
  });

  it.each([
    ['dragnet.kubemod.io', '/dragnet-webhook'],
    ['mmodrule.kubemod.io', '/mutate-api-kubemod-io-v1beta1-modrule'],
    ['vmodrule.kubemod.io', '/validate-api-kubemod-io-v1beta1-modrule'],
    ['podbinding.kubemod.io', '/podbinding-webhook'],
    ['dragnet-probe.kubemod.io', '/dragnet-probe'],
  ])('%s calls kubemod-webhook-service at %s, caBundle left to the operator', (name, servicePath) => {
    const h = hook(name);
    expect(h.clientConfig).toEqual({
      service: { name: 'kubemod-webhook-service', namespace: NS, path: servicePath },
    });
    expect(h.admissionReviewVersions).toEqual(['v1', 'v1beta1']);
    expect(h.matchPolicy).toBe('Equivalent');
    expect(h.timeoutSeconds).toBeGreaterThanOrEqual(1);
    expect(h.timeoutSeconds).toBeLessThanOrEqual(10);
  });

  it('sends the default target resources to the dragnet on CREATE, UPDATE and DELETE', () => {
    const h = hook('dragnet.kubemod.io');
    expect(h.rules).toEqual([
      {
        apiGroups: ['*'],
        apiVersions: ['*'],
        operations: ['CREATE', 'UPDATE', 'DELETE'],
        resources: DEFAULT_TARGETS,
        scope: '*',
      },
    ]);
    expect(h).toMatchObject({
      failurePolicy: 'Ignore',
      reinvocationPolicy: 'IfNeeded',
      sideEffects: 'None',
      timeoutSeconds: 10,
    });
  });

  it.each(['dragnet.kubemod.io', 'podbinding.kubemod.io'])(
    '%s skips ignored namespaces and never sees the operator namespace or kube-system',
    (name) => {
      expect(at(hook(name), 'namespaceSelector.matchExpressions')).toEqual([
        ignoreSelector,
        { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [NS, SYSTEM_NAMESPACE] },
      ]);
    },
  );

  it('annotates pods on binding without ever blocking scheduling', () => {
    const h = hook('podbinding.kubemod.io');
    expect(h.rules).toEqual([
      {
        apiGroups: [''],
        apiVersions: ['v1'],
        operations: ['CREATE'],
        resources: ['pods/binding'],
        scope: 'Namespaced',
      },
    ]);
    expect(h).toMatchObject({ failurePolicy: 'Ignore', sideEffects: 'NoneOnDryRun' });
  });

  it.each(['mmodrule.kubemod.io', 'vmodrule.kubemod.io'])(
    '%s sees every ModRule, including the cluster-wide ones in kubemod-system, and fails closed',
    (name) => {
      const h = hook(name);
      expect(h.namespaceSelector).toBeUndefined();
      expect(h.rules).toEqual([
        {
          apiGroups: ['api.kubemod.io'],
          apiVersions: ['v1beta1'],
          operations: ['CREATE', 'UPDATE'],
          resources: ['modrules'],
          scope: 'Namespaced',
        },
      ]);
      expect(h).toMatchObject({ failurePolicy: 'Fail' });
    },
  );

  it('vmodrule.kubemod.io may write the dragnet registration, never for a dry run, within 10 s', () => {
    expect(hook('vmodrule.kubemod.io')).toMatchObject({ sideEffects: 'NoneOnDryRun', timeoutSeconds: 10 });
    expect(hook('mmodrule.kubemod.io')).toMatchObject({ sideEffects: 'None' });
  });

  it('the probe sees only Events labelled with the token the operator writes, and never blocks one', () => {
    expect(hook('dragnet-probe.kubemod.io')).toMatchObject({
      failurePolicy: 'Ignore',
      sideEffects: 'None',
      objectSelector: { matchLabels: { 'modrule.kubemod.io/dragnet-probe': 'installed' } },
      rules: [
        {
          apiGroups: [''],
          apiVersions: ['v1'],
          operations: ['CREATE'],
          resources: ['events'],
          scope: 'Namespaced',
        },
      ],
    });
  });
});

describe('RBAC', () => {
  const rbacKinds = new Set(['ClusterRole', 'Role']);
  const roles = docs.filter((d) => rbacKinds.has(d.kind as string));
  const rules = roles.flatMap((r) => (r.rules as JsonObject[]).map((rule) => ({ role: r, rule })));

  it("has one ClusterRole and one Role named kubemod-operator, and the read of the API servers' endpoints", () => {
    expect(roles.map((r) => `${r.kind}/${at(r, 'metadata.name')}`).sort()).toEqual([
      'ClusterRole/kubemod-operator',
      'Role/kubemod-operator',
      'Role/kubemod-operator-apiservers',
    ]);
    // In default, and only get and list of EndpointSlices there (the kubernetes Service's: one per API server).
    const apiservers = roles.find((r) => at(r, 'metadata.name') === 'kubemod-operator-apiservers')!;
    expect(at(apiservers, 'metadata.namespace')).toBe('default');
    expect(apiservers.rules).toEqual([
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list'] },
    ]);
  });

  it('uses no wildcards', () => {
    for (const { rule } of rules)
      for (const field of ['apiGroups', 'resources', 'verbs', 'resourceNames'])
        expect(((rule[field] as string[] | undefined) ?? []).filter((v) => v.includes('*'))).toEqual([]);
  });

  it('only reads ModRules, namespaces and nodes, and writes ModRule status', () => {
    const cr = find('ClusterRole', 'kubemod-operator');
    const verbsFor = (group: string, resource: string): string[] =>
      (cr.rules as JsonObject[])
        .filter(
          (r) => (r.apiGroups as string[]).includes(group) && (r.resources as string[]).includes(resource),
        )
        .flatMap((r) => r.verbs as string[])
        .sort();
    expect(verbsFor('api.kubemod.io', 'modrules')).toEqual(['get', 'list', 'watch']);
    expect(verbsFor('api.kubemod.io', 'modrules/status')).toEqual(['patch', 'update']);
    expect(verbsFor('', 'namespaces')).toEqual(['get', 'list', 'watch']);
    expect(verbsFor('', 'nodes')).toEqual(['get', 'list', 'watch']);
    expect(verbsFor('', 'pods')).toEqual(['get', 'list', 'patch', 'watch']);
    expect(verbsFor('', 'events')).toEqual(['create', 'patch']);
    expect(verbsFor('events.k8s.io', 'events')).toEqual(['create', 'patch']);
    expect(verbsFor('', 'secrets')).toEqual([]);
  });

  it('may only get/list/watch/update/patch its own two webhook configurations (by name)', () => {
    const webhookRules = rules.filter(
      ({ rule }) =>
        (rule.apiGroups as string[]).includes('admissionregistration.k8s.io') &&
        (rule.resources as string[]).some((r) => r.endsWith('webhookconfigurations')),
    );
    expect(webhookRules.map(({ rule }) => rule)).toEqual([
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['mutatingwebhookconfigurations'],
        resourceNames: ['kubemod-mutating-webhook-configuration'],
        verbs: ['get', 'list', 'watch', 'update', 'patch'],
      },
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['validatingwebhookconfigurations'],
        resourceNames: ['kubemod-validating-webhook-configuration'],
        verbs: ['get', 'list', 'watch', 'update', 'patch'],
      },
    ]);
  });

  it('manages admission policies and bindings (native policies), and nothing more of admissionregistration', () => {
    const policyRules = rules.filter(
      ({ rule }) =>
        (rule.apiGroups as string[]).includes('admissionregistration.k8s.io') &&
        (rule.resources as string[]).some((r) => r.includes('admissionpolic')),
    );
    expect(policyRules.map(({ rule }) => rule)).toEqual([
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: [
          'mutatingadmissionpolicies',
          'mutatingadmissionpolicybindings',
          'validatingadmissionpolicies',
          'validatingadmissionpolicybindings',
        ],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'],
      },
    ]);
  });

  it('touches secrets only in kubemod-system, and only the serving certificate beyond create', () => {
    const secretRules = rules.filter(({ rule }) => (rule.resources as string[]).includes('secrets'));
    expect(secretRules.length).toBeGreaterThan(0);
    for (const { role, rule } of secretRules) {
      expect(role.kind).toBe('Role');
      expect(at(role, 'metadata.namespace')).toBe(NS);
      expect(rule.resources).toEqual(['secrets']);
      const verbs = rule.verbs as string[];
      if (verbs.includes('create')) expect(verbs).toEqual(['create']);
      else expect(rule.resourceNames).toEqual(['kubemod-webhook-server-cert']);
      expect(verbs.filter((v) => ['list', 'watch', 'delete', 'deletecollection'].includes(v))).toEqual([]);
    }
  });

  it('binds both roles to the kubemod-operator service account', () => {
    expect(find('ServiceAccount', 'kubemod-operator')).toBeDefined();
    const subject = [{ kind: 'ServiceAccount', name: 'kubemod-operator', namespace: NS }];
    expect(find('ClusterRoleBinding', 'kubemod-operator')).toMatchObject({
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kubemod-operator' },
      subjects: subject,
    });
    expect(find('RoleBinding', 'kubemod-operator')).toMatchObject({
      metadata: { namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'kubemod-operator' },
      subjects: subject,
    });
  });
});

describe('config/cert-manager overlay', () => {
  withKubectl(
    'builds, injects the CA into both webhook configurations and runs with external certificates',
    () => {
      const r = kubectl(['kustomize', 'config/cert-manager']);
      expect(r.stderr).toBe('');
      const out = parseAllDocuments(r.stdout).map((d) => d.toJS() as JsonObject);
      const annotation = 'cert-manager.io/inject-ca-from';
      for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
        const cfg = out.find((d) => d.kind === kind) as JsonObject;
        expect(at(cfg, `metadata.annotations`)).toEqual({
          [annotation]: `${NS}/kubemod-webhook-server-cert`,
        });
      }
      const cert = out.find((d) => d.kind === 'Certificate') as JsonObject;
      expect(at(cert, 'spec.secretName')).toBe('kubemod-webhook-server-cert');
      expect(at(cert, 'spec.dnsNames')).toContain('kubemod-webhook-service.kubemod-system.svc');
      const c = at(
        out.find((d) => d.kind === 'Deployment'),
        'spec.template.spec.containers.0',
      ) as JsonObject;
      expect(c.args).toEqual(['operator', '--cert-mode=external']);
      expect(c.volumeMounts).toContainEqual({
        name: 'serving-cert',
        mountPath: '/tmp/k8s-webhook-server/serving-certs',
        readOnly: true,
      });
    },
  );
});
