import { ResourceCatalog } from './catalog';
import { and, renderCel } from './condition';
import { computeScope, DEFAULT_LIMITS, NAME_LABEL, SELECTOR_MARK } from './compute';
import { defaultConfigured } from './defaults';
import { scopeHash } from './entry';
import { kindRule, request, rule, scopeOf, sends, WIDGET_CRD, WILDCARD_NET } from './testing';
import { Scope } from './types';

describe('computeScope', () => {
  test('Deployment-only rules: only Deployments of their namespace, ConfigMaps never', () => {
    const result = scopeOf([kindRule('team-a', 'label-deployments', 'Deployment')]);
    expect(result.registration.rules).toEqual([
      {
        apiGroups: ['apps'],
        apiVersions: ['*'],
        resources: ['deployments'],
        operations: ['CREATE', 'UPDATE'],
        scope: 'Namespaced',
      },
    ]);
    // One namespace: the selector names it (kept after the bundle's exclusions), no condition needed.
    expect(result.registration.namespaceSelector.matchExpressions).toEqual([
      ...defaultConfigured().namespaceSelector.matchExpressions!,
      { key: NAME_LABEL, operator: 'In', values: ['team-a', SELECTOR_MARK] },
    ]);
    expect(result.registration.matchConditions).toEqual([]);
    expect(sends(result, request('CREATE', 'Deployment', 'team-a'))).toBe(true);
    expect(sends(result, request('UPDATE', 'Deployment', 'team-a'))).toBe(true);
    expect(sends(result, request('DELETE', 'Deployment', 'team-a'))).toBe(false);
    expect(sends(result, request('CREATE', 'Deployment', 'team-b'))).toBe(false);
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-a'))).toBe(false);
  });

  test('rules that read other objects need the same net as without: references do not widen or narrow it', () => {
    const base = {
      type: 'Patch',
      targetNamespaceRegex: '^team-',
      match: [{ select: '$.kind', matchValue: 'Pod' }],
      patch: [{ op: 'add', path: '/metadata/labels/team', value: 'x' }],
    };
    const reading = {
      ...base,
      references: [
        { name: 'cfg', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'platform', objectName: 'cfg' },
      ],
      match: [...base.match, { select: '$.syntheticRefs.owner.syntheticRefs.owner.metadata.labels.team' }],
      patch: [{ ...base.patch[0], value: '{{ .Target.syntheticRefs.cfg.data.team }}' }],
    };
    const plain = scopeOf([rule('kubemod-system', 'r', base)]);
    const withRefs = scopeOf([rule('kubemod-system', 'r', reading)]);
    expect(rule('kubemod-system', 'r', reading).references?.owner.levels).toBe(2);
    expect(withRefs.registration).toEqual(plain.registration);
  });

  test('no rules: the webhook is registered for nothing', () => {
    const result = scopeOf([]);
    expect(result.registration.rules).toEqual([]);
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-a'))).toBe(false);
  });

  test('rules of two namespaces: each namespace gets only its own resources (conditions couple them)', () => {
    const result = scopeOf([
      kindRule('team-a', 'deployments', 'Deployment'),
      kindRule('team-b', 'configmaps', 'ConfigMap'),
    ]);
    expect(result.registration.rules.flatMap((r) => r.resources).sort()).toEqual([
      'configmaps',
      'deployments',
    ]);
    expect(result.registration.matchConditions.length).toBeGreaterThan(0);
    expect(sends(result, request('CREATE', 'Deployment', 'team-a'))).toBe(true);
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-b'))).toBe(true);
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-a'))).toBe(false);
    expect(sends(result, request('CREATE', 'Deployment', 'team-b'))).toBe(false);
    expect(sends(result, request('CREATE', 'Deployment', 'team-c'))).toBe(false);
  });

  test('a rule with no kind criterion keeps the whole configured net, in its namespace', () => {
    const result = scopeOf([
      rule('team-a', 'by-label', {
        type: 'Patch',
        match: [{ select: '$.metadata.labels.app', matchValue: 'web' }],
        patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
      }),
    ]);
    for (const kind of ['ConfigMap', 'Secret', 'Deployment', 'Pod'])
      expect(sends(result, request('CREATE', kind, 'team-a'))).toBe(true);
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-b'))).toBe(false);
    // Cluster-scoped objects: a namespace's own rule never applies to them.
    expect(sends(result, request('CREATE', 'Node', ''))).toBe(false);
    // Outside the configured net (KubeMod's list has no events), as before.
    expect(sends(result, request('CREATE', 'Event', 'team-a'))).toBe(false);
    expect(result.rules[0].notes).toContain('no $.kind criterion: every resource');
  });

  test('DELETE is registered only where a Reject rule asks for it', () => {
    const patchOnDelete = kindRule('team-a', 'patch', 'Deployment', {
      admissionOperations: ['DELETE', 'CREATE'],
    });
    expect(sends(scopeOf([patchOnDelete]), request('DELETE', 'Deployment', 'team-a'))).toBe(false);
    const protect = rule('team-a', 'protect', {
      type: 'Reject',
      admissionOperations: ['DELETE'],
      match: [{ select: '$.kind', matchValue: 'Deployment' }],
    });
    const result = scopeOf([patchOnDelete, protect]);
    expect(sends(result, request('DELETE', 'Deployment', 'team-a'))).toBe(true);
    expect(sends(result, request('CREATE', 'Deployment', 'team-a'))).toBe(true);
    expect(sends(result, request('UPDATE', 'Deployment', 'team-a'))).toBe(false);
  });

  test('cluster-wide rules: regex namespaces by CEL, cluster-scoped objects when the regex takes ""', () => {
    const teams = kindRule('kubemod-system', 'teams', 'ConfigMap', { targetNamespaceRegex: '^team-' });
    let result = scopeOf([teams]);
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-x'))).toBe(true);
    expect(sends(result, request('CREATE', 'ConfigMap', 'prod'))).toBe(false);
    expect(result.registration.matchConditions.map((c) => c.expression).join()).toContain(
      'request.namespace.matches("^team-")',
    );
    const namespaces = kindRule('kubemod-system', 'namespaces', 'Namespace');
    result = scopeOf([teams, namespaces]);
    expect(sends(result, request('CREATE', 'Namespace', 'anything'))).toBe(true);
    expect(sends(result, request('UPDATE', 'Namespace', 'anything'))).toBe(true);
    expect(sends(result, request('CREATE', 'ConfigMap', 'prod'))).toBe(false);
    const everything = kindRule('kubemod-system', 'all', 'ConfigMap', { targetNamespaceRegex: '.*' });
    result = scopeOf([everything]);
    expect(sends(result, request('CREATE', 'ConfigMap', 'prod'))).toBe(true);
  });

  test('targetNamespaceSelector cannot be checked by the API server: every namespace, noted', () => {
    const result = scopeOf([
      kindRule('kubemod-system', 'pci', 'Secret', {
        targetNamespaceSelector: { matchLabels: { pci: 'true' } },
      }),
    ]);
    expect(sends(result, request('CREATE', 'Secret', 'anything'))).toBe(true);
    expect(sends(result, request('CREATE', 'ConfigMap', 'anything'))).toBe(false);
    expect(result.rules[0].notes.join()).toContain('targetNamespaceSelector');
  });

  test('$.metadata.namespace and $.apiVersion criteria narrow further', () => {
    const result = scopeOf([
      rule('kubemod-system', 'one-ns', {
        type: 'Patch',
        targetNamespaceRegex: '.*',
        match: [
          { select: '$.metadata.namespace', matchValues: ['shop', 'kubemod-system'] },
          { select: '$.apiVersion', matchValue: 'apps/v1' },
        ],
        patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
      }),
    ]);
    expect(sends(result, request('CREATE', 'Deployment', 'shop'))).toBe(true);
    expect(sends(result, request('CREATE', 'ConfigMap', 'shop'))).toBe(false);
    expect(sends(result, request('CREATE', 'Deployment', 'other'))).toBe(false);
    expect(sends(result, request('CREATE', 'Namespace', 'shop'))).toBe(false);
  });

  test('a kind the API server does not serve fails wide for that rule, and says so', () => {
    const result = scopeOf([kindRule('team-a', 'gadgets', 'Gadget'), kindRule('team-b', 'd', 'Deployment')]);
    for (const kind of ['ConfigMap', 'Deployment', 'Secret'])
      expect(sends(result, request('CREATE', kind, 'team-a'))).toBe(true);
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-b'))).toBe(false);
    expect(result.rules.find((r) => r.rule === 'team-a/gadgets')!.notes.join()).toContain(
      'kind Gadget is not served',
    );
    // Without discovery every kind-pinned rule fails wide.
    const blind = scopeOf([kindRule('team-b', 'd', 'Deployment')], { catalog: null });
    expect(sends(blind, request('CREATE', 'ConfigMap', 'team-b'))).toBe(true);
  });

  test('a WILDCARD_NET net leaves high-churn resources out unless a rule names them', () => {
    const byLabel = rule('team-a', 'by-label', {
      type: 'Patch',
      match: [{ select: '$.metadata.labels.app', matchValue: 'web' }],
      patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
    });
    let result = scopeOf([byLabel], { configured: WILDCARD_NET });
    expect(sends(result, request('CREATE', 'Widget', 'team-a'))).toBe(true);
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-a'))).toBe(true);
    expect(sends(result, request('CREATE', 'Event', 'team-a'))).toBe(false);
    expect(sends(result, request('UPDATE', 'Lease', 'team-a'))).toBe(false);
    result = scopeOf([byLabel, kindRule('team-b', 'events', 'Event')], { configured: WILDCARD_NET });
    expect(sends(result, request('CREATE', 'Event', 'team-b'))).toBe(true);
    expect(sends(result, request('CREATE', 'Event', 'team-a'))).toBe(false);
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-b'))).toBe(false);
  });

  test('is deterministic: the same rules in any order give the same registration', () => {
    const rules = [
      kindRule('team-a', 'd', 'Deployment'),
      kindRule('team-b', 'c', 'ConfigMap'),
      kindRule('kubemod-system', 'w', ['Pod', 'Secret'], { targetNamespaceRegex: '^app-' }),
    ];
    const a = scopeOf(rules);
    const b = scopeOf([...rules].reverse());
    expect(scopeHash(b.registration)).toBe(scopeHash(a.registration));
  });

  test('10,000 rules in 1,000 namespaces: names in the selector, one condition per distinct resource set', () => {
    const rules = [];
    for (let n = 0; n < 1000; n++)
      for (let i = 0; i < 10; i++)
        rules.push(kindRule(`team-${n}`, `r${i}`, n % 2 === 0 ? 'Deployment' : ['Deployment', 'ConfigMap']));
    const started = Date.now();
    const result = scopeOf(rules);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(result.stats.selectorNames).toBe(1000);
    expect(result.coarsened).toEqual([]);
    // Deployments are needed in every named namespace (the selector says it); ConfigMaps in half of them.
    expect(result.registration.matchConditions).toHaveLength(1);
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-1'))).toBe(true);
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-2'))).toBe(false);
    expect(sends(result, request('CREATE', 'Deployment', 'team-2'))).toBe(true);
    expect(sends(result, request('CREATE', 'Deployment', 'team-1000'))).toBe(false);
  });

  test('10,000 namespaces with cluster-wide rules too: conditions are sharded by name ranges within the limits', () => {
    const rules = [kindRule('kubemod-system', 'nodes', 'Node')];
    for (let n = 0; n < 10_000; n++)
      rules.push(
        kindRule(`tenant-${String(n).padStart(5, '0')}`, 'r', n % 3 === 0 ? 'ConfigMap' : 'Deployment'),
      );
    const result = scopeOf(rules);
    // A cluster-scoped need: names cannot go into the namespaceSelector (Namespaces are matched on their labels).
    expect(result.stats.selectorNames).toBe(0);
    expect(result.coarsened).toEqual([]);
    expect(result.registration.matchConditions.length).toBeGreaterThan(1);
    for (const c of result.registration.matchConditions)
      expect(c.expression.length).toBeLessThanOrEqual(DEFAULT_LIMITS.maxExpression);
    expect(sends(result, request('CREATE', 'ConfigMap', 'tenant-09999'))).toBe(true);
    expect(sends(result, request('CREATE', 'Deployment', 'tenant-09999'))).toBe(false);
    expect(sends(result, request('CREATE', 'Deployment', 'tenant-09998'))).toBe(true);
    expect(sends(result, request('CREATE', 'Deployment', 'tenant-10000'))).toBe(false);
    expect(sends(result, request('UPDATE', 'Node', ''))).toBe(true);
  });

  test('when the conditions do not fit, namespaces are dropped biggest first: wider, never narrower', () => {
    const rules = [
      kindRule('kubemod-system', 'nodes', 'Node'),
      ...Array.from({ length: 300 }, (_, n) => kindRule(`ns-${n}`, 'r', n % 2 ? 'ConfigMap' : 'Deployment')),
    ];
    const tight = { ...DEFAULT_LIMITS, maxConditions: 1, maxExpression: 2000 };
    const result = scopeOf(rules, { limits: tight });
    expect(result.coarsened.length).toBeGreaterThan(0);
    expect(result.registration.matchConditions.length).toBeLessThanOrEqual(1);
    for (let n = 0; n < 300; n++)
      expect(sends(result, request('CREATE', n % 2 ? 'ConfigMap' : 'Deployment', `ns-${n}`))).toBe(true);
    // Still no resource no rule names.
    expect(sends(result, request('CREATE', 'Secret', 'ns-1'))).toBe(false);
  });

  test('too many regexes: those namespaces become "every namespace"', () => {
    const rules = Array.from({ length: 5 }, (_, i) =>
      kindRule('kubemod-system', `r${i}`, 'ConfigMap', { targetNamespaceRegex: `^team-${i}-` }),
    );
    const result = scopeOf(rules, { limits: { ...DEFAULT_LIMITS, maxRegexes: 2 } });
    expect(result.stats.regexes).toBeLessThanOrEqual(2);
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-4-x'))).toBe(true);
  });

  test('precision steps: no-regex and resources only are wider, never narrower', () => {
    const rules = [
      kindRule('kubemod-system', 'teams', 'ConfigMap', { targetNamespaceRegex: '^team-' }),
      kindRule('shop', 'd', 'Deployment'),
    ];
    const noRegex = scopeOf(rules, { precision: 'no-regex' });
    expect(noRegex.stats.regexes).toBe(0);
    expect(sends(noRegex, request('CREATE', 'ConfigMap', 'prod'))).toBe(true);
    expect(sends(noRegex, request('CREATE', 'Deployment', 'prod'))).toBe(false);
    const resources = scopeOf(rules, { precision: 'resources' });
    expect(resources.registration.matchConditions).toEqual([]);
    expect(resources.registration.namespaceSelector).toEqual(defaultConfigured().namespaceSelector);
    expect(sends(resources, request('CREATE', 'Deployment', 'prod'))).toBe(true);
    expect(sends(resources, request('CREATE', 'Secret', 'prod'))).toBe(false);
  });

  test('keeps the configured exclusions and conditions, and never reaches outside the configured net', () => {
    const configured: Scope = {
      rules: [
        {
          apiGroups: ['apps'],
          apiVersions: ['v1'],
          resources: ['deployments'],
          operations: ['CREATE'],
          scope: '*',
        },
      ],
      namespaceSelector: { matchLabels: { e2e: 'true' } },
      matchConditions: [{ name: 'not-dry-run', expression: '!request.dryRun' }],
    };
    const result = computeScope({
      rules: [kindRule('kubemod-system', 'all', ['Deployment', 'ConfigMap'], { targetNamespaceRegex: '.' })],
      clusterNamespace: 'kubemod-system',
      configured,
      catalog: ResourceCatalog.builtin([WIDGET_CRD]),
    });
    expect(result.registration.rules).toEqual([
      {
        apiGroups: ['apps'],
        apiVersions: ['v1'],
        resources: ['deployments'],
        operations: ['CREATE'],
        scope: 'Namespaced',
      },
    ]);
    expect(result.registration.namespaceSelector).toEqual({ matchLabels: { e2e: 'true' } });
    expect(result.registration.matchConditions[0]).toEqual(configured.matchConditions[0]);
    expect(sends(result, request('CREATE', 'Deployment', 'prod', { e2e: 'true' }))).toBe(true);
    expect(sends(result, request('CREATE', 'Deployment', 'prod'))).toBe(false);
    // The served kind the net leaves out is named on the rule's report (its status says so: OutsideNet).
    expect(result.rules[0].outside).toEqual(['ConfigMap']);
    expect(result.rules[0].notes).toContain('kind ConfigMap outside the configured net');
    const configMapsOnly = computeScope({
      rules: [
        kindRule('team', 'cm', 'ConfigMap'),
        kindRule('team', 'widget', 'Widget'),
        kindRule('team', 'd', 'Deployment'),
      ],
      clusterNamespace: 'kubemod-system',
      configured,
      catalog: ResourceCatalog.builtin([WIDGET_CRD]),
    });
    expect(new Map(configMapsOnly.rules.map((r) => [r.rule, r.outside]))).toEqual(
      new Map([
        ['team/cm', ['ConfigMap']],
        ['team/widget', ['Widget']],
        ['team/d', []],
      ]),
    );
    expect(configMapsOnly.rules.find((r) => r.rule === 'team/cm')!.notes).toContain(
      'outside the configured net: the API server never sends its objects',
    );
  });

  test('renders conditions the API server accepts: only request fields, JSON-quoted strings', () => {
    const result = scopeOf([
      kindRule('kubemod-system', 'q', 'ConfigMap', { targetNamespaceRegex: `^a"b\\d'` }),
      kindRule('shop', 'd', 'Deployment'),
    ]);
    const text = result.registration.matchConditions.map((c) => c.expression).join('\n');
    expect(text).toContain(String.raw`request.namespace.matches("^a\"b\\d'")`);
    expect(text).not.toMatch(/\bobject\b|oldObject/);
    // One expression here: the clauses ANDed, exactly as evaluated by sendsRequest.
    expect(result.registration.matchConditions).toHaveLength(1);
    expect(renderCel(and(...result.clauses))).toBe(text);
  });
});
