import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { JsonObject } from '../util/json';
import { storeFromYaml } from '../engine/testing';
import { CORE_RESOURCES } from '../operator/testing/fake-cluster';
import { scopeHash, scopeJson, readScope } from '../scope/entry';
import { stampAnnotations } from '../scope/ownership';
import { installedNetOf, UNRESTRICTED } from './dragnet';
import { planScan } from './plan';
import { auditableResources, kindsNamed, ruleReaches } from './reach';
import { resourceName } from './types';

const rule = (name: string, namespace: string, spec: string) =>
  `apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata: {name: ${name}, namespace: ${namespace}}\nspec:\n${spec}`;
const patch = `  patch: [{op: add, path: /metadata/labels/x, value: y}]`;
const ns = (name: string, labels: Record<string, string> = {}): JsonObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels: { 'kubernetes.io/metadata.name': name, ...labels } },
});

/** The bundle's own MutatingWebhookConfiguration (config/webhook). */
const BUNDLE_WEBHOOKS = parse(
  readFileSync(join(__dirname, '..', 'config', 'webhook', 'mutating_webhook_configuration.yaml'), 'utf8'),
) as JsonObject;

describe('which resources the rules reach', () => {
  const store = storeFromYaml([
    rule('deploys', 'shop', `  type: Patch\n  match: [{select: '$.kind', matchValue: Deployment}]\n${patch}`),
    rule(
      'two',
      'shop',
      `  type: Patch\n  match: [{select: '$.kind', matchValues: [ConfigMap, Widget]}]\n${patch}`,
    ),
    rule('regex', 'shop', `  type: Patch\n  match: [{select: '$.kind', matchRegex: '^Pod$'}]\n${patch}`),
    rule(
      'not-cm',
      'shop',
      `  type: Patch\n  match: [{select: '$.kind', matchValue: ConfigMap, negate: true}]\n${patch}`,
    ),
    rule(
      'apps',
      'shop',
      `  type: Patch\n  match: [{select: '$.apiVersion', matchRegex: '^apps/'}]\n${patch}`,
    ),
    rule('any', 'shop', `  type: Patch\n  match: [{select: '$.metadata.labels.app'}]\n${patch}`),
    rule('bool', 'shop', `  type: Patch\n  match: [{select: '$.kind == "Deployment"'}]\n${patch}`),
  ]);
  const rules = new Map(store.allRules().map((r) => [r.name, r]));
  const reaches = (name: string, kind: string, apiVersion = 'v1') =>
    ruleReaches(rules.get(name)!, kind, apiVersion);

  it('follows what the criteria pin $.kind and $.apiVersion to (values, regexes, comparisons), and nothing else', () => {
    expect(reaches('deploys', 'Deployment', 'apps/v1')).toBe(true);
    expect(reaches('deploys', 'ConfigMap')).toBe(false);
    expect(reaches('two', 'Widget', 'example.com/v1')).toBe(true);
    expect(reaches('two', 'Pod')).toBe(false);
    expect(reaches('regex', 'Pod')).toBe(true);
    expect(reaches('regex', 'PodTemplate')).toBe(false);
    // A negated criterion narrows nothing (rule/pins.ts): over-including is safe, the engine decides per object.
    expect(reaches('not-cm', 'ConfigMap')).toBe(true);
    expect(reaches('bool', 'Deployment', 'apps/v1')).toBe(true);
    expect(reaches('bool', 'ConfigMap')).toBe(false);
    expect(reaches('apps', 'Deployment', 'apps/v1')).toBe(true);
    expect(reaches('apps', 'Deployment', 'extensions/v1beta1')).toBe(false);
    expect(reaches('any', 'Anything', 'x/v1')).toBe(true);
    expect(kindsNamed(rules.get('two')!)).toEqual(['ConfigMap', 'Widget']);
    expect(kindsNamed(rules.get('not-cm')!)).toEqual([]);
  });

  it('lists each collection once: no subresources, nothing unlistable, core events over events.k8s.io', () => {
    const names = auditableResources(CORE_RESOURCES).map(resourceName);
    expect(names).toContain('events');
    expect(names).not.toContain('events.events.k8s.io');
    expect(names).not.toContain('pods/status');
    expect(names).toContain('deployments.apps');
  });
});

describe('planScan', () => {
  const namespaces = [
    ns('shop'),
    ns('bank', { tier: 'pci' }),
    ns('quiet', { 'admission.kubemod.io/ignore': 'true' }),
  ];
  const names = namespaces.map((n) => String((n.metadata as JsonObject).name));
  const deployments = rule(
    'd',
    'shop',
    `  type: Patch\n  match: [{select: '$.kind', matchValue: Deployment}]\n${patch}`,
  );

  it('lists a resource only in the namespaces whose rules reach it', () => {
    const store = storeFromYaml([deployments], { cluster: namespaces });
    const plan = planScan(store.snapshot(), CORE_RESOURCES, names, UNRESTRICTED);
    expect(plan.targets.map((t) => [resourceName(t.resource), t.namespaces, t.clusterWide])).toEqual([
      ['deployments.apps', ['shop'], false],
    ]);
  });

  it('follows cluster-wide rules (regex, namespace selector, cluster-scoped) and never an ignored namespace', () => {
    const store = storeFromYaml(
      [
        rule(
          'by-label',
          'kubemod-system',
          `  type: Patch\n  targetNamespaceSelector: {matchLabels: {tier: pci}}\n  match: [{select: '$.kind', matchValue: ConfigMap}]\n${patch}`,
        ),
        rule(
          'everywhere',
          'kubemod-system',
          `  type: Patch\n  targetNamespaceRegex: '.*'\n  match: [{select: '$.kind', matchValues: [Pod, Namespace]}]\n${patch}`,
        ),
      ],
      { cluster: namespaces },
    );
    const plan = planScan(store.snapshot(), CORE_RESOURCES, names, UNRESTRICTED);
    expect(plan.targets.map((t) => [resourceName(t.resource), t.namespaces])).toEqual([
      ['namespaces', null],
      ['configmaps', ['bank']],
      ['pods', ['shop', 'bank']],
    ]);
    // Many namespaces: one list across all of them, filtered here.
    const many = planScan(store.snapshot(), CORE_RESOURCES, names, UNRESTRICTED, { clusterWideAbove: 1 });
    expect(many.targets.find((t) => t.resource.resource === 'pods')).toMatchObject({ clusterWide: true });
    // --namespace: that namespace only, no cluster-scoped objects.
    const one = planScan(store.snapshot(), CORE_RESOURCES, names, UNRESTRICTED, { namespace: 'bank' });
    expect(one.targets.map((t) => [resourceName(t.resource), t.namespaces])).toEqual([
      ['configmaps', ['bank']],
      ['pods', ['bank']],
    ]);
  });

  it('keeps to the dragnet webhook`s resources and namespaces, and says what it leaves out', () => {
    const store = storeFromYaml(
      [
        deployments,
        rule('widgets', 'shop', `  type: Patch\n  match: [{select: '$.kind', matchValue: Widget}]\n${patch}`),
        rule('events', 'shop', `  type: Patch\n  match: [{select: '$.kind', matchValue: Event}]\n${patch}`),
      ],
      { cluster: [...namespaces, ns('kubemod-system')] },
    );
    const scope = installedNetOf(BUNDLE_WEBHOOKS)!;
    const plan = planScan(store.snapshot(), CORE_RESOURCES, [...names, 'kubemod-system'], scope);
    expect(plan.targets.map((t) => resourceName(t.resource))).toEqual(['deployments.apps']);
    expect(plan.notes).toEqual([
      "events (kind Event) is not among the dragnet webhook's resources: the webhook never sees these objects, so they are not audited",
      'kind Widget (named by ModRule shop/widgets) is not served by this cluster: nothing to audit',
    ]);
  });
});

describe('installedNetOf', () => {
  const scope = installedNetOf(BUNDLE_WEBHOOKS)!;
  const resource = (group: string, r: string, namespaced = true) => ({
    group,
    version: 'v1',
    resource: r,
    kind: 'X',
    namespaced,
    verbs: ['list'],
  });

  it('reads the bundle`s dragnet: its resources in any group, its namespaceSelector', () => {
    expect(scope.covers(resource('apps', 'deployments'))).toBe(true);
    expect(scope.covers(resource('', 'namespaces', false))).toBe(true);
    expect(scope.covers(resource('', 'events'))).toBe(false);
    expect(scope.selectsNamespace({ 'kubernetes.io/metadata.name': 'shop' })).toBe(true);
    expect(scope.selectsNamespace({ 'kubernetes.io/metadata.name': 'kubemod-system' })).toBe(false);
    expect(scope.selectsNamespace({ 'admission.kubemod.io/ignore': 'true' })).toBe(false);
    expect(scope.selectsObject({})).toBe(true);
  });

  it('takes the net as installed when the operator has narrowed the live registration to the rules', () => {
    const config = JSON.parse(JSON.stringify(BUNDLE_WEBHOOKS)) as JsonObject;
    const hook = (config.webhooks as JsonObject[]).find((w) => w.name === 'dragnet.kubemod.io')!;
    const configured = readScope(hook);
    const narrowed = {
      ...configured,
      rules: [
        {
          apiGroups: ['apps'],
          apiVersions: ['*'],
          operations: ['UPDATE'],
          resources: ['deployments'],
          scope: '*' as const,
        },
      ],
    };
    Object.assign(hook, scopeJson(narrowed));
    (config.metadata as JsonObject).annotations = stampAnnotations(
      { hash: scopeHash(narrowed), rulesVersion: '7', writer: '1-a', mode: 'rules' },
      configured,
    );
    const live = installedNetOf(config)!;
    // A rule on ConfigMaps added a moment ago: the registration does not send them yet, the installed net does.
    expect(live.covers(resource('', 'configmaps'))).toBe(true);
    expect(live.covers(resource('', 'events'))).toBe(false);
  });

  it('honours UPDATE, scope, Exact versions and an objectSelector; none without a dragnet webhook', () => {
    const custom = installedNetOf({
      webhooks: [
        {
          name: 'dragnet.kubemod.io',
          matchPolicy: 'Exact',
          objectSelector: { matchLabels: { managed: 'yes' } },
          rules: [
            { apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['replicasets'] },
            {
              apiGroups: ['apps'],
              apiVersions: ['v1'],
              operations: ['*'],
              resources: ['deployments'],
              scope: 'Namespaced',
            },
          ],
        },
      ],
    })!;
    expect(custom.covers(resource('apps', 'deployments'))).toBe(true);
    expect(custom.covers({ ...resource('apps', 'deployments'), version: 'v1beta2' })).toBe(false);
    expect(custom.covers(resource('apps', 'replicasets'))).toBe(false);
    expect(custom.selectsObject({ managed: 'yes' })).toBe(true);
    expect(custom.selectsObject({})).toBe(false);
    expect(installedNetOf({ webhooks: [{ name: 'other' }] })).toBeUndefined();
  });
});
