// KubeMod-compatibility suite, execution tiers: each case mirrors a behaviour pinned down by KubeMod's own tests or
// source (kubemod/kubemod core/modrulestore_test.go "simple tiered execution", "two ModRules in second tier", "three
// tiers" with core/testdata/patch-29..32). The rules and objects here are our own; the comment on each case names what
// it mirrors.
import { JsonObject } from '../../util/json';
import { LAST_APPLIED_ANNOTATION } from '../../rule/types';
import { deployment, labels, lastApplied, patchRule, run, withChanges } from './testing';

describe('KubeMod execution tiers', () => {
  const colored = (color: string): JsonObject =>
    withChanges(deployment, (d) => {
      (d.metadata as JsonObject).labels = { app: 'nginx', color };
      const la = lastApplied(d);
      (la.metadata as JsonObject).labels = { app: 'nginx', color };
      (d.metadata as JsonObject).annotations = { [LAST_APPLIED_ANNOTATION]: JSON.stringify(la) };
    });
  const when = (color: string): string =>
    `match:\n  - select: '$.kind'\n    matchValue: Deployment\n  - select: '$.metadata.labels.color'\n    matchValue: ${color}`;
  const setLabel = (k: string, v: string): string =>
    `  - op: add\n    path: /metadata/labels/${k}\n    value: ${v}`;

  const t29 = patchRule('t29', when('green'), setLabel('color', 'yellow'), 'executionTier: -1\n');
  const t30 = patchRule('t30', when('yellow'), setLabel('taste', 'sour'));
  const t31 = patchRule(
    't31',
    when('yellow'),
    `${setLabel('size', 'large')}\n${setLabel('color', 'purple')}`,
    'executionTier: 1\n',
  );
  const t31b = patchRule('t31b', when('yellow'), setLabel('shape', 'round'), 'executionTier: 1\n');
  const t32 = patchRule('t32', when('purple'), setLabel('done', 'true-ish'), 'executionTier: 2\n');

  test('a lower tier feeds the next one (patch-29 + patch-30)', () => {
    const out = run([t30, t29], colored('green'));
    expect(labels(out.object)).toEqual({ app: 'nginx', color: 'yellow', taste: 'sour' });
  });

  test('rules of one tier all match against the tier input (patch-29..31)', () => {
    const out = run([t29, t30, t31, t31b], colored('green'));
    // t31 turned the color purple, but t31b (same tier) was matched against yellow and still applies.
    expect(labels(out.object)).toEqual({
      app: 'nginx',
      color: 'purple',
      taste: 'sour',
      size: 'large',
      shape: 'round',
    });
    // The last-applied annotation follows every rule (expectation patch-29-30-31-deployment-1.txt).
    expect(labels(lastApplied(out.object))).toEqual(labels(out.object));
  });

  test('a third tier sees the second tier result (patch-29..32)', () => {
    const out = run([t29, t30, t31, t32], colored('green'));
    expect(labels(out.object).done).toBe('true-ish');
  });

  // patch-32: a tier-2 rule removes what tier 1 added, from the object and from last-applied.
  test('a higher tier removes what a lower tier added (patch-29..32)', () => {
    const t32r = patchRule(
      't32r',
      `match:\n  - select: '$.metadata.labels.size'\n    matchValue: large`,
      `  - op: remove\n    path: /metadata/labels/size`,
      'executionTier: 2\n',
    );
    const out = run([t29, t30, t31, t32r], colored('green'));
    expect(labels(out.object)).toEqual({ app: 'nginx', color: 'purple', taste: 'sour' });
    expect(labels(lastApplied(out.object))).toEqual(labels(out.object));
  });

  test('nothing matches without the starting color', () => {
    const out = run([t29, t30, t31, t32], colored('red'));
    expect(out.patch).toEqual([]);
  });
});
