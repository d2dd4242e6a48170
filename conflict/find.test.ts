import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { isJsonObject, JsonObject } from '../util/json';
import { analyzeModRule, CompiledRule } from '../rule/compile';
import { RuleStore } from '../store/rules';
import { conflictSteps, findConflicts } from './find';
import { generatedRules } from '../fixtures/team-rules';

const ROOT = join(__dirname, '..');

/** Every valid ModRule under a folder (rules without a namespace keep none, as `modrule validate` reads them). */
function rulesUnder(dir: string): CompiledRule[] {
  const files = execFileSync('find', [join(ROOT, dir), '-name', '*.yaml'], { encoding: 'utf8' })
    .trim()
    .split('\n');
  const out: CompiledRule[] = [];
  for (const file of files.sort())
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const o = doc.toJS() as JsonObject;
      if (!isJsonObject(o) || o.kind !== 'ModRule') continue;
      const rule = analyzeModRule(o).rule;
      if (rule) out.push(rule);
    }
  return out;
}

const modRule = (namespace: string, name: string, spec: JsonObject): CompiledRule =>
  analyzeModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name, namespace },
    spec,
  }).rule!;
const label = (namespace: string, name: string, value: string, extra: JsonObject = {}) =>
  modRule(namespace, name, {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: 'Deployment' }],
    patch: [{ op: 'add', path: '/metadata/labels/team', value }],
    ...extra,
  });

describe('findConflicts', () => {
  it('fixtures/conflicts: each kind of conflict once, with both rules and the path', () => {
    const { conflicts } = findConflicts(rulesUnder('fixtures/conflicts'));
    expect(conflicts.map((c) => [c.kind, c.rule.key, c.other?.key, c.path, c.on])).toEqual([
      ['value', 'shop/team-db', 'shop/team-web', '/metadata/labels/team', 'Deployment'],
      ['shape', 'shop/env-list', 'shop/env-map', '/spec/template/spec/containers/*/env', 'Deployment'],
      ['idempotence', 'shop/unguarded-sidecar', undefined, '/spec/template/spec/containers/2', 'Deployment'],
      ['reject-after-patch', 'shop/pin-latest', 'shop/no-latest', '/spec/containers/*/image', 'Pod'],
    ]);
    const [value, shape, idempotence, reject] = conflicts.map((c) => c.message);
    expect(value).toBe(
      'ModRules shop/team-db and shop/team-web (tier 0) both write /metadata/labels/team on Deployment: ' +
        'shop/team-db sets "db", shop/team-web sets "web"; both run, in name order, so shop/team-web wins. ' +
        'Give one a higher executionTier to say which should',
    );
    expect(shape).toContain('shop/env-list writes it as a list, shop/env-map as an object');
    expect(idempotence).toMatch(/^ModRule shop\/unguarded-sidecar is not idempotent/);
    expect(reject).toMatch(
      /^ModRule shop\/no-latest rejects what ModRule shop\/pin-latest \(tier -5\) produces/,
    );
  });

  it('no false report: near misses of each kind, the examples (KubeMod README rules included)', () => {
    expect(findConflicts(rulesUnder('fixtures/conflicts-none')).conflicts.map((c) => c.message)).toEqual([]);
    const examples = rulesUnder('examples');
    expect(examples.length).toBeGreaterThanOrEqual(33);
    expect(findConflicts(examples).conflicts.map((c) => c.message)).toEqual([]);
  });

  it('rules that cannot meet do not conflict: namespaces, cluster rules by their targets, operations', () => {
    const cluster = (regex: string) =>
      label('kubemod-system', `c-${regex}`, 'platform', { targetNamespaceRegex: regex });
    const names = (rules: CompiledRule[]) =>
      findConflicts(rules).conflicts.map((c) => `${c.rule.key} ${c.other?.key ?? ''}`);
    expect(names([label('a', 'x', 'one'), label('b', 'y', 'two')])).toEqual([]);
    expect(names([label('a', 'x', 'one'), cluster('^b$')])).toEqual([]);
    expect(names([label('a', 'x', 'one'), cluster('^a$')])).toEqual(['a/x kubemod-system/c-^a$']);
    expect(
      names([label('a', 'x', 'one', { admissionOperations: ['DELETE'] }), label('a', 'y', 'two')]),
    ).toEqual([]);
    // One label required absent by one, present by the other.
    expect(
      names([
        label('a', 'x', 'one', { match: [{ select: '$.metadata.labels.tier', negate: true }] }),
        label('a', 'y', 'two', { match: [{ select: '$.metadata.labels.tier', matchValue: 'web' }] }),
      ]),
    ).toEqual([]);
  });

  it('a templated value that reads what it writes is run twice and reported; one reading elsewhere is not', () => {
    const grow = (name: string, value: string) =>
      modRule('a', name, {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
        patch: [{ op: 'add', path: '/metadata/labels/v', value }],
      });
    const { conflicts, stats } = findConflicts([grow('grows', '{{ .Target.metadata.labels.v }}x')]);
    expect(conflicts.map((c) => [c.kind, c.rule.key, c.path])).toEqual([
      ['idempotence', 'a/grows', '/metadata/labels/v'],
    ]);
    expect(stats.runs).toBeGreaterThan(0);
    const steady = findConflicts([grow('steady', '{{ .Target.metadata.name }}-x')]);
    expect(steady.conflicts).toEqual([]);
    expect(steady.stats.runs).toBe(0);
  });

  it('names the mode of a rule not enforced yet: the conflict bites once it is', () => {
    const { conflicts } = findConflicts([
      label('a', 'x', 'one'),
      label('a', 'y', 'two', { enforcementAction: 'DryRun' }),
    ]);
    expect(conflicts.map((c) => c.message)).toEqual([
      expect.stringMatching(/^ModRules a\/x and a\/y \(DryRun\) \(tier 0\)/),
    ]);
  });

  it('yields in small steps, with the same answer', () => {
    const rules = rulesUnder('fixtures/conflicts');
    const steps = conflictSteps(rules);
    let yields = 0;
    let next = steps.next();
    while (!next.done) {
      yields++;
      next = steps.next();
    }
    expect(yields).toBeGreaterThan(5);
    expect(next.value.conflicts.map((c) => c.message)).toEqual(
      findConflicts(rules).conflicts.map((c) => c.message),
    );
  });

  it('10,000 rules: compared through the indexes (far fewer pairs than all), in bounded time', () => {
    const store = new RuleStore();
    expect(store.replaceRules(generatedRules(10_000))).toEqual([]);
    const rules = store.allRules();
    const { stats } = findConflicts(rules);
    expect(stats.rules).toBe(10_000);
    // Every pair would be 50 million.
    expect(stats.pairs).toBeLessThan(50_000);
    expect(stats.skipped).toBe(0);
    // Measured: docs/conflicts.md; bounded loosely here (a shared CI machine).
    expect(stats.ms).toBeLessThan(20_000);
  });
});
